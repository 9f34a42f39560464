"""What changed in an event log since a reader that keeps rows in memory last looked.

    watch = LogWatch(store)
    token, rewritten = watch.look()     # rewritten: drop every kept row
    ...                                 # read the rows after the newest one kept
    token = watch.follows(events)       # after this process appended `events`:
    if token is not None:               # they are the only new rows; take them as given
        ...
        watch.advance(events, token)

The log only grows, except that a redaction or a compaction rewrites stored rows, and each
appends a marker event (:data:`CHANGE_KINDS`), and that ``pmm restore`` replaces the whole
file (seen as another event, or none, at the newest id seen). ``data_version`` changes on
any write, by this connection or another process, and costs a few microseconds; only when
it moved are the newest id, the event at the newest id seen and the markers since the last
look read. Not thread-safe: its owner's lock
guards it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pmm.records import Event
    from pmm.storage.base import EventLog

CHANGE_KINDS = ("redaction", "compaction")
"""Events that rewrite older rows: readers drop what they keep when one appears."""


class LogWatch:
    """The ``data_version`` and the newest id a reader has seen (see the module docstring)."""

    def __init__(self, store: EventLog) -> None:
        self.store = store
        self.token: tuple[int, int] | None = None
        """The store's ``data_version`` at the last look (None: never looked)."""
        self.seen_id = 0
        """Every change marker up to this id has been seen."""
        self.seen_hash: str | None = None
        """The hash of the event at ``seen_id``: another one there means the log was
        replaced (``pmm restore``), and every kept row is dropped."""

    def look(self) -> tuple[tuple[int, int], bool]:
        """``(data_version now, whether a change marker was appended since the last look)``."""
        token = self.store.data_version()
        rewritten = False
        if token != self.token:
            newest = self.store.last_id()
            if self.seen_id and self._hash_of(self.seen_id) != self.seen_hash:
                rewritten = True  # the log was replaced (pmm restore)
            elif newest > self.seen_id:
                rewritten = bool(self.store.event_ids(kinds=CHANGE_KINDS, after_id=self.seen_id))
            self.seen_id = newest
            self.seen_hash = self._hash_of(newest)
            self.token = token
        return token, rewritten

    def _hash_of(self, event_id: int) -> str | None:
        event = self.store.get_many([event_id]).get(event_id)
        return None if event is None else event.hash

    def follows(self, events: Sequence[Event], now: LogNow | None = None) -> tuple[int, int] | None:
        """The store's ``data_version`` now, when ``events`` (this process's append, one
        transaction) are the rows right after the newest id seen and still the newest
        rows, none of them a change marker: the reader may take them as given instead of
        reading them back (then :meth:`advance`). None otherwise: never looked, or a row
        another process appended before or in between them. ``now``: the store's state
        read once for every reader told about this append."""
        if self.token is None or not events:
            return None
        first, last = events[0].id, events[-1].id
        if first != self.seen_id + 1 or last - first != len(events) - 1:
            return None
        if any(e.kind in CHANGE_KINDS for e in events):
            return None
        token, newest = (now or LogNow(self.store)).read()
        return token if newest == last else None

    def advance(self, events: Sequence[Event], token: tuple[int, int]) -> None:
        """The reader took ``events`` as given (``token`` from :meth:`follows`)."""
        self.seen_id, self.token = events[-1].id, token
        self.seen_hash = events[-1].hash


class LogNow:
    """The store's ``data_version`` and newest id, read on first use and then kept: the
    readers told about one append share the two queries. The version is read first, so a
    row appended between the two reads shows as a newer id, and one appended after them
    changes the version that the next look compares."""

    def __init__(self, store: EventLog) -> None:
        self.store = store
        self._read: tuple[tuple[int, int], int] | None = None

    def read(self) -> tuple[tuple[int, int], int]:
        """``(data_version, newest id)``."""
        if self._read is None:
            token = self.store.data_version()
            self._read = token, self.store.last_id()
        return self._read
