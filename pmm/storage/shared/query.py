"""The requests the shared layer hands a backend's primitives, as small immutable records
(named tuples: built in a fraction of a microsecond, on the hot read paths).

    q = EventQuery(select="count", session_id="alice", kinds=("prompt", "response"))
    store._query(q)          # [12]: the backend's one query of the events table

One :class:`EventQuery` spells every filtered read of the events table (``events``,
``turn_rows``, ``event_ids``, ``count``, ``last_id``, ``undigested``, ``unembedded``, ...);
one :class:`TextSearch` every keyword search. A backend turns them into its own SQL (or
whatever it stores in); the shared layer never needs to know which one it talks to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple

Select = Literal["events", "turns", "ids", "count", "last_id"]
"""What an :class:`EventQuery` returns: ``events`` (:class:`~pmm.records.Event` rows),
``turns`` (:class:`~pmm.records.TurnRow`: the columns a prompt needs, a compacted turn's
summary standing in for its text where the backend keeps one), ``ids``, or one number in a
one-item list: ``count`` of the matching rows, ``last_id`` (the largest id, 0 for none)."""


def kind_tuple(kinds: Iterable[str] | None) -> tuple[str, ...] | None:
    """``kinds`` as a tuple (a lone string is one kind), None for every kind."""
    if kinds is None:
        return None
    return (kinds,) if isinstance(kinds, str) else tuple(kinds)


class EventQuery(NamedTuple):
    """One filtered read of the events table, in id order (newest first when asked).

    The filters combine with AND; ``None`` leaves a filter out. ``undigested`` keeps rows
    that hold text and no digest yet; ``unembedded`` (a model name) rows that hold text and
    no vector of that model; ``compacted`` rows whose raw text compaction dropped (they
    keep a summary). ``limit`` does not apply to ``count`` and ``last_id``.
    """

    select: Select = "events"
    session_id: str | None = None
    user_id: str | None = None
    kinds: tuple[str, ...] | None = None
    after_id: int | None = None
    before_id: int | None = None
    newest_first: bool = False
    limit: int | None = None
    undigested: bool = False
    unembedded: str | None = None
    compacted: bool = False


class TextSearch(NamedTuple):
    """Where and how a keyword search ranks: its key (``turn``, ``content``, ``digest``,
    ``window``), how many hits, its scope (session, user, kinds) and, for the window key,
    the weight of the date column against the text."""

    key: str = "turn"
    limit: int = 10
    session_id: str | None = None
    kinds: tuple[str, ...] | None = None
    user_id: str | None = None
    date_weight: float = 1.0
