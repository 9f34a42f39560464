"""Opening a SQLite log (WAL, busy timeout, pragmas), its write transaction, sqlite3 error
translation, and :class:`SqliteBase`, what every mixin of
:class:`pmm.storage.sqlite.EventStore` stands on (the connection, its lock, ``_read``,
``_write``).

    conn = open_connection("pmm.db", timeout=30.0)
    with WriteTransaction(conn, "pmm.db") as c:      # BEGIN IMMEDIATE ... COMMIT
        c.execute("UPDATE fts_state SET indexed_upto = 0")
    with translated("pmm.db"):                        # sqlite3.Error -> pmm.errors.DatabaseError
        conn.execute("PRAGMA quick_check")
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pmm.errors import (
    CorruptDatabaseError,
    DatabaseError,
    DiskFullError,
    InvalidInputError,
    NotADatabaseError,
    ReadOnlyDatabaseError,
    StoreRefusedError,
)
from pmm.storage.shared import SharedLog

if TYPE_CHECKING:
    from pmm.storage.sqlite.stored_text import StoredText


class SqliteBase(SharedLog):
    """The state the mixins of :class:`pmm.storage.sqlite.EventStore` share, and its
    read/write helpers (every query goes through ``_read`` or ``_write``); the calls
    written once above the primitives come from :class:`~pmm.storage.shared.SharedLog`."""

    path: str
    window_radius: int
    read_only_reason: str | None
    _conn: sqlite3.Connection
    _lock: threading.RLock
    _text: StoredText
    _opened_after: int
    """The :func:`corruption_mark` when this store opened the file: damage seen later
    refuses its writes (see :meth:`refusal`)."""

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
            except CorruptDatabaseError as exc:  # a stored text that does not decode
                note_corruption(self.path, str(exc))
                raise

    def _write(self) -> WriteTransaction:
        if self.read_only_reason is not None:
            raise ReadOnlyDatabaseError(self.read_only_reason)
        refused = self.refusal()
        if refused is not None:
            raise refused
        return WriteTransaction(self._conn, self.path)

    def refusal(self) -> StoreRefusedError | None:
        """The error every write raises once this process saw the file report damage
        after this store opened it, else None."""
        seen = corruption_seen(self.path, self._opened_after)
        if seen is None:
            return None
        return StoreRefusedError(
            f"{self.path}: writes refused, since reading it reported damage ({seen}); "
            "nothing more is written to a file known to be corrupt. Run `pmm check` on it: "
            "if it reports damage, `pmm recover BROKEN.db NEW.db` salvages every readable "
            "row (or `pmm restore FILE` brings back a backup); then open the file again"
        )


_SEEN: dict[str, tuple[int, str]] = {}
"""Real path -> (mark, message) of the newest damage this process saw in that file."""
_MARKS = itertools.count(1)
_SEEN_LOCK = threading.Lock()


def _key(path: str) -> str | None:
    return None if path == ":memory:" or not path else os.path.realpath(path)


def note_corruption(path: str, message: str) -> None:
    """Record that ``path`` reported damage: every store opened on it before now refuses
    its writes from here on (:meth:`SqliteBase.refusal`)."""
    key = _key(path)
    if key is not None:
        with _SEEN_LOCK:
            _SEEN[key] = (next(_MARKS), message)


def corruption_seen(path: str, since: int) -> str | None:
    """The message of damage seen in ``path`` after mark ``since``, or None."""
    if not _SEEN:  # every write asks: no path lookup while no damage was ever seen
        return None
    key = _key(path)
    found = None if key is None else _SEEN.get(key)
    return found[1] if found is not None and found[0] > since else None


def corruption_mark(path: str, conn: sqlite3.Connection) -> int:
    """The mark a store opening ``path`` on ``conn`` starts from. When this process saw
    the file damaged, the file is checked first (``PRAGMA quick_check``, what ``pmm check``
    runs): a file that passes (repaired, or replaced by ``pmm recover``/``restore``) starts
    afresh; a file still damaged keeps its writes refused."""
    key = _key(path)
    with _SEEN_LOCK:
        found = None if key is None else _SEEN.get(key)
        now = next(_MARKS)
    if found is None:
        return now
    try:
        result = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.Error as exc:
        result = [str(exc)]
    if result == ["ok"]:
        return now
    note_corruption(path, "; ".join(map(str, result[:3])))
    return 0


class WriteTransaction:
    """``with`` block around ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error)."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self._path = path

    def __enter__(self) -> sqlite3.Connection:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate(exc, self._path) from exc
        return self._conn

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        if exc_type is None:
            try:
                self._conn.execute("COMMIT")
                return
            except sqlite3.Error as error:
                self._rollback(error)
                raise translate(error, self._path) from error
        self._rollback(exc)
        if isinstance(exc, sqlite3.Error):
            raise translate(exc, self._path) from exc

    def _rollback(self, cause: BaseException | None) -> None:
        """Roll back what is left of the transaction. SQLite has already rolled it back
        itself after some errors (a full disk, an I/O error): then there is nothing to do,
        and the cause, not "cannot rollback", is what the caller must hear about."""
        if not self._conn.in_transaction:
            return
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as error:
            logging.getLogger(__name__).warning(
                "%s: ROLLBACK after %r failed too (%s); the transaction was not committed",
                self._path,
                cause,
                error,
            )


