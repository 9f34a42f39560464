"""Opening an archived, read-only SQLite log without writing a byte to it (store layer).

    reason = read_only_reason("archive/pmm.db")   # None when the file can be written
    if reason:
        conn = open_read_only("archive/pmm.db", timeout=30.0)
        refuse_pending_migrations(conn, "archive/pmm.db")

:class:`pmm.storage.sqlite.EventStore` uses these when the file (or its folder) is not writable: the
connection is ``mode=ro`` (``immutable=1``, which creates no ``-wal``/``-shm`` file, when no
``-wal`` holds unmerged pages and the mode bits let nobody write the file or create files in
its folder, or when SQLite cannot create the ``-shm`` file), no migration runs, and the
full-text index is not brought up to date in the file (search builds the missing part in
memory: :meth:`pmm.storage.sqlite.search.SearchIndex.sync_search_index`). ``verify``,
reads, search and export work; an append raises :class:`~pmm.errors.ReadOnlyDatabaseError`
with ``reason``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

from pmm.errors import DatabaseError, NotADatabaseError, ReadOnlyDatabaseError
from pmm.storage.sqlite import schema
from pmm.storage.sqlite.connection import tune_reads


def nobody_writes(path: Path) -> bool:
    """True when the mode bits let nobody write ``path`` (``chmod 0444``, a ``0555``
    folder): a copy meant to be read only, even by root, whom ``os.access`` lets write
    anything."""
    return stat.S_IMODE(path.stat().st_mode) & 0o222 == 0


def read_only_reason(path: str) -> str | None:
    """Why the existing file at ``path`` cannot be written, or None (also for a new file).
    A file or folder whose mode lets nobody write it counts as read-only even for root."""
    target = Path(path)
    if not target.is_file():
        return None
    if not os.access(target, os.W_OK) or nobody_writes(target):
        return (
            f"{target} is read-only: make it writable (chmod u+w {target}) or copy it "
            "somewhere writable; PMM needs to append to it"
        )
    if not os.access(target.parent, os.W_OK) or nobody_writes(target.parent):
        return (
            f"folder {target.parent} is not writable: SQLite needs to create its -wal and "
            "-shm files beside the database"
        )
    return None


def open_read_only(path: str, timeout: float) -> sqlite3.Connection:
    """A read-only connection to ``path`` (see the module docstring)."""
    target = Path(path)
    uri = "file:" + quote(str(target.resolve()))
    wal = Path(path + "-wal")
    attempts = [uri + "?mode=ro"]
    if not wal.exists() and (nobody_writes(target) or nobody_writes(target.parent)):
        # No connection has it open (no -wal) and no process may write it, nor create the
        # -wal a writer needs: ``immutable`` reads it without creating -wal/-shm files,
        # which ``mode=ro`` does in a writable folder. A file someone may write, or one a
        # connection has open, is read with ``mode=ro``: its -shm file is how SQLite keeps
        # a reader consistent beside a writer.
        attempts.insert(0, uri + "?mode=ro&immutable=1")
    elif not wal.exists() or wal.stat().st_size == 0:  # nothing unmerged: safe to read as is
        attempts.append(uri + "?mode=ro&immutable=1")
    problem: sqlite3.Error | None = None
    for attempt in attempts:
        try:
            conn = sqlite3.connect(
                attempt, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
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
    """Raise :class:`ReadOnlyDatabaseError` if the file needs a migration PMM cannot write,
    :class:`~pmm.errors.NewerSchemaError` if a newer PMM wrote it."""
    schema.refuse_newer(conn, path)
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
