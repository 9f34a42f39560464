"""Shared helpers for the event-log tests (test_store*.py, test_schema.py, test_hashing.py).

Not a conftest: the test files put this folder on ``sys.path`` and import it by name, so
that processes started with the ``spawn`` context can import the worker functions too.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pmm.storage.sqlite import EventStore
from pmm.testing.sql import run_sql  # noqa: F401  (the tests that tamper import it from here)

REPO_ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = sorted(REPO_ROOT.glob("pmm/storage/sqlite/migrations/[0-9][0-9][0-9][0-9]_*.sql"))
N_MIGRATIONS = len(MIGRATIONS)

# -- raw access (for tampering and inspection) ----------------------------------------


@contextlib.contextmanager
def raw(path: Path | str) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection to the file, committed on success."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        yield conn
        conn.execute("COMMIT")
    finally:
        conn.close()


def raw_rows(path: Path | str, table: str = "events") -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
    finally:
        conn.close()


def snapshot(path: Path | str) -> tuple[int, str | None, int]:
    """(row count, head hash, head id) read straight from the file."""
    conn = sqlite3.connect(path)
    try:
        count = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        head = conn.execute("SELECT hash, id FROM events ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    # The hash is stored as its 32 bytes (migrations/0008): shown as hex, like Event.hash.
    return (count, bytes(head[0]).hex(), head[1]) if head else (count, None, 0)


def filled_store(path: Path | str, n: int = 5) -> EventStore:
    """A store holding ``n`` chat events in two sessions."""
    store = EventStore(path)
    for i in range(1, n + 1):
        store.append(
            "prompt" if i % 2 else "response",
            f"message number {i}",
            session_id="alice" if i % 3 else "bob",
            role="user" if i % 2 else "assistant",
            meta={"i": i},
        )
    return store


# -- the earlier PMM's database -------------------------------------------------------

LEGACY_SCHEMA = (
    "CREATE TABLE events(id INTEGER PRIMARY KEY AUTOINCREMENT, ts TEXT, kind TEXT,"
    " content TEXT, meta TEXT, prev_hash TEXT, hash TEXT)"
)

LEGACY_ENTRIES: list[tuple[str, str, str, str]] = [
    # (ts, kind, content, meta_json) as the earlier PMM wrote them
    ("2024-03-01T09:00:00.000001", "event", "Session started", "{}"),
    ("2024-03-01T09:00:05.120000", "prompt", "User said: I moved to Lisbon", '{"source": "cli"}'),
    ("2024-03-01T09:00:06.500000", "response", "I responded: Lisbon is lovely.", "{}"),
    ("2024-03-01T09:01:00.000000", "prompt", "User said: café ☕ and 日本語", '{"source": "cli"}'),
    ("2024-03-01T09:01:02.000000", "response", "I responded: Noted | with a pipe", "{}"),
    ("2024-03-01T09:02:00.000000", "reflection", "I notice the user travels", '{"n": 2}'),
]


def legacy_row_hash(prev_hash: str | None, kind: str, content: str, meta_json: str) -> str:
    """Written out here on purpose, independently of pmm.events.hashing."""
    text = (prev_hash or "") + "|" + kind + "|" + content + "|" + meta_json
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_legacy_db(path: Path | str) -> list[tuple[object, ...]]:
    """Write a database exactly as the earlier PMM did; returns its rows."""
    conn = sqlite3.connect(path)
    conn.execute(LEGACY_SCHEMA)
    prev: str | None = None
    for ts, kind, content, meta in LEGACY_ENTRIES:
        digest = legacy_row_hash(prev, kind, content, meta)
        conn.execute(
            "INSERT INTO events(ts, kind, content, meta, prev_hash, hash) VALUES (?,?,?,?,?,?)",
            (ts, kind, content, meta, prev, digest),
        )
        prev = digest
    conn.commit()
    rows = conn.execute("SELECT * FROM events ORDER BY id").fetchall()
    conn.close()
    return rows


# -- workers for other processes (must be importable by name) --------------------------


def append_worker(path: str, worker: int, n: int) -> list[int]:
    """Append ``n`` events from a separate process; returns their ids."""
    with EventStore(path) as store:
        return [
            store.append("event", f"w{worker}-{i}", session_id=f"w{worker}", meta={"i": i}).id
            for i in range(n)
        ]


def open_worker(paths: list[str], barrier: Any, results: Any) -> None:
    """Open each new file in turn, in step with the other openers (a barrier per file);
    reports, per file, the migrations it applied or the error it met, on ``results``."""
    outcome: list[list[int] | str] = []
    for path in paths:
        barrier.wait()
        try:
            with EventStore(path) as store:
                outcome.append([m.version for m in store.applied_migrations])
        except Exception as exc:
            outcome.append(f"{type(exc).__name__}: {exc}")
    results.put(outcome)


WRITER_SCRIPT = """
import sys
from pmm.storage.sqlite import EventStore
from pmm.testing.sql import run_sql  # noqa: F401  (the tests that tamper import it from here)
store = EventStore(sys.argv[1])
i = 0
while True:
    i += 1
    ev = store.append("prompt", f"payload {i} " + "x" * (i % 50), session_id="kill")
    sys.stdout.write(f"{ev.id}\\n")
    sys.stdout.flush()
