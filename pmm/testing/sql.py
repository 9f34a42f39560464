"""Statements run on a store's tables behind PMM's back, for the tests that tamper.

    run_sql("pmm.db", "UPDATE events SET content = ? WHERE id = ?", ("edited", 1))
    run_sql("postgresql://app@localhost/pmm", "DELETE FROM events WHERE id = 2")

A SQLite path or a PostgreSQL URL; ``?`` placeholders on both. It is the ``sql`` of PMM's
own backends in :class:`pmm.testing.Backend`, and fits a backend that keeps PMM's SQLite
schema (a subclass of :class:`pmm.storage.sqlite.EventStore`).
"""

from __future__ import annotations

import sqlite3
from typing import Any


def run_sql(target: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement behind PMM's back, returning its rows; on PostgreSQL without
    foreign-key checks (``session_replication_role = replica``)."""
    if target.startswith(("postgresql://", "postgres://")):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("SET session_replication_role = replica")
            cur = conn.execute(sql.replace("?", "%s").encode(), params)
            return cur.fetchall() if cur.description else []
    db = sqlite3.connect(target)
    try:
        with db:
            return db.execute(sql, params).fetchall()
    finally:
        db.close()
