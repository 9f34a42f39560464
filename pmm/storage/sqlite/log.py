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
from typing import Any

from pmm.events.chain import CheckedEvent
from pmm.events.exactly_once import skip_stored, unique_pairs
from pmm.records import Event, TurnRow
from pmm.storage.shared import EventQuery, check_assignable
from pmm.storage.sqlite.chains import ChainCache, append_locked, read_owner
from pmm.storage.sqlite.connection import SqliteBase
from pmm.storage.sqlite.meta_keys import checked_field, stored_values
from pmm.storage.sqlite.rows import COLUMNS, query_sql


class EventLogData(SqliteBase):
    """Append and read events (needs ``max_content_bytes`` besides :class:`SqliteBase`)."""

    max_content_bytes: int
    _chain_cache: ChainCache

    # -- writing (the shared layer checks the entries) ----------------------------------

    def _append_checked(self, checked: list[CheckedEvent], unique_meta: str | None) -> list[Event]:
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

    def _assign(self, session_id: str, user_id: str, entry: CheckedEvent) -> Event:
        """Its rows take the user, the search indexes drop their old tags (the window key
        rebuilds at the next search), and ``entry`` is appended, in one transaction."""
        with self._lock, self._write() as conn:
            check_assignable(session_id, user_id, *read_owner(conn, session_id))
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

    # -- reading ---------------------------------------------------------------------

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

    def _query(self, query: EventQuery) -> list[Any]:
        """The rows of one :class:`EventQuery` (see :func:`pmm.storage.sqlite.rows.query_sql`)."""
        sql, params = query_sql(query)
        rows = self._read(sql, params)
        select = query.select
        if select == "events":
            event = self._text.event
            return [event(r) for r in rows]
        if select == "turns":
            return [TurnRow._make(r) for r in rows]
        if select == "ids":
            return [r[0] for r in rows]
        return [int(rows[0][0] or 0)]  # count, last_id
