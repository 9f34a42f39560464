"""The SQLite log itself: appending events to the hash chain, and reading them back.

Mixed into :class:`pmm.storage.sqlite.EventStore`::

    ev = store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
    store.events(session_id="alice", newest_first=True, limit=10)

Appends take SQLite's write lock (``BEGIN IMMEDIATE``) before reading the head, so any
number of threads and processes appending to one file extend one chain and lose nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pmm.errors import EventNotFoundError, InvalidInputError
from pmm.events.chain import (
    ASSIGN_KIND,
    CheckedEvent,
    check_new_event,
    owner_error,
)
from pmm.events.exactly_once import skip_stored, unique_pairs
from pmm.records import Event, NewEvent, TurnRow
from pmm.storage.reads import EventReads
from pmm.storage.sqlite.chains import ChainCache, append_locked, read_owner
from pmm.storage.sqlite.connection import SqliteBase
from pmm.storage.sqlite.meta_keys import checked_field, stored_values
from pmm.storage.sqlite.rows import COLUMNS, filters
from pmm.storage.sqlite.stored_text import TEXT_SQL


class EventLogData(SqliteBase, EventReads):
    """Append and read events (needs ``max_content_bytes`` besides :class:`SqliteBase`)."""

    max_content_bytes: int
    _chain_cache: ChainCache

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

    def append_many(
        self, entries: Iterable[NewEvent], *, unique_meta: str | None = None
    ) -> list[Event]:
        """Append several events in one transaction: all of them are stored, or none.
        ``unique_meta`` (e.g. ``"message_id"``): leave out the entries whose session
        already holds an event with the same ``meta[unique_meta]``, checked under the
        write lock, so each is stored once however many writers race; returns only the
        events appended now."""
        checked = [self._check(e) for e in entries]
        if not checked:
            return []
        if unique_meta is not None:
            checked_field(unique_meta)  # refused before the transaction, whatever the entries
        with self._lock, self._write() as conn:
            if unique_meta is not None:

                def read(sql: str, params: Sequence[Any]) -> list[Any]:
                    return conn.execute(sql, params).fetchall()

                by_session: dict[str, list[str]] = {}
                for session, value in unique_pairs(checked, unique_meta):
                    by_session.setdefault(session, []).append(value)
                stored = {
                    (session, value)
                    for session, values in by_session.items()
                    for value in stored_values(read, session, unique_meta, values)
                }
                checked = skip_stored(checked, unique_meta, stored)
                if not checked:
                    return []
            return self._append_locked(conn, checked)

    def _append_locked(self, conn: sqlite3.Connection, checked: list[CheckedEvent]) -> list[Event]:
        return append_locked(conn, self._chain_cache, checked)

    def session_owner(self, session_id: str) -> tuple[bool, str | None]:
        """``(has_rows, user_id)`` of a session: whether the log holds any of its events,
        and the user it belongs to (None: none, or written without a user)."""
        with self._lock:
            return read_owner(self._conn, session_id)

    def assign_user(self, session_id: str, user_id: str, *, reason: str = "") -> Event:
        """Give a session written without a user its user, once: its rows take ``user_id``
        and a chained ``user_assigned`` event (returned) records it, in one transaction.
        Raises :class:`InvalidInputError` for a session with no events or one that already
        has a user. Its rows keep their hashes (versions 0/1 do not cover the user);
        :meth:`verify` checks that their user is the one an assignment gave them. The
        search indexes take the new user at the next search (the window key rebuilds)."""
        entry = self._check(
            NewEvent(
                ASSIGN_KIND,
                f"session assigned to a user{': ' + reason if reason else ''}",
                session_id,
                "system",
                {"assigned_user": True},
                None,
                user_id,
            )
        )
        with self._lock, self._write() as conn:
            has_rows, owner = read_owner(conn, session_id)
            if not has_rows:
                raise InvalidInputError(
                    f"session {session_id!r} has no events: there is nothing to assign "
                    "(a new session takes its user from its first event)"
                )
            if owner is not None:
                if owner == user_id:
                    raise InvalidInputError(
                        f"session {session_id!r} already belongs to user {user_id!r}"
                    )
                raise owner_error(session_id, user_id, owner)
            # The turn index's rows leave with their old tags and come back with the user.
            ids = "SELECT id FROM events WHERE session_id = ? AND id <= ?"
            upto = conn.execute("SELECT indexed_upto FROM fts_state").fetchone()[0]
            conn.execute(
                "INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)"
                " SELECT 'delete', id, summary, keywords, content, tags FROM events_fts_source"
                f" WHERE id IN ({ids})",
                (session_id, upto),
            )
            conn.execute(
                "UPDATE events SET user_id = ? WHERE session_id = ?", (user_id, session_id)
            )
            conn.execute(
                "INSERT INTO events_fts(rowid, summary, keywords, content, tags)"
                " SELECT id, summary, keywords, content, tags FROM events_fts_source"
                f" WHERE id IN ({ids})",
                (session_id, upto),
            )
            # Contentless window rows cannot be re-tagged: a dirty turn rebuilds that index.
            window_upto = conn.execute("SELECT indexed_upto FROM window_state").fetchone()[0]
            conn.execute(
                f"INSERT OR IGNORE INTO window_dirty(event_id) {ids} LIMIT 1",
                (session_id, window_upto),
            )
            [event] = self._append_locked(conn, [entry])
            return event

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
        user_id: str | None = None,
    ) -> list[Event]:
        """Events filtered by session, user, kinds and an id range, oldest first unless
        asked."""
        where, params = filters(session_id, kinds, after_id, before_id, user_id)
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
        user_id: str | None = None,
    ) -> list[TurnRow]:
        """Like :meth:`events` newest first, but only the columns a prompt needs (fast).
        A compacted turn (see :mod:`pmm.retention.compaction`) shows its summary as its content."""
        where, params = filters(session_id, kinds, after_id, before_id, user_id)
        sql = (
            f"SELECT id, ts, kind, session_id, role, coalesce({TEXT_SQL}, summary), summary"
            " FROM events"
            f"{where} ORDER BY id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [TurnRow._make(r) for r in self._read(sql, params)]

    def count(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> int:
        """How many events match."""
        where, params = filters(session_id, kinds, None, None, user_id)
        return int(self._read(f"SELECT count(*) FROM events{where}", params)[0][0])

    def last_id(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> int:
        """The id of the newest matching event, 0 when there is none."""
        where, params = filters(session_id, kinds, None, None, user_id)
        row = self._read(f"SELECT max(id) FROM events{where}", params)[0]
        return int(row[0] or 0)

    def event_ids(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        user_id: str | None = None,
    ) -> list[int]:
        """Ids of the matching events, oldest first (read from an index, without the rows:
        the cheap filter vector search uses)."""
        where, params = filters(session_id, kinds, after_id, None, user_id)
        return [r[0] for r in self._read(f"SELECT id FROM events{where} ORDER BY id", params)]
