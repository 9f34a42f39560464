"""The SQLite log itself: appending events to the hash chain, and reading them back.

Mixed into :class:`pmm.storage.sqlite.EventStore`::

    ev = store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
    store.events(session_id="alice", newest_first=True, limit=10)

Appends take SQLite's write lock (``BEGIN IMMEDIATE``) before reading the head, so any
number of threads and processes appending to one file extend one chain and lose nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pmm.errors import EventNotFoundError
from pmm.events.chain import CheckedEvent, check_new_event, seal
from pmm.events.hashing import utc_now
from pmm.records import Event, NewEvent, TurnRow
from pmm.storage.reads import EventReads
from pmm.storage.sqlite.connection import SqliteBase
from pmm.storage.sqlite.rows import COLUMNS, INSERT, filters
from pmm.storage.sqlite.stored_text import TEXT_SQL, unpack_digest


class EventLogData(SqliteBase, EventReads):
    """Append and read events (needs ``max_content_bytes`` besides :class:`SqliteBase`)."""

    max_content_bytes: int

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
        last_id, prev_hash = (head[0], unpack_digest(head[1])) if head else (0, None)
        events = seal(checked, last_id=last_id, prev_hash=prev_hash, ts=utc_now())
        # Digests are stored as their 32 bytes (migrations/0008); ours are always hex.
        unhex = bytes.fromhex
        rows = [
            (
                e.id,
                e.ts,
                e.kind,
                e.session_id,
                e.role,
                e.content,
                unhex(e.content_sha256),
                c.meta_json,
                None if e.prev_hash is None else unhex(e.prev_hash),
                unhex(e.hash),
                e.hash_version,
            )
            for e, c in zip(events, checked, strict=True)
        ]
        if len(rows) == 1:
            conn.execute(INSERT, rows[0])
        else:
            conn.executemany(INSERT, rows)
        return events

    def _check(self, entry: NewEvent) -> CheckedEvent:
        """Validate one entry; returns it with its content hash and canonical meta."""
        return check_new_event(entry, self.max_content_bytes)

    # -- reading ---------------------------------------------------------------------

    def get(self, event_id: int) -> Event:
        """The event with this id; raises :class:`EventNotFoundError` if there is none."""
        rows = self._read(f"SELECT {COLUMNS} FROM events WHERE id = ?", (event_id,))
        if not rows:
            raise EventNotFoundError(f"no event with id {event_id} in {self.path}")
        return self._text.event(rows[0])

    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]:
        """The events with these ids that exist, by id."""
        ids = list(dict.fromkeys(event_ids))
        found: dict[int, Event] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._read(f"SELECT {COLUMNS} FROM events WHERE id IN ({marks})", chunk):
                found[row[0]] = self._text.event(row)
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
        where, params = filters(session_id, kinds, after_id, before_id)
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT {COLUMNS} FROM events{where} ORDER BY id {order}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [self._text.event(r) for r in self._read(sql, params)]

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
        A compacted turn (see :mod:`pmm.retention.compaction`) shows its summary as its content."""
        where, params = filters(session_id, kinds, after_id, before_id)
        sql = (
            f"SELECT id, ts, kind, session_id, role, coalesce({TEXT_SQL}, summary), summary"
            " FROM events"
            f"{where} ORDER BY id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [TurnRow._make(r) for r in self._read(sql, params)]

    def count(self, *, session_id: str | None = None, kinds: Iterable[str] | None = None) -> int:
        """How many events match."""
        where, params = filters(session_id, kinds, None, None)
        return int(self._read(f"SELECT count(*) FROM events{where}", params)[0][0])

    def last_id(self, *, session_id: str | None = None, kinds: Iterable[str] | None = None) -> int:
        """The id of the newest matching event, 0 when there is none."""
        where, params = filters(session_id, kinds, None, None)
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
        where, params = filters(session_id, kinds, after_id, None)
        return [r[0] for r in self._read(f"SELECT id FROM events{where} ORDER BY id", params)]