"""


# -- files of an earlier schema ----------------------------------------------------------

USERS_MIGRATION = 13
"""migrations/0013_users.sql: the user column. Today's code writes it, so a test that
writes a file "of an earlier schema" applies it too, then takes it out (without_users)."""
CHAINS_MIGRATION = 15
"""migrations/0015_user_chains.sql: one chain per user (keyed digests, chain secrets).
Today's code writes version-3 rows; without_users takes it out too and re-hashes the
rows as the version-1 chain a file of that time holds."""


def with_users(migrations: list[Any]) -> list[Any]:
    """``migrations`` plus 0013 and 0015 (what today's code writes), in order."""
    from pmm.storage.sqlite import schema

    extra = [
        m for m in schema.load_migrations() if m.version in (USERS_MIGRATION, CHAINS_MIGRATION)
    ]
    return sorted({m.version: m for m in [*migrations, *extra]}.values(), key=lambda m: m.version)


def without_users(path: Path | str) -> dict[int, tuple[str | None, str]]:
    """Take migrations 0013 and 0015 back out of a file written with :func:`with_users`,
    as if it was written before them: the columns, the chains table, the index, and the
    full-text view and triggers as the file's own newest earlier migrations made them;
    the rows re-hashed as one version-1 chain: returns ``{id: (prev_hash, hash)}``."""
    from pmm.events.hashing import chain_hash
    from pmm.storage.sqlite import schema

    with raw(path) as conn:
        conn.execute("DROP TABLE chains")
        conn.execute("ALTER TABLE events DROP COLUMN user_digest")
        conn.execute("ALTER TABLE events DROP COLUMN session_digest")
        prev: str | None = None
        rehashed: dict[int, tuple[str | None, str]] = {}
        rows = conn.execute(
            "SELECT id, ts, kind, session_id, role, content_sha256, meta, hash FROM events"
            " ORDER BY id"
        ).fetchall()
        for id_, ts, kind, session, role, sha, meta, old in rows:
            pack = bytes.fromhex if isinstance(old, bytes) else str  # before 0008: hex text
            digest = chain_hash(
                id=id_, ts=ts, kind=kind, session_id=session, role=role,
                content_sha256=sha.hex() if isinstance(sha, bytes) else sha,
                meta_json=meta, prev_hash=prev,
            )  # fmt: skip
            conn.execute(
                "UPDATE events SET prev_hash = ?, hash = ?, hash_version = 1 WHERE id = ?",
                (None if prev is None else pack(prev), pack(digest), id_),
            )
            rehashed[id_] = (prev, digest)
            prev = digest
        conn.execute("DELETE FROM schema_migrations WHERE version = ?", (CHAINS_MIGRATION,))
        applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        conn.execute("DROP INDEX events_by_user")
        conn.execute("DROP VIEW events_fts_source")
        conn.execute("DROP TRIGGER events_fts_delete")
        conn.execute("DROP TRIGGER events_fts_update")
        conn.execute("ALTER TABLE events DROP COLUMN user_id")
        wanted = (
            "VIEW events_fts_source",
            "TRIGGER events_fts_delete",
            "TRIGGER events_fts_update",
        )
        latest: dict[str, str] = {}
        for migration in schema.load_migrations():
            if migration.version in applied and migration.version < USERS_MIGRATION:
                for statement in schema.split_statements(migration.sql):
                    for name in wanted:
                        if statement.startswith("CREATE " + name):
                            latest[name] = statement
        for statement in latest.values():
            conn.execute(statement)
        conn.execute("DELETE FROM schema_migrations WHERE version = ?", (USERS_MIGRATION,))
        conn.execute(f"PRAGMA user_version = {max(applied - {USERS_MIGRATION})}")
    return rehashed
