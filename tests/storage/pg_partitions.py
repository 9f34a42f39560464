"""Helpers of the tests of the tables partitioned by user (migrations/0009)."""

from __future__ import annotations

from pathlib import Path

import psycopg
from pg_cluster import PostgresCluster

from pmm.records import NewEvent
from pmm.storage.postgres import PostgresEventStore

SECRET = "my locker code is QX77TRELLIS and the key hangs behind the zebrawood clock"
TOKENS = ("QX77TRELLIS", "zebrawood")
VECTOR = b"\0\0\x80?\0\0\0\0"


def pg_files(cluster: PostgresCluster, url: str) -> Path:
    """The folder of the database's data files (base/OID)."""
    with psycopg.connect(url) as conn:
        oid = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        return cluster.datadir / "base" / str(oid.fetchone()[0])  # type: ignore[index]


def holding(folder: Path, tokens: tuple[str, ...]) -> set[str]:
    """Which of ``tokens`` some file under ``folder`` holds."""
    found = set()
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found.update(t for t in tokens if t.encode() in data)
    return found


def shard(url: str, user: str | None) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT pmm_shard(%s)", (user,)).fetchone()[0])  # type: ignore[index]


def users_apart(url: str) -> tuple[str, str, str]:
    """(erased user, a user in another partition, a user in the same partition)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT 'user' || i, pmm_shard('user' || i) FROM generate_series(1, 400) AS i"
        ).fetchall()
    first, part = rows[0]
    apart = next(u for u, s in rows if s != part)
    beside = next(u for u, s in rows[1:] if s == part)
    return first, apart, beside


def files(url: str) -> dict[str, int]:
    """relfilenode of every partition of the partitioned tables (changes when rewritten)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relfilenode FROM pg_inherits i JOIN pg_class c"
            " ON c.oid = i.inhrelid WHERE i.inhparent::regclass::text = ANY(%s)",
            (["events", "embeddings", "event_windows"],),
        ).fetchall()
    return {name: int(node) for name, node in rows}


def append(store: PostgresEventStore, user: str | None, text: str, session: str) -> int:
    entry = NewEvent("prompt", text, session, "user", None, None, user)
    return store.append_many([entry])[0].id
