"""EventStore: the append-only, hash-chained SQLite event log, composed from the mixins of
this package (log, search, derived data, consolidation, meta keys, verification).

Usage::

    from pmm.storage.sqlite import EventStore      # also: from pmm.storage.sqlite import EventStore

    with EventStore("pmm.db") as store:
        ev = store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
        store.get(ev.id).content            # 'I moved to Lisbon'
        store.events(session_id="alice", newest_first=True, limit=10)
        report = store.verify()             # VerifyReport(ok=True, rows=1, head='…', ...)

Appends take SQLite's write lock (``BEGIN IMMEDIATE``) before reading the head, so any
number of threads and processes appending to one file extend one chain and lose nothing.
The file is in WAL mode. With ``synchronous="normal"`` (``PMM_SQLITE_SYNCHRONOUS``, the
default) an acknowledged append survives the process being killed, but a power cut or an
OS crash may lose the last transactions (never breaking the chain); ``synchronous="full"``
syncs the -wal file on every commit, so an acknowledged append survives those too (see
``bench/storage.py --append`` for the cost). :meth:`EventStore.close` and interpreter exit copy the
-wal file into the database file (:meth:`EventStore.checkpoint`).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pmm.errors import IntegrityError, InvalidInputError
from pmm.events.chains import key_heads
from pmm.events.rebase import meta_spelling
from pmm.records import Event, VerifyReport
from pmm.retention.compression import CompressAfter
from pmm.storage.sqlite import schema
from pmm.storage.sqlite.chains import ChainCache
from pmm.storage.sqlite.connection import (
    corruption_mark,
    default_busy_timeout,
    open_connection,
)
from pmm.storage.sqlite.consolidation import ConsolidationData
from pmm.storage.sqlite.meta_keys import MetaKeys, StoreExpiry
from pmm.storage.sqlite.readonly import (
    add_missing_columns,
    open_read_only,
    read_only_reason,
    refuse_pending_migrations,
)
from pmm.storage.sqlite.rows import COLUMNS
from pmm.storage.sqlite.search import SearchIndex
from pmm.storage.sqlite.stored_text import StoredText, pack_digest
from pmm.storage.sqlite.verify import Inspection
from pmm.text.window_keys import DEFAULT_WINDOW_RADIUS

if TYPE_CHECKING:
    from datetime import timedelta

    from pmm.retention.compaction import CompactionReport
    from pmm.retention.erasure import ErasureReport
    from pmm.storage.sqlite.compression import CompressionReport

DEFAULT_MAX_CONTENT_BYTES = 1_048_576
"""Largest content one event may hold (1 MiB); bigger text is refused, not truncated."""
CHECKPOINT_WAIT_MS = 200
"""How long :meth:`EventStore.checkpoint` waits for other connections' locks."""
log = logging.getLogger(__name__)
_LIVE: weakref.WeakSet[EventStore] = weakref.WeakSet()
"""Open stores, checkpointed at interpreter exit (weakly held: never kept alive)."""


@atexit.register
def _checkpoint_live_stores() -> None:
    """At interpreter exit, checkpoint every store still open (a script that never called
    close()), so that its ``.db`` file alone holds everything it wrote."""
    for store in list(_LIVE):
        store.checkpoint()


