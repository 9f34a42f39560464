"""What the SQLite drivers (erasure, compaction, compression, imports) hold of an open log:
small protocols, each naming only the members its driver uses, so that a driver never
names :class:`pmm.storage.sqlite.EventStore` and runs on anything that has them.

The store has them all and hands itself over (``forget(self, ...)``); a test or a tool can
build one over a bare connection::

    conn = open_connection("pmm.db", 30.0)
    text = StoredText(conn)               # registers pmm_text / pmm_unhex, then migrate
    schema.migrate(conn, Path("pmm.db"))

    class Bare:                           # satisfies LogFile and CodedFile
        path, _conn, _lock, _text = "pmm.db", conn, threading.RLock(), text
        def _write(self): return WriteTransaction(conn, "pmm.db")

    compress_texts(Bare(), CompressAfter(keep_newest=0))   # every text, compressed

The names are the store's own (``_conn``, ``_write``, ...): what a driver is handed is the
store's state, read, never the store's class.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Protocol

from pmm.events.chain import CheckedEvent
from pmm.records import Event, NewEvent
from pmm.storage.base import EventLog
from pmm.storage.sqlite.connection import WriteTransaction
from pmm.storage.sqlite.stored_text import StoredText


class LogFile(Protocol):
    """The open file: its path (for messages), connection, the lock its users share, and
    its write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``; the store's refuses a
    read-only or damaged file)."""

    @property
    def path(self) -> str: ...

    @property
    def _conn(self) -> sqlite3.Connection: ...

    @property
    def _lock(self) -> threading.RLock: ...

    def _write(self) -> WriteTransaction: ...


class CodedFile(LogFile, Protocol):
    """A :class:`LogFile` with the text codec its reads decode with (compression)."""

    @property
    def _text(self) -> StoredText: ...


class ChainedFile(LogFile, Protocol):
    """A :class:`LogFile` that appends chained events inside the caller's write
    transaction (:func:`pmm.storage.sqlite.chains.append_locked`)."""

    @property
    def max_content_bytes(self) -> int: ...

    def _check(self, entry: NewEvent) -> CheckedEvent: ...

    def _append_locked(
        self, conn: sqlite3.Connection, checked: list[CheckedEvent]
    ) -> list[Event]: ...


class CompactableFile(ChainedFile, Protocol):
    """What compaction uses: chained appends, and the full-text indexes rebuilt in the
    caller's transaction once text is gone."""

    def rebuild_search_indexes(self, conn: sqlite3.Connection) -> None: ...


class ErasableFile(ChainedFile, CodedFile, Protocol):
    """What erasure uses: chained appends, the text codec (a dictionary trained on erased
    text is retrained), and the full-text indexes kept exact around the erasure."""

    def erase_search_terms(
        self,
        conn: sqlite3.Connection,
        placed: dict[str | None, list[int]],
        erase_text: Callable[[], object],
    ) -> None: ...


class ImportTarget(EventLog, ChainedFile, Protocol):
    """What a rebased import uses: the chained append for its one write transaction
    (:func:`pmm.storage.sqlite.imports.rebase_user`), then the log's public methods for the
    derived data and the verify report."""