def default_busy_timeout() -> float:
    """``PMM_BUSY_TIMEOUT_MS`` (from the environment or ``.env``) in seconds."""
    from pmm.settings import Settings

    return Settings.load().busy_timeout_ms / 1000


READ_CACHE_KIB = 65_536
"""Page cache of each connection in KiB (``PRAGMA cache_size``; SQLite's default is 2,000).
Recall at 100,000 events reads a few MiB of FTS5 segments and event rows per query; with
the default cache most of them are re-read from the OS each time (keyword recall p50
13.96 -> 13.01 ms, hybrid 36.1 -> 35.6 in ``bench/recall_ab.py``, 2026-11-26, in git at
``d733cab``). The cache grows only as pages are read: a small file never uses more than
its own size."""


def tune_reads(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the page cache recall needs (:data:`READ_CACHE_KIB`). Memory-mapped
    reads (``mmap_size``) would save about a millisecond more per recall but turn a read
    error of a failing disk into SIGBUS instead of a :class:`DatabaseError`, so they stay
    off."""
    conn.execute(f"PRAGMA cache_size=-{READ_CACHE_KIB}")


SYNCHRONOUS_MODES = ("normal", "full")
"""SQLite ``synchronous`` modes PMM offers (in WAL mode): ``normal`` survives a killed
process, ``full`` a power cut or an OS crash too."""


def open_connection(path: str, timeout: float, synchronous: str = "normal") -> sqlite3.Connection:
    if path != ":memory:":
        target = Path(path)
        folder = target.parent
        if not folder.is_dir():
            raise DatabaseError(
                f"folder {folder} does not exist: create it (mkdir -p {folder}) or use another path"
            )
        if target.is_dir():
            raise DatabaseError(f"{target} is a folder: give the path of a database file")
        if target.exists() and not os.access(target, os.W_OK):
            raise ReadOnlyDatabaseError(
                f"{target} is read-only: make it writable (chmod u+w {target}) or copy it "
                "somewhere writable; PMM needs to append to it"
            )
        if not os.access(folder, os.W_OK):
            raise ReadOnlyDatabaseError(
                f"folder {folder} is not writable: SQLite needs to create its -wal and -shm "
                "files beside the database"
            )
    if synchronous not in SYNCHRONOUS_MODES:
        raise InvalidInputError(
            f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, got {synchronous!r}"
        )
    try:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise translate(exc, path) from exc
    try:
        enable_wal(conn, timeout)
        conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        tune_reads(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise translate(exc, path) from exc
    return conn


def enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """``PRAGMA journal_mode=WAL``, retried: while another process creates the same new file
    or switches it to WAL, SQLite answers "database is locked" at once, without waiting."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@contextlib.contextmanager
def translated(path: str) -> Iterator[None]:
    """Raise sqlite3 errors inside the block as PMM's :class:`DatabaseError` subclasses."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc, path) from exc


def translate(exc: sqlite3.Error, path: str) -> DatabaseError:
    """PMM's error for ``exc``, raised on ``path``. Damage is also recorded
    (:func:`note_corruption`): stores on that file then refuse to write."""
    message = str(exc)
    if "malformed" in message or "not a database" in message:
        note_corruption(path, message)
    if "malformed" in message:
        return CorruptDatabaseError(
            f"{path} is corrupt ({message}): `pmm check` shows the damage, "
            "`pmm recover BROKEN.db NEW.db` salvages every readable row, "
            "`pmm restore FILE` brings back a backup"
        )
    if "not a database" in message:
        return NotADatabaseError(
            f"{path} is not a PMM/SQLite database or is corrupt ({message}): check the path; "
            "`pmm check` shows the damage, `pmm recover BROKEN.db NEW.db` salvages every "
            "readable row, `pmm restore FILE` brings back a backup"
        )
    if "readonly" in message or "read-only" in message:
        return ReadOnlyDatabaseError(
            f"{path} cannot be written ({message}): make the file and its folder writable"
        )
    if "database or disk is full" in message:
        return DiskFullError(
            f"{path}: the disk is full, or the database reached its size limit ({message}): "
            "the last write was not stored, and everything acknowledged before it is safe. "
            "Free some space and retry; `pmm verify` checks the log"
        )
    if "disk I/O error" in message:
        return DatabaseError(
            f"{path}: the file could not be read or written ({message}): the disk may be "
            "full, failing or gone. The last write was not stored; what was acknowledged "
            "before it is safe. Check the disk and retry; `pmm verify` checks the log"
        )
    if "locked" in message or "busy" in message:
        return DatabaseError(
            f"{path} is locked by another writer ({message}): SQLite's write lock was not "
            "released within PMM_BUSY_TIMEOUT_MS (busy_timeout_ms); retry, or raise it"
        )
    return DatabaseError(f"{path}: {message}")
