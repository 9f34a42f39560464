"""Opening an archived, read-only SQLite log without writing a byte to it (store layer).

    reason = read_only_reason("archive/pmm.db")   # None when the file can be written
    if reason:
        conn = open_read_only("archive/pmm.db", timeout=30.0)
        refuse_pending_migrations(conn, "archive/pmm.db")

:class:`pmm.storage.sqlite.EventStore` uses these when the file (or its folder) is not writable: the
connection is ``mode=ro`` (``immutable=1`` when SQLite cannot even create the ``-shm`` file
and no ``-wal`` holds unmerged pages), no migration runs, and the full-text index is not
brought up to date. ``verify``, reads, search and export work; an append raises
:class:`~pmm.errors.ReadOnlyDatabaseError` with ``reason``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from pmm.errors import DatabaseError, NotADatabaseError, ReadOnlyDatabaseError
from pmm.storage.sqlite import schema
from pmm.storage.sqlite.connection import tune_reads


def read_only_reason(path: str) -> str | None:
    """Why the existing file at ``path`` cannot be written, or None (also for a new file)."""
    target = Path(path)
    if not target.is_file():
        return None
    if not os.access(target, os.W_OK):
        return (
            f"{target} is read-only: make it writable (chmod u+w {target}) or copy it "
            "somewhere writable; PMM needs to append to it"
        )
    if not os.access(target.parent, os.W_OK):
        return (
            f"folder {target.parent} is not writable: SQLite needs to create its -wal and "
            "-shm files beside the database"
        )
    return None


def open_read_only(path: str, timeout: float) -> sqlite3.Connection:
    """A read-only connection to ``path`` (see the module docstring)."""
    uri = "file:" + quote(str(Path(path).resolve()))
    wal = Path(path + "-wal")
    attempts = [uri + "?mode=ro"]
    if not wal.exists() or wal.stat().st_size == 0:
        attempts.append(uri + "?mode=ro&immutable=1")  # nothing unmerged: safe to read as is
    problem: sqlite3.Error | None = None
    for target in attempts:
        try:
            conn = sqlite3.connect(
                target, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            problem = exc
            continue
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            tune_reads(conn)
            return conn
        except sqlite3.Error as exc:
            conn.close()
            problem = exc
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise NotADatabaseError(
                    f"{path} is not a PMM/SQLite database or is corrupt ({exc})"
                ) from exc
    raise DatabaseError(
        f"{path} is read-only and cannot be opened for reading ({problem}): its -wal file "
        "holds changes that need the folder to be writable; copy the database, -wal and "
        "-shm files somewhere writable"
    )


def refuse_pending_migrations(conn: sqlite3.Connection, path: str) -> None:
    """Raise :class:`ReadOnlyDatabaseError` if the file needs a migration PMM cannot write."""
    try:
        applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    except sqlite3.Error:
        applied = set()
    missing = [
        m for m in schema.load_migrations() if m.version not in applied and not m.read_compatible
    ]
    if missing:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in missing)
        raise ReadOnlyDatabaseError(
            f"{path} is read-only and needs schema migration(s) {names} before this version "
            "of PMM can read it: copy it somewhere writable (PMM migrates the copy on open), "
            "or make it writable"
        )


def add_missing_columns(conn: sqlite3.Connection) -> None:
    """Let an archive from before migrations/0013 (no ``user_id`` column) or 0015 (no
    keyed digests) be read as a log whose rows have no user, or none of version 3: a
    temporary view named ``events`` (the connection's own temp schema, nothing is written
    to the file) shadows the table and adds the columns."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(events)")}
    missing = [c for c in ("user_id", "user_digest", "session_digest") if c not in columns]
    if columns and missing:
        extra = "".join(f", NULL AS {c}" for c in missing)
        conn.execute(f"CREATE TEMP VIEW events AS SELECT *{extra} FROM main.events")
