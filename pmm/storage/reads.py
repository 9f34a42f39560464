"""Reads that every backend derives from its own ``events()`` query, written once.

class MyStore(EventReads):
    def events(self, *, after_id=None, newest_first=False, limit=None, **filters):
        ...  # the backend's one query

store.head()                   # the newest event, or None
for event in store.iter_events(batch=500):
    ...                        # every event in id order, read in batches
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pmm.records import Event


class EventReads:
    """``head`` and ``iter_events`` over a backend's ``events`` (which it must define)."""

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
        raise NotImplementedError  # each backend's own query

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
