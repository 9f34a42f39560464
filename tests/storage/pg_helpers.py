"""Helpers for the storage backend tests."""

from __future__ import annotations


def raw_execute(target: str, sql: str) -> None:
    """Run SQL on the log's database behind PMM's back (for tamper tests)."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(sql.encode())
        return
    import sqlite3

    conn = sqlite3.connect(target)
    with conn:
        conn.execute(sql)
    conn.close()
