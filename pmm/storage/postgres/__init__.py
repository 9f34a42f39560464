"""The PostgreSQL backend of the event log (``[postgres]`` extra: psycopg 3 + psycopg-pool).

from pmm.storage.postgres import PostgresEventStore
store = PostgresEventStore("postgresql://app@db.internal/pmm")
"""

from pmm.storage.postgres import vectors
from pmm.storage.postgres.store import PostgresEventStore

__all__ = ["PostgresEventStore", "vectors"]
