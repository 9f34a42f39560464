"""The PostgreSQL backend of the event log (``[postgres]`` extra: psycopg 3 + psycopg-pool).

from pmm.storage.postgres import PostgresEventStore
store = PostgresEventStore("postgresql://app@db.internal/pmm")
"""

from . import vectors
from .store import PostgresEventStore

__all__ = ["PostgresEventStore", "vectors"]
