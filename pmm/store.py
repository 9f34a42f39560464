"""EventStore: the append-only, hash-chained SQLite event log. All of PMM's SQL lives here.

Usage::

    from pmm.store import EventStore

    with EventStore("pmm.db") as store:
        ev = store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
        store.get(ev.id).content            # 'I moved to Lisbon'
        store.events(session_id="alice", newest_first=True, limit=10)
        report = store.verify()             # VerifyReport(ok=True, rows=1, head='…', ...)

Appends take SQLite's write lock (``BEGIN IMMEDIATE``) before reading the head, so any
number of threads and processes appending to one file extend one chain and lose nothing.
The file is in WAL mode with ``synchronous=NORMAL``: an acknowledged append survives the
process being killed; a power cut may lose the last transactions but never breaks the chain.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import schema
from .chain import ChainWalker, CheckedEvent, check_new_event, seal
from .errors import (
    CorruptDatabaseError,
    DatabaseError,
    DiskFullError,
    EventNotFoundError,
    IntegrityError,
    InvalidInputError,
    NotADatabaseError,
    ReadOnlyDatabaseError,
)
from .hashing import (
    LEGACY_HASH_VERSION,
    canonical_json,
    legacy_hash,
    utc_now,
)
from .records import Event, NewEvent, TurnRow, VerifyReport, event_from_row
from .storage.summaries import covering_summary, summary_edges
from .storage.terms import QueryTerms, pick_terms
from .store_readonly import open_read_only, read_only_reason, refuse_pending_migrations
from .store_windows import sync_windows, windows_pending
from .text import search_terms
from .window_keys import DEFAULT_WINDOW_RADIUS

if TYPE_CHECKING:
    from datetime import timedelta

    from .compaction import CompactionReport
    from .erasure import ErasureReport

log = logging.getLogger(__name__)

DEFAULT_MAX_CONTENT_BYTES = 1_048_576
"""Largest content one event may hold (1 MiB); bigger text is refused, not truncated."""

_COLUMNS = (
    "id, ts, kind, session_id, role, content, content_sha256, meta, prev_hash, hash,"
    " hash_version, summary, keywords, digest_method"
)
_INSERT = (
    "INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256, meta,"
    " prev_hash, hash, hash_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


_SEARCH_KEYS = {
    "turn": ("events_fts", "{summary keywords content}", "bm25(events_fts, 2.0, 3.0, 1.0, 0.0)"),
    "content": ("events_fts", "{content}", "bm25(events_fts, 0.0, 0.0, 1.0, 0.0)"),
    "digest": ("events_fts", "{summary keywords}", "bm25(events_fts, 2.0, 3.0, 0.0, 0.0)"),
    "window": ("events_window_fts", "{body dates}", "bm25(events_window_fts, 1.0, 1.0, 0.0)"),
}
"""Search keys: (FTS table, columns searched, BM25 expression)."""


def _fts_phrase(text: str) -> str:
    """``text`` as an FTS5 string: searched as plain words, never as query syntax."""
    return '"' + text.replace('"', '""') + '"'


def _session_tag(session_id: str) -> str:
    """The token the FTS ``tags`` column holds for a session (see migrations/0003)."""
    return "s" + session_id.encode("utf-8").hex() + "0"


class EventStore:
    """The event log in one SQLite file (see the module docstring for an example).

    ``path`` may be ``":memory:"`` for a throwaway log. ``max_content_bytes`` caps one
    event's content. ``timeout`` is how many seconds an append waits for another writer
    (default: ``PMM_BUSY_TIMEOUT_MS``, 30 s). ``window_radius`` is how many turns before and
    after a turn its window key holds (PMM_RECALL_WINDOW; see :mod:`pmm.window_keys`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        timeout: float | None = None,
        window_radius: int = DEFAULT_WINDOW_RADIUS,
    ) -> None:
        if timeout is None:
            timeout = _default_busy_timeout()
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
        self._doc_freq: dict[str, tuple[int, int]] = {}  # term -> (docs, indexed rows then)
        self.read_only_reason = None if self.path == ":memory:" else read_only_reason(self.path)
        """Why the file cannot be written (it was opened read-only), or None."""
        if self.read_only_reason is not None:
            self._conn = open_read_only(self.path, timeout)
            self.applied_migrations = []
            try:
                refuse_pending_migrations(self._conn, self.path)
            except BaseException:
                self._conn.close()
                raise
            return
        self._conn = _open(self.path, timeout)
        try:
            self.applied_migrations = schema.migrate(
                self._conn, None if self.path == ":memory:" else Path(self.path)
            )
        except BaseException:
            self._conn.close()
            raise

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close the file. The store cannot be used afterwards."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EventStore({self.path!r})"

    # -- writing ---------------------------------------------------------------------

    def append(
        self,
        kind: str,
        content: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        meta: dict[str, Any] | None = None,
        ts: datetime | str | None = None,
    ) -> Event:
        """Append one event and return it with its id, timestamp and hash. ``ts`` (a
        ``datetime``, naive = UTC, or ISO-8601 text) is the conversation time of an
        imported past turn; None = now. Either way it is hashed into the chain."""
        return self.append_many([NewEvent(kind, content, session_id, role, meta, ts)])[0]

    def append_many(self, entries: Iterable[NewEvent]) -> list[Event]:
        """Append several events in one transaction: all of them are stored, or none."""
        checked = [self._check(e) for e in entries]
        if not checked:
            return []
        with self._lock, self._write() as conn:
            return self._append_locked(conn, checked)

    def _append_locked(self, conn: sqlite3.Connection, checked: list[CheckedEvent]) -> list[Event]:
        head = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        last_id, prev_hash = (head[0], head[1]) if head else (0, None)
        events = seal(checked, last_id=last_id, prev_hash=prev_hash, ts=utc_now())
        rows = [
            (
                e.id,
                e.ts,
                e.kind,
                e.session_id,
                e.role,
                e.content,
                e.content_sha256,
                c.meta_json,
                e.prev_hash,
                e.hash,
                e.hash_version,
            )
            for e, c in zip(events, checked, strict=True)
        ]
        if len(rows) == 1:
            conn.execute(_INSERT, rows[0])
        else:
            conn.executemany(_INSERT, rows)
        return events

    def redact(self, event_id: int, *, reason: str) -> Event:
        """Erase one event's raw text (and its digest, vectors and edges) and record that as
        a chained ``redaction`` event in the same session, which is returned. The redacted
        row keeps verifying: its hash covers ``content_sha256``, not the text. The file is
        then scrubbed so that no byte of the text remains (see :mod:`pmm.erasure`, whose
        ``forget`` erases many events at once). Rows of the earlier PMM (``hash_version``
        0) hash the text itself and cannot be redacted."""
        from .erasure import forget

        report = forget(self, event_ids=[event_id], reason=reason, require_text=True)
        return report.markers[0]

    def rebuild_search_indexes(self, conn: sqlite3.Connection) -> None:
        """Rebuild every full-text index derived from event text, inside the caller's
        write transaction (``conn``), so that erased text leaves no term behind (FTS5 keeps
        deleted terms in its segments until they are merged). Used by erasure and
        compaction; every text-derived index belongs here."""
        conn.execute("INSERT INTO events_fts(events_fts) VALUES ('rebuild')")
        conn.execute(
            "UPDATE fts_state SET indexed_upto = (SELECT coalesce(max(id), 0) FROM events)"
        )
        # The window/date index holds its own copy of each window's text: rewrite the
        # windows that reached the changed turns, then merge its segments so that the
        # deleted terms are gone too.
        sync_windows(conn, self.window_radius)
        conn.execute("INSERT INTO events_window_fts(events_window_fts) VALUES ('optimize')")
        self._doc_freq.clear()

    def forget(
        self,
        *,
        event_ids: Iterable[int] | None = None,
        session_id: str | None = None,
        match: str | None = None,
        reason: str,
    ) -> ErasureReport:
        """Erase events so that no byte of their text stays in the file (see
        :func:`pmm.erasure.forget`)."""
        from .erasure import forget

        return forget(self, event_ids=event_ids, session_id=session_id, match=match, reason=reason)

    def compact(
        self, *, older_than: str | timedelta, session_id: str | None = None, dry_run: bool = False
    ) -> CompactionReport:
        """Drop the raw text of old digested turns (see :func:`pmm.compaction.compact`)."""
        from .compaction import compact

        return compact(self, older_than=older_than, session_id=session_id, dry_run=dry_run)

    def import_events(self, events: Iterable[Event]) -> VerifyReport:
        """Insert exported events verbatim (same ids, timestamps, hashes and digests) into
        an empty log, in one transaction; returns the verify report of the result.

        Raises :class:`InvalidInputError` when the log already holds events and
        :class:`IntegrityError` when the events do not form a chain that verifies; either
        way nothing is written. Embeddings are not imported: recompute them afterwards.
        """
        rows = []
        for e in events:
            meta_json = canonical_json(e.meta)
            if e.hash_version == LEGACY_HASH_VERSION and e.content is not None:
                # The earlier PMM hashed its own meta text: find the spelling that verifies.
                for spelling in (json.dumps(e.meta), json.dumps(e.meta, ensure_ascii=False)):
                    if legacy_hash(e.prev_hash, e.kind, e.content, spelling) == e.hash:
                        meta_json = spelling
            keywords = json.dumps(list(e.keywords), ensure_ascii=False) if e.keywords else None
            rows.append(
                (
                    e.id,
                    e.ts,
                    e.kind,
                    e.session_id,
                    e.role,
                    e.content,
                    e.content_sha256,
                    meta_json,
                    e.prev_hash,
                    e.hash,
                    e.hash_version,
                    e.summary,
                    keywords,
                    e.digest_method,
                )
            )
        with self._lock, self._write() as conn:
            if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone():
                raise InvalidInputError(
                    f"{self.path} already holds events: import only into a new, empty database"
                )
            marks = ",".join("?" * 14)
            try:
                conn.executemany(f"INSERT INTO events({_COLUMNS}) VALUES ({marks})", rows)
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

    def _check(self, entry: NewEvent) -> CheckedEvent:
        """Validate one entry; returns it with its content hash and canonical meta."""
        return check_new_event(entry, self.max_content_bytes)

    # -- reading ---------------------------------------------------------------------

    def get(self, event_id: int) -> Event:
        """The event with this id; raises :class:`EventNotFoundError` if there is none."""
        rows = self._read(f"SELECT {_COLUMNS} FROM events WHERE id = ?", (event_id,))
        if not rows:
            raise EventNotFoundError(f"no event with id {event_id} in {self.path}")
        return event_from_row(rows[0])

    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]:
        """The events with these ids that exist, by id."""
        ids = list(dict.fromkeys(event_ids))
        found: dict[int, Event] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._read(f"SELECT {_COLUMNS} FROM events WHERE id IN ({marks})", chunk):
                found[row[0]] = event_from_row(row)
        return found

    def events(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        before_id: int | None = None,
        newest_first: bool = False,
        limit: int | None = None,
    ) -> list[Event]:
        """Events filtered by session, kinds and an id range, oldest first unless asked."""
        where, params = self._filters(session_id, kinds, after_id, before_id)
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT {_COLUMNS} FROM events{where} ORDER BY id {order}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [event_from_row(r) for r in self._read(sql, params)]

    def turn_rows(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        before_id: int | None = None,
        limit: int | None = None,
    ) -> list[TurnRow]:
        """Like :meth:`events` newest first, but only the columns a prompt needs (fast).
        A compacted turn (see :mod:`pmm.compaction`) shows its summary as its content."""
        where, params = self._filters(session_id, kinds, after_id, before_id)
        sql = (
            "SELECT id, ts, kind, session_id, role, coalesce(content, summary), summary"
            " FROM events"
            f"{where} ORDER BY id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [TurnRow._make(r) for r in self._read(sql, params)]

    def iter_events(self, *, batch: int = 1000, after_id: int = 0) -> Iterator[Event]:
        """Every event in id order, read in batches (for export and backfills)."""
        while True:
            rows = self.events(after_id=after_id, limit=batch)
            if not rows:
                return
            yield from rows
            after_id = rows[-1].id

    def head(self) -> Event | None:
        """The newest event, or None for an empty log."""
        rows = self.events(newest_first=True, limit=1)
        return rows[0] if rows else None

    def count(self, *, session_id: str | None = None, kinds: Iterable[str] | None = None) -> int:
        """How many events match."""
        where, params = self._filters(session_id, kinds, None, None)
        return int(self._read(f"SELECT count(*) FROM events{where}", params)[0][0])

    def last_id(self, *, session_id: str | None = None, kinds: Iterable[str] | None = None) -> int:
        """The id of the newest matching event, 0 when there is none."""
        where, params = self._filters(session_id, kinds, None, None)
        row = self._read(f"SELECT max(id) FROM events{where}", params)[0]
        return int(row[0] or 0)

    def event_ids(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
    ) -> list[int]:
        """Ids of the matching events, oldest first (read from an index, without the rows:
        the cheap filter vector search uses)."""
        where, params = self._filters(session_id, kinds, after_id, None)
        return [r[0] for r in self._read(f"SELECT id FROM events{where} ORDER BY id", params)]

    @staticmethod
    def _filters(
        session_id: str | None,
        kinds: Iterable[str] | None,
        after_id: int | None,
        before_id: int | None,
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if session_id is not None:
            clauses.append("session_id = ?")
            params.append(session_id)
        if kinds is not None:
            kind_list = [kinds] if isinstance(kinds, str) else list(kinds)
            clauses.append(f"kind IN ({','.join('?' * len(kind_list))})")
            params.extend(kind_list)
        if after_id is not None:
            clauses.append("id > ?")
            params.append(after_id)
        if before_id is not None:
            clauses.append("id < ?")
            params.append(before_id)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    # -- derived data: digests -----------------------------------------------------

    def undigested(
        self, *, kinds: Iterable[str], limit: int | None = None, after_id: int = 0
    ) -> list[Event]:
        """Events of these kinds that have text but no digest yet, oldest first."""
        kind_list = list(kinds)
        sql = (
            f"SELECT {_COLUMNS} FROM events WHERE digest_method IS NULL AND id > ?"
            f" AND content IS NOT NULL AND kind IN ({','.join('?' * len(kind_list))})"
            " ORDER BY id"
        )
        params: list[Any] = [after_id, *kind_list]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [event_from_row(r) for r in self._read(sql, params)]

    def count_undigested(self, *, kinds: Iterable[str]) -> int:
        kind_list = list(kinds)
        sql = (
            "SELECT count(*) FROM events WHERE digest_method IS NULL AND content IS NOT NULL"
            f" AND kind IN ({','.join('?' * len(kind_list))})"
        )
        return int(self._read(sql, kind_list)[0][0])

    def set_digests(self, digests: Iterable[tuple[int, str, Sequence[str], str]]) -> int:
        """Store ``(event_id, summary, keywords, method)`` for each event; the raw text and
        the chain are untouched. Returns how many rows were updated."""
        rows = [
            (summary, json.dumps(list(keywords), ensure_ascii=False), method, event_id)
            for event_id, summary, keywords, method in digests
        ]
        if not rows:
            return 0
        with self._lock, self._write() as conn:
            # A row redacted after its text was read for digesting keeps no digest of it.
            return conn.executemany(
                "UPDATE events SET summary = ?, keywords = ?, digest_method = ?"
                " WHERE id = ? AND content IS NOT NULL",
                rows,
            ).rowcount

    # -- derived data: embeddings ----------------------------------------------------

    def put_embeddings(self, model: str, dim: int, vectors: Iterable[tuple[int, bytes]]) -> int:
        """Store float32 vectors (as bytes) of ``model`` for events, replacing old ones.

        Events whose text was redacted meanwhile get no vector (the vector would keep what
        the redaction erased). Returns how many vectors were stored.
        """
        rows = [(event_id, model, dim, blob, event_id) for event_id, blob in vectors]
        with self._lock, self._write() as conn:
            before = conn.total_changes
            conn.executemany(
                "INSERT INTO embeddings(event_id, model, dim, vector)"
                " SELECT ?, ?, ?, ? WHERE EXISTS"
                " (SELECT 1 FROM events WHERE id = ? AND content IS NOT NULL)"
                " ON CONFLICT(event_id, model) DO UPDATE"
                " SET dim = excluded.dim, vector = excluded.vector",
                rows,
            )
            # total_changes also counts the embedding_stats rows the triggers touch.
            return (conn.total_changes - before) // 2

    def embeddings(self, model: str, *, after_id: int = 0) -> list[tuple[int, bytes]]:
        """``(event_id, vector bytes)`` of ``model`` for events with ids above ``after_id``."""
        return [
            (r[0], r[1])
            for r in self._read(
                "SELECT event_id, vector FROM embeddings WHERE model = ? AND event_id > ?"
                " ORDER BY event_id",
                (model, after_id),
            )
        ]

    def embedding_models(self) -> dict[str, int]:
        """How many vectors each model has stored."""
        return {
            r[0]: r[1]
            for r in self._read(
                "SELECT model, count(*) FROM embeddings GROUP BY model ORDER BY model"
            )
        }

    def unembedded(
        self, model: str, *, kinds: Iterable[str], limit: int | None = None
    ) -> list[Event]:
        """Events of these kinds with text and no vector of ``model`` yet, oldest first."""
        kind_list = list(kinds)
        sql = (
            f"SELECT {_COLUMNS} FROM events e WHERE content IS NOT NULL"
            f" AND kind IN ({','.join('?' * len(kind_list))}) AND NOT EXISTS"
            " (SELECT 1 FROM embeddings m WHERE m.event_id = e.id AND m.model = ?) ORDER BY id"
        )
        params: list[Any] = [*kind_list, model]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [event_from_row(r) for r in self._read(sql, params)]

    def delete_embeddings(self, model: str) -> int:
        """Drop every vector of ``model``; returns how many."""
        with self._lock, self._write() as conn:
            return conn.execute("DELETE FROM embeddings WHERE model = ?", (model,)).rowcount

    def count_unembedded(self, model: str, *, kinds: Iterable[str]) -> int:
        """How many events :meth:`unembedded` would return."""
        kind_list = list(kinds)
        sql = (
            "SELECT count(*) FROM events e WHERE content IS NOT NULL"
            f" AND kind IN ({','.join('?' * len(kind_list))}) AND NOT EXISTS"
            " (SELECT 1 FROM embeddings m WHERE m.event_id = e.id AND m.model = ?)"
        )
        return int(self._read(sql, [*kind_list, model])[0][0])

    def embedding_stats(self, model: str) -> tuple[int, int, int]:
        """``(count, sum of event ids, vectors replaced in place)`` of ``model``'s vectors,
        kept by triggers (constant time): a fingerprint that tells a vector cache when
        vectors were deleted, added out of id order or overwritten."""
        row = self._read(
            "SELECT vectors, id_sum, replaced FROM embedding_stats WHERE model = ?", (model,)
        )
        return (int(row[0][0]), int(row[0][1]), int(row[0][2])) if row else (0, 0, 0)

    def data_version(self) -> tuple[int, int]:
        """A value that changes whenever the file is written, by this store or by another
        connection (``PRAGMA data_version`` and ``total_changes``): caches compare it to
        know, for a few microseconds, whether to look again."""
        with self._lock:
            try:
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            except sqlite3.Error as exc:
                raise _translate(exc, self.path) from exc
            return int(version), self._conn.total_changes

    # -- derived data: edges ---------------------------------------------------------

    def add_edges(self, edges: Iterable[tuple[int, int, str]]) -> None:
        """Record ``(src, dst, kind)`` links, e.g. a session summary SUMMARIZES a turn."""
        with self._lock, self._write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO edges(src, dst, kind) VALUES (?,?,?)", list(edges)
            )

    def edges_from(self, src: int, kind: str) -> list[int]:
        return [
            r[0]
            for r in self._read(
                "SELECT dst FROM edges WHERE src = ? AND kind = ? ORDER BY dst", (src, kind)
            )
        ]

    # -- full-text search ------------------------------------------------------------

    def sync_search_index(self) -> int:
        """Index every event appended since the last call, and bring the window/date keys
        up to date (new turns, and the neighbours of turns appended, redacted or
        compacted since); returns how many events were newly indexed."""
        upto, newest = self._read(
            "SELECT (SELECT indexed_upto FROM fts_state), (SELECT max(id) FROM events)"
        )[0]
        if (not newest or newest <= upto) and not self._windows_pending():
            return 0
        if self.read_only_reason is not None:
            self._warn_unindexed(newest - upto)
            return 0
        with self._lock, self._write() as conn:
            upto = conn.execute("SELECT indexed_upto FROM fts_state").fetchone()[0]
            newest = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 0
            if newest > upto:
                conn.execute(
                    "INSERT INTO events_fts(rowid, summary, keywords, content, tags)"
                    " SELECT id, summary, keywords, content, tags FROM events_fts_source"
                    " WHERE id > ? AND id <= ?",
                    (upto, newest),
                )
                conn.execute("UPDATE fts_state SET indexed_upto = ?", (newest,))
            if windows_pending(conn, self.window_radius):
                sync_windows(conn, self.window_radius)
            return int(max(0, newest - upto))

    def _windows_pending(self) -> bool:
        with self._lock:
            try:
                return windows_pending(self._conn, self.window_radius)
            except sqlite3.Error as exc:
                raise _translate(exc, self.path) from exc

    def _warn_unindexed(self, count: int) -> None:
        if not getattr(self, "_warned_unindexed", False):
            self._warned_unindexed = True
            log.warning(
                "%s is read-only: its %d newest events are not in the full-text index, so "
                "keyword search does not find them (copy the file somewhere writable to "
                "index them)",
                self.path,
                count,
            )

    def search_index_upto(self) -> int:
        """The newest event id the full-text index holds (later ones are indexed by the
        next :meth:`sync_search_index`)."""
        return int(self._read("SELECT indexed_upto FROM fts_state")[0][0])

    def search_text(
        self,
        query: str,
        *,
        limit: int = 10,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        sync: bool = True,
        key: str = "turn",
        date_weight: float = 1.0,
    ) -> list[tuple[int, float]]:
        """``(event_id, score)`` by BM25, best first, over one key of the events:

        - ``key="turn"``: the event's summary, keywords and content;
        - ``key="content"``: its content only; ``key="digest"``: summary and keywords only;
        - ``key="window"``: the turn with its neighbouring turns and its date in words
          (turns only; ``date_weight`` scales the date column against the text).

        The query is taken as plain words (any of them may match): quotes, ``AND``, ``*``,
        ``-``, parentheses or ``NEAR`` in it are searched as text, never as syntax. In a
        log of 1,000+ events, words found in over 5% of it count as stopwords, and at most
        the :data:`MAX_QUERY_TERMS` rarest words are used: ranking cost grows with how
        common the words are. When every word is that common, the newest events holding the
        rarest word come first (score 0), since BM25 could not tell them apart anyway.
        ``sync=False`` skips indexing events appended since the last search (for callers
        that already hold the newest events).
        """
        if key not in _SEARCH_KEYS:
            raise InvalidInputError(f"key must be one of {', '.join(_SEARCH_KEYS)}, got {key!r}")
        words = search_terms(query)
        if not words:
            return []
        if sync:
            self.sync_search_index()
        terms = self._informative_terms(words)
        table, columns, rank = _SEARCH_KEYS[key]
        if key == "window":
            rank = f"bm25(events_window_fts, 1.0, {float(date_weight)!r}, 0.0)"
        match = columns + " : (" + " OR ".join(_fts_phrase(t) for t in terms.words) + ")"
        # The session tag lets FTS read only this session's postings. Kinds are filtered
        # in SQL: as a tag they would match most rows, and BM25 would read them all.
        if session_id is not None:
            match += " AND tags : " + _fts_phrase(_session_tag(session_id))
        kind_list = None if kinds is None else ([kinds] if isinstance(kinds, str) else list(kinds))
        where, params = self._filters(session_id, kind_list, None, None)
        where = where.replace(" WHERE ", " AND ")
        order = "rank"
        if terms.common:
            rank, order = "0.0", "e.id DESC"
        sql = (
            f"SELECT e.id, {rank} AS rank FROM {table}"
            f" JOIN events e ON e.id = {table}.rowid"
            f" WHERE {table} MATCH ?{where} ORDER BY {order} LIMIT ?"
        )
        return [(r[0], -r[1]) for r in self._read(sql, [match, *params, int(limit)])]

    def _informative_terms(self, words: list[str]) -> QueryTerms:
        """The rarest (at most MAX_QUERY_TERMS) words, without very common ones."""
        indexed = self.search_index_upto()
        return pick_terms(words, indexed, lambda w: self._document_frequency(w, indexed))

    def _document_frequency(self, word: str, indexed: int) -> int:
        """How many indexed events hold ``word`` (cached until the index grows by 10%)."""
        cached = self._doc_freq.get(word)
        if cached is not None and indexed <= cached[1] * 1.1:
            return cached[0]
        docs = int(
            self._read(
                "SELECT count(*) FROM events_fts WHERE events_fts MATCH ?",
                ("{summary keywords content} : " + _fts_phrase(word),),
            )[0][0]
        )
        if len(self._doc_freq) > 50_000:
            self._doc_freq.clear()
        self._doc_freq[word] = (docs, indexed)
        return docs

    # -- statistics ------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts by kind, session and role, digest and embedding coverage, bytes on disk."""

        def grouped(column: str) -> dict[str, int]:
            return {
                str(k): n
                for k, n in self._read(
                    f"SELECT {column}, count(*) FROM events GROUP BY {column} ORDER BY 2 DESC"
                )
            }

        total, digested, with_text = self._read(
            "SELECT count(*), count(digest_method), count(content) FROM events"
        )[0]
        files = [self.path + suffix for suffix in ("", "-wal", "-shm")]
        return {
            "path": self.path,
            "events": total,
            "by_kind": grouped("kind"),
            "by_session": grouped("session_id"),
            "by_role": grouped("role"),
            "by_digest_method": grouped("digest_method"),
            "digested": digested,
            "with_text": with_text,
            "embeddings": self.embedding_models(),
            "bytes_on_disk": sum(os.path.getsize(f) for f in files if os.path.exists(f)),
            "schema_version": self._read("PRAGMA user_version")[0][0],
        }

    # -- verification ----------------------------------------------------------------

    def verify(self, *, expect_head: str | None = None) -> VerifyReport:
        """Walk the whole chain and report the first row that does not verify.

        Checks, per row: ``prev_hash`` equals the previous row's hash (the first row has
        none), the content (when present) matches ``content_sha256``, and ``hash`` is the
        hash of the row. A log cut off at its end still verifies from inside; pin its
        head and pass ``expect_head`` to catch that.
        """
        walker = ChainWalker(expect_head=expect_head)
        with self._lock, _translated(self.path):
            cursor = self._conn.execute(
                "SELECT id, ts, kind, session_id, role, content, content_sha256, meta,"
                " prev_hash, hash, hash_version FROM events ORDER BY id"
            )
            for row in cursor:
                if walker.step(*row) is not None:
                    break
            cursor.close()
        return walker.report()

    # -- internals -------------------------------------------------------------------

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _translate(exc, self.path) from exc

    def _write(self) -> _WriteTransaction:
        if self.read_only_reason is not None:
            raise ReadOnlyDatabaseError(self.read_only_reason)
        return _WriteTransaction(self._conn, self.path)

    # -- consolidation: session summaries, supersession (pmm/consolidate.py) -----------

    def summary_candidates(self, *, kinds: Iterable[str]) -> list[tuple[str, int, int]]:
        """``(session_id, digested turns, newest digested turn id)`` per session, counting
        the turns of ``kinds`` after the session's last ``clear`` marker that hold text and
        a digest: what a session summary would cover."""
        kind_list = list(kinds)
        sql = (
            "SELECT e.session_id, count(*), max(e.id) FROM events e"
            f" WHERE e.kind IN ({','.join('?' * len(kind_list))})"
            " AND e.session_id IS NOT NULL AND e.content IS NOT NULL"
            " AND e.summary IS NOT NULL AND e.digest_method IS NOT NULL"
            " AND e.digest_method != 'redacted'"
            " AND e.id > coalesce((SELECT max(c.id) FROM events c"
            "   WHERE c.session_id = e.session_id AND c.kind = 'clear'), 0)"
            " GROUP BY e.session_id ORDER BY e.session_id"
        )
        return [(r[0], int(r[1]), int(r[2])) for r in self._read(sql, kind_list)]

    def summary_turns(self, session_id: str, *, kinds: Iterable[str], upto: int) -> list[Event]:
        """The digested turns a session summary covers: ``kinds`` after the session's last
        ``clear`` marker, up to id ``upto``, oldest first."""
        kind_list = list(kinds)
        sql = (
            f"SELECT {_COLUMNS} FROM events WHERE session_id = ?"
            f" AND kind IN ({','.join('?' * len(kind_list))})"
            " AND content IS NOT NULL AND summary IS NOT NULL AND digest_method IS NOT NULL"
            " AND digest_method != 'redacted' AND id <= ?"
            " AND id > coalesce((SELECT max(id) FROM events"
            "   WHERE session_id = ? AND kind = 'clear'), 0) ORDER BY id"
        )
        return [
            event_from_row(r) for r in self._read(sql, [session_id, *kind_list, upto, session_id])
        ]

    def latest_summary(self, session_id: str, *, kind: str = "summary") -> Event | None:
        """The newest summary event of a session (the one in use), or None."""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM events WHERE session_id = ? AND kind = ?"
            " ORDER BY id DESC LIMIT 1",
            (session_id, kind),
        )
        return event_from_row(rows[0]) if rows else None

    def append_summary(
        self,
        summary: NewEvent,
        audit: Callable[[Event], NewEvent],
        *,
        key: str,
        covers_upto: int,
        covered_ids: Sequence[int],
        summarizes: str,
        supersedes: str,
    ) -> tuple[Event, bool]:
        """Append a session summary and its audit event, atomically and at most once.

        Inside one write transaction: if a summary of this session already has
        ``meta["key"] == key``, or the newest one already covers turns up to
        ``covers_upto`` or beyond, that one is returned with ``False``. Otherwise
        ``summary`` is appended, then ``audit(summary_event)``, with ``summarizes`` edges
        to ``covered_ids`` and a ``supersedes`` edge to the summary it replaces, and
        ``(summary_event, True)`` is returned. Two processes racing write one summary."""
        session = summary.session_id
        checked = self._check(summary)
        with self._lock, self._write() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM events WHERE session_id = ? AND kind = ?"
                " ORDER BY id DESC LIMIT 1",
                (session, summary.kind),
            ).fetchone()
            newest = event_from_row(row) if row else None
            if (kept := covering_summary(newest, covers_upto)) is not None:
                return kept, False
            same = conn.execute(
                f"SELECT {_COLUMNS} FROM events WHERE session_id = ? AND kind = ?"
                " AND json_extract(meta, '$.key') = ? LIMIT 1",
                (session, summary.kind, key),
            ).fetchone()
            if same is not None:
                return event_from_row(same), False
            [event] = self._append_locked(conn, [checked])
            self._append_locked(conn, [self._check(audit(event))])
            edges = summary_edges(event.id, covered_ids, newest, summarizes, supersedes)
            conn.executemany("INSERT OR IGNORE INTO edges(src, dst, kind) VALUES (?,?,?)", edges)
            return event, True

    def edge_targets(self, srcs: Iterable[int], kind: str) -> dict[int, list[int]]:
        """``{src: [dst, ...]}`` of the ``kind`` edges leaving ``srcs`` (dst ascending)."""
        ids = list(dict.fromkeys(srcs))
        found: dict[int, list[int]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for src, dst in self._read(
                f"SELECT src, dst FROM edges WHERE kind = ? AND src IN ({marks}) ORDER BY src, dst",
                [kind, *chunk],
            ):
                found.setdefault(src, []).append(dst)
        return found

    def edge_sources(self, dsts: Iterable[int], kind: str | Sequence[str]) -> dict[int, list[int]]:
        """``{dst: [src, ...]}`` of the edges of ``kind`` (one or several) reaching ``dsts``."""
        ids = list(dict.fromkeys(dsts))
        kinds = [kind] if isinstance(kind, str) else list(kind)
        found: dict[int, list[int]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for src, dst in self._read(
                f"SELECT src, dst FROM edges WHERE dst IN ({marks})"
                f" AND kind IN ({','.join('?' * len(kinds))}) ORDER BY dst, src",
                [*chunk, *kinds],
            ):
                found.setdefault(dst, []).append(src)
        return found

    def max_edge_src(self, kind: str) -> int:
        """The largest source id of a ``kind`` edge (0 when there is none): e.g. how far a
        scan that marks each event it finished has come."""
        row = self._read("SELECT max(src) FROM edges WHERE kind = ?", (kind,))[0]
        return int(row[0] or 0)

    def append_supersession(
        self, marker: NewEvent, *, newer: int, older: int, kind: str
    ) -> Event | None:
        """Record that ``newer`` supersedes ``older``: a ``kind`` edge and the chained
        ``marker`` event, atomically; None (and nothing written) when that edge exists."""
        checked = self._check(marker)
        with self._lock, self._write() as conn:
            exists = conn.execute(
                "SELECT 1 FROM edges WHERE src = ? AND dst = ? AND kind = ?", (newer, older, kind)
            ).fetchone()
            if exists:
                return None
            conn.execute("INSERT INTO edges(src, dst, kind) VALUES (?,?,?)", (newer, older, kind))
            return self._append_locked(conn, [checked])[0]

    # -- meta keys (used by the LangChain v1 middleware and the LangGraph store) ---------

    def stored_meta_values(self, *, session_id: str, field: str, values: Iterable[str]) -> set[str]:
        """Which of ``values`` some event of this session holds in ``meta[field]``, e.g.
        ``store.stored_meta_values(session_id="t1", field="message_id", values=ids)``.

        ``message_id`` and ``key`` have their own indexes (migration 0006): one index probe
        per value; another field reads the session's rows."""
        wanted = list(dict.fromkeys(values))
        found: set[str] = set()
        value = _meta_path(field)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._read(
                f"SELECT DISTINCT {value} FROM events WHERE session_id = ?"
                f" AND {value} IN ({marks})",
                [session_id, *chunk],
            )
            found.update(str(r[0]) for r in rows)
        return found

    def latest_per_meta_key(
        self,
        *,
        kinds: Iterable[str],
        field: str,
        session_id: str | None = None,
        session_prefix: str | None = None,
        value: str | None = None,
    ) -> list[Event]:
        """The newest event of ``kinds`` for each (session, ``meta[field]``) pair, in the one
        session ``session_id`` or in every session starting with ``session_prefix``; with
        ``value``, only that key. Oldest first. (A key/value view of an append-only log.)"""
        kind_list = list(kinds)
        path = _meta_path(field)
        clauses = [f"kind IN ({','.join('?' * len(kind_list))})"]
        params: list[Any] = [*kind_list]
        if session_id is not None:
            clauses.append("session_id = ?")
            params.append(session_id)
        if session_prefix is not None:
            clauses.append("substr(session_id, 1, ?) = ?")  # exact, unlike LIKE
            params.extend([len(session_prefix), session_prefix])
        if value is not None:
            clauses.append(f"{path} = ?")
            params.append(value)
        latest = (
            f"SELECT max(id) FROM events WHERE {' AND '.join(clauses)} GROUP BY session_id, {path}"
        )
        rows = self._read(
            f"SELECT {_COLUMNS} FROM events WHERE id IN ({latest}) ORDER BY id", params
        )
        return [event_from_row(r) for r in rows]


def _meta_path(field: str) -> str:
    """``json_extract(meta, '$.field')`` written as the indexes of migration 0006 write it
    (a bound parameter would not match them); ``field`` must be a plain name."""
    if not field.isidentifier():
        raise InvalidInputError(f"meta field must be a plain name, got {field!r}")
    return f"json_extract(meta, '$.{field}')"


class _WriteTransaction:
    """``with`` block around ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error)."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self._path = path

    def __enter__(self) -> sqlite3.Connection:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _translate(exc, self._path) from exc
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
                raise _translate(error, self._path) from error
        self._rollback(exc)
        if isinstance(exc, sqlite3.Error):
            raise _translate(exc, self._path) from exc

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


def _default_busy_timeout() -> float:
    """``PMM_BUSY_TIMEOUT_MS`` (from the environment or ``.env``) in seconds."""
    from .settings import Settings

    return Settings.load().busy_timeout_ms / 1000


def _open(path: str, timeout: float) -> sqlite3.Connection:
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
    try:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise _translate(exc, path) from exc
    try:
        _enable_wal(conn, timeout)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    except sqlite3.Error as exc:
        conn.close()
        raise _translate(exc, path) from exc
    return conn


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
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
def _translated(path: str) -> Iterator[None]:
    """Raise sqlite3 errors inside the block as PMM's :class:`DatabaseError` subclasses."""
    try:
        yield
    except sqlite3.Error as exc:
        raise _translate(exc, path) from exc


def _translate(exc: sqlite3.Error, path: str) -> DatabaseError:
    message = str(exc)
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