class EventStore(ConsolidationData, SearchIndex, Inspection, MetaKeys, StoreExpiry):
    """The event log in one SQLite file (see the module docstring for an example).

    ``path`` may be ``":memory:"`` for a throwaway log. ``max_content_bytes`` caps one
    event's content. ``timeout`` is how many seconds an append waits for another writer
    (default: ``PMM_BUSY_TIMEOUT_MS``, 30 s). ``window_radius`` is how many turns before and
    after a turn its window key holds (PMM_RECALL_WINDOW; see :mod:`pmm.text.window_keys`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        timeout: float | None = None,
        window_radius: int = DEFAULT_WINDOW_RADIUS,
        synchronous: str = "normal",
    ) -> None:
        if timeout is None:
            timeout = default_busy_timeout()
        self.path = str(path)
        self.max_content_bytes = max_content_bytes
        if (
            not isinstance(window_radius, int)
            or isinstance(window_radius, bool)
            or not (0 <= window_radius <= 20)
        ):
            raise InvalidInputError(f"window_radius must be an int 0..20, got {window_radius!r}")
        self.window_radius = window_radius
        self._lock = threading.RLock()
        self._timeout = timeout
        self._open = False
        self._doc_freq: dict[str, tuple[int, int]] = {}  # term -> (docs, indexed rows then)
        self._chain_cache = ChainCache()
        self.read_only_reason = None if self.path == ":memory:" else read_only_reason(self.path)
        """Why the file cannot be written (it was opened read-only), or None."""
        if self.read_only_reason is not None:
            self._conn = open_read_only(self.path, timeout)
            self._text = StoredText(self._conn)
            self._opened_after = corruption_mark(self.path, self._conn)
            self.applied_migrations = []
            try:
                refuse_pending_migrations(self._conn, self.path)
                add_missing_columns(self._conn)
            except BaseException:
                self._conn.close()
                raise
            return
        self._conn = open_connection(self.path, timeout, synchronous)
        self._text = StoredText(self._conn)  # before migrating: 0008 calls pmm_unhex
        try:
            self._opened_after = corruption_mark(self.path, self._conn)
            self.applied_migrations = schema.migrate(
                self._conn, None if self.path == ":memory:" else Path(self.path)
            )
        except BaseException:
            self._conn.close()
            raise
        self._open = True
        _LIVE.add(self)

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Checkpoint the -wal file into the database file (:meth:`checkpoint`), then close
        the file. The store cannot be used afterwards; closing twice is harmless."""
        with self._lock:
            if self._open:
                self.checkpoint()
                self._open = False
                _LIVE.discard(self)
            self._conn.close()

    def checkpoint(self) -> bool:
        """Copy what the -wal file holds into the database file and empty it
        (``wal_checkpoint(TRUNCATE)``), so that the ``.db`` file alone holds every
        acknowledged event; returns whether it got all of it.

        Close, interpreter exit and the collection of an unclosed :class:`pmm.Mind` call
        it. It waits at most :data:`CHECKPOINT_WAIT_MS` for other connections: while
        another process reads or writes the file, what it still needs stays in the -wal
        file (SQLite copies it when the last connection closes), and this returns False."""
        if self.path == ":memory:" or self.read_only_reason is not None or not self._open:
            return True
        with self._lock:
            try:
                self._conn.execute(f"PRAGMA busy_timeout={CHECKPOINT_WAIT_MS}")
                try:
                    busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                finally:
                    self._conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")
            except sqlite3.Error as exc:
                log.info("%s: checkpoint not done (%s); the -wal file keeps the rest", self, exc)
                return False
        return not busy

    def _erase(self, *, require_text: bool, **request: Any) -> ErasureReport:
        """:func:`pmm.storage.sqlite.erasure.forget`: erased so that no byte of the text
        stays in the file, in one request and one scrub however many sessions."""
        from pmm.storage.sqlite.erasure import forget

        return forget(self, require_text=require_text, **request)

    def compact(
        self, *, older_than: str | timedelta, session_id: str | None = None, dry_run: bool = False
    ) -> CompactionReport:
        """Drop the raw text of old digested turns (see
        :func:`pmm.storage.sqlite.compaction.compact`)."""
        from pmm.storage.sqlite.compaction import compact

        return compact(self, older_than=older_than, session_id=session_id, dry_run=dry_run)

    def compress(
        self,
        after: str | int | CompressAfter,
        *,
        dry_run: bool = False,
        retrain: bool = False,
        batch: int | None = None,
        seconds: float | None = None,
    ) -> CompressionReport:
        """Keep the text of events older than ``after`` (a count of newest texts kept
        plain, ``"1000"``, or an age, ``"30d"``) compressed, losslessly; reads decode it.
        ``batch`` texts per write transaction; with ``seconds``, no batch starts after
        that long (the rest waits for the next call). See
        :mod:`pmm.storage.sqlite.compression`."""
        from pmm.storage.sqlite.compression import BATCH, compress_texts

        policy = after if isinstance(after, CompressAfter) else CompressAfter.parse(after, "after")
        if policy is None:
            raise InvalidInputError(
                f"after must be a count or an age (e.g. 1000, 30d), got {after!r}"
            )
        return compress_texts(
            self, policy, dry_run=dry_run, retrain=retrain, batch=batch or BATCH, seconds=seconds
        )

    def import_events(
        self, events: Iterable[Event], *, keys: Iterable[tuple[str, bytes]] = ()
    ) -> VerifyReport:
        """Import exported events, in one transaction. Into an empty log they go verbatim
        (same ids, timestamps, hashes and digests) and the verify report of the result is
        returned. Into a log that already holds events, one user's export
        (``pmm export --user U``) is verified on its own, then written with new ids onto a
        new chain of hers (see :mod:`pmm.events.rebase`), and her chain's verify report
        is returned::

            report = store.import_events(events, keys=keys)   # keys: the file's secrets

        ``keys``: the source's chain secrets (:meth:`chain_keys`), which its version-3
        rows need to verify.

        Raises :class:`IntegrityError` when the events do not form a chain that verifies,
        and :class:`InvalidInputError` when a non-empty log cannot take them (not one
        user's events, her events or one of her sessions already there, a reference to
        an event the file lacks); either way nothing is written. Embeddings are not
        imported: recompute them afterwards.
        """
        rows = []
        events = list(events)
        keys = list(keys)
        if self._read("SELECT 1 FROM events LIMIT 1"):
            from pmm.storage.sqlite.imports import import_user

            return import_user(self, events, keys)
        for e in events:
            meta_json = meta_spelling(e)
            keywords = json.dumps(list(e.keywords), ensure_ascii=False) if e.keywords else None
            rows.append(
                (
                    e.id,
                    e.ts,
                    e.kind,
                    e.session_id,
                    e.role,
                    e.content,
                    pack_digest(e.content_sha256),
                    meta_json,
                    pack_digest(e.prev_hash),
                    pack_digest(e.hash),
                    e.hash_version,
                    e.summary,
                    keywords,
                    e.digest_method,
                    e.user_id,
                    pack_digest(e.user_digest),
                    pack_digest(e.session_digest),
                )
            )
        with self._lock, self._write() as conn:
            if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone():
                raise InvalidInputError(
                    f"{self.path} already holds events: import only into a new, empty database"
                )
            marks = ",".join("?" * 17)
            heads = key_heads(events, keys)
            try:
                conn.executemany(f"INSERT INTO events({COLUMNS}) VALUES ({marks})", rows)
                conn.executemany(
                    "INSERT INTO chains(chain, secret, head_id, head_hash) VALUES (?, ?, ?, ?)",
                    [
                        (key, secret, heads.get(key, (0, None))[0],
                         pack_digest(heads.get(key, (0, None))[1]))
                        for key, secret in keys
                    ],
                )  # fmt: skip
            except sqlite3.IntegrityError as exc:
                raise IntegrityError(f"the events cannot be imported as given: {exc}") from None
            report = self.verify()
            if not report.ok:
                raise IntegrityError(
                    f"the imported chain does not verify at event {report.first_bad_id}: "
                    f"{report.reason}; nothing was imported"
                )
        self.sync_search_index()
        return report
