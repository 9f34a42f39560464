"""The log's reads, written once over a backend's ``_query`` and ``get_many``.

store.events(session_id="alice", newest_first=True, limit=10)
store.count(kinds=["prompt"], user_id="alice")
store.undigested(kinds=["prompt", "response"], limit=64)
for event in store.iter_events(batch=500):
    ...
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pmm.errors import EventNotFoundError
from pmm.records import Event, TurnRow
from pmm.storage.shared.primitives import Primitives
from pmm.storage.shared.query import EventQuery, kind_tuple


class SharedReads(Primitives):
    """Reads by id, by filters and by derived state (see :class:`EventQuery`)."""

    def get(self, event_id: int) -> Event:
        """The event with this id; raises :class:`EventNotFoundError` if there is none."""
        found = self.get_many([event_id]).get(event_id)
        if found is None:
            raise EventNotFoundError(f"no event with id {event_id} in {self.path}")
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
        return self._query(
            EventQuery("events", session_id, user_id, kind_tuple(kinds), after_id, before_id,
                       newest_first, limit)
        )  # fmt: skip

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
        """Like :meth:`events` newest first, but only the columns a prompt needs (fast). A
        compacted turn (see :mod:`pmm.retention.compaction`) shows its summary as its
        content where the backend keeps one."""
        return self._query(
            EventQuery("turns", session_id, user_id, kind_tuple(kinds), after_id, before_id,
                       True, limit)
        )  # fmt: skip

    def count(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> int:
        """How many events match."""
        q = EventQuery("count", session_id, user_id, kind_tuple(kinds))
        return int(self._query(q)[0])

    def last_id(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> int:
        """The id of the newest matching event, 0 when there is none."""
        q = EventQuery("last_id", session_id, user_id, kind_tuple(kinds))
        return int(self._query(q)[0])

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
        return self._query(EventQuery("ids", session_id, user_id, kind_tuple(kinds), after_id))

    def iter_events(self, *, batch: int = 1000, after_id: int = 0) -> Iterator[Event]:
        """Every event in id order, read in batches (for export, copies and backfills)."""
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

    def latest_summary(self, session_id: str, *, kind: str = "summary") -> Event | None:
        """The newest summary event of a session (the one in use), or None."""
        rows = self.events(session_id=session_id, kinds=(kind,), newest_first=True, limit=1)
        return rows[0] if rows else None

    # -- what the derived data lacks ---------------------------------------------------

    def undigested(
        self, *, kinds: Iterable[str], limit: int | None = None, after_id: int = 0
    ) -> list[Event]:
        """Events of these kinds that have text but no digest yet, oldest first."""
        q = EventQuery(kinds=tuple(kinds), after_id=after_id, limit=limit, undigested=True)
        return self._query(q)

    def count_undigested(self, *, kinds: Iterable[str]) -> int:
        """How many events of these kinds wait for a digest."""
        return int(self._query(EventQuery("count", kinds=tuple(kinds), undigested=True))[0])

    def unembedded(
        self, model: str, *, kinds: Iterable[str], limit: int | None = None
    ) -> list[Event]:
        """Events of these kinds with text and no vector of ``model`` yet, oldest first."""
        return self._query(EventQuery(kinds=tuple(kinds), limit=limit, unembedded=model))

    def count_unembedded(self, model: str, *, kinds: Iterable[str]) -> int:
        """How many events :meth:`unembedded` would return."""
        return int(self._query(EventQuery("count", kinds=tuple(kinds), unembedded=model))[0])

    def count_compacted(self) -> int:
        """Rows whose raw text was compacted away (they keep a summary)."""
        return int(self._query(EventQuery("count", compacted=True))[0])
