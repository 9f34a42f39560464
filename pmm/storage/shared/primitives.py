"""What a backend writes: the primitives the shared layer (:class:`pmm.storage.shared.SharedLog`)
builds every other call of :class:`pmm.storage.base.EventLog` from.

A backend subclasses ``SharedLog`` and defines each method below (instantiating it raises
``TypeError`` while one is missing)::

    class MyStore(SharedLog):
        def _query(self, query: EventQuery) -> list[Any]:
            ...   # the one filtered read of the events table
        def get_many(self, event_ids): ...
        ...

The private ones (``_query``, ``_vectors``, ...) take the small requests of
:mod:`pmm.storage.shared.query` and answer in plain rows; the public ones are calls of
the log that cannot be written above the storage (transactions, its own SQL, its search
index) and that the shared layer also reads through. Every primitive is one round trip
(or one transaction) where the backend can make it so: the hot paths (append, get_many,
events, search_text, embeddings) cost what the backend's own code costs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pmm.events.chain import CheckedEvent
    from pmm.records import Event
    from pmm.retention.erasure import ErasureReport
    from pmm.storage.shared.query import EventQuery, TextSearch
    from pmm.storage.terms import QueryTerms

EdgeSide = Literal["src", "dst"]
"""Which end of an edge :meth:`Primitives._edge_pairs` looks up by."""
GROUPED = ("kind", "session_id", "role", "digest_method")
"""The columns ``stats`` counts events by (:meth:`Primitives._counts_by`)."""


class Primitives(ABC):
    """The backend's part of the event log (see the module docstring)."""

    path: str
    max_content_bytes: int

    @abstractmethod
    def close(self) -> None:
        """Release the storage (connections, pool); the store cannot be used afterwards."""

    # -- reading ---------------------------------------------------------------------

    @abstractmethod
    def _query(self, query: EventQuery) -> list[Any]:
        """The rows ``query`` asks for (see :class:`~pmm.storage.shared.query.EventQuery`):
        Events, TurnRows or ids, or ``[n]`` for ``count`` and ``last_id``."""

    @abstractmethod
    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]:
        """The events with these ids that exist, by id."""

    # -- writing ---------------------------------------------------------------------

    @abstractmethod
    def _append_checked(self, checked: list[CheckedEvent], unique_meta: str | None) -> list[Event]:
        """Append checked entries (never empty) in one transaction, leaving out those whose
        session already holds ``meta[unique_meta]`` (checked under the write lock; a field
        that is not a plain name raises :class:`~pmm.errors.InvalidInputError` first)."""

    @abstractmethod
    def _assign(self, session_id: str, user_id: str, entry: CheckedEvent) -> Event:
        """In one transaction: check the session is assignable
        (:func:`pmm.storage.shared.writes.check_assignable`), give its rows ``user_id``,
        append ``entry`` and return it."""

    @abstractmethod
    def _erase(self, *, require_text: bool, **request: Any) -> ErasureReport:
        """Run the backend's erasure (``forget``'s keywords, plus its own options)."""

    # -- derived data ------------------------------------------------------------------

    @abstractmethod
    def _edge_pairs(
        self, side: EdgeSide, ids: Sequence[int], kinds: Sequence[str]
    ) -> list[tuple[int, int]]:
        """``(src, dst)`` of the edges of ``kinds`` whose ``side`` end is in ``ids``,
        ordered by that end, then by the other."""

    @abstractmethod
    def _vectors(
        self, model: str, *, after_id: int = 0, ids: Sequence[int] | None = None
    ) -> list[tuple[int, bytes]]:
        """``(event_id, float32 bytes)`` of ``model``'s vectors by event id: those above
        ``after_id``, or (``ids``, sorted and distinct) those of these events."""

    @abstractmethod
    def embedding_models(self) -> dict[str, int]:
        """How many vectors each model has stored."""

    @abstractmethod
    def _expiry_write(self, rows: list[tuple[int, float, float]]) -> None:
        """Record ``(event_id, ttl_minutes, expires_at)`` rows, replacing earlier ones."""

    @abstractmethod
    def _expiry_refresh(self, ids: list[int], now: float) -> int:
        """Push back to ``now`` + TTL the expiry of those of ``ids`` (sorted, distinct, not
        empty) not yet expired; how many."""

    @abstractmethod
    def _expiry_read(
        self, *, ids: list[int] | None = None, due_by: float | None = None
    ) -> list[tuple[int, float]]:
        """``(event_id, expires_at)`` by event id, of ``ids`` or of those due by ``due_by``."""

    # -- statistics ------------------------------------------------------------------

    @abstractmethod
    def _counts_by(self, column: str) -> dict[str, int]:
        """Events per value of ``column`` (one of :data:`GROUPED`), most first."""

    @abstractmethod
    def _coverage(self) -> tuple[int, int, int]:
        """``(events, digested, with text)``."""

    @abstractmethod
    def _storage_stats(self) -> dict[str, Any]:
        """The backend's own figures for ``stats`` (bytes used, schema version, ...)."""

    # -- search ----------------------------------------------------------------------

    @abstractmethod
    def sync_search_index(self) -> int:
        """Index what was appended since the last call; how many events."""

    @abstractmethod
    def search_index_upto(self) -> int:
        """The newest event id the keyword index holds."""

    @abstractmethod
    def _term_counts(self, words: list[str], indexed: int) -> dict[str, int]:
        """About how many of the ``indexed`` events hold each of ``words`` (0 for a blank)."""

    @abstractmethod
    def _ranked(self, terms: QueryTerms, search: TextSearch) -> list[tuple[int, float]]:
        """``(event_id, score)`` best first for the picked ``terms`` (by recency, score 0,
        when ``terms.common``)."""

    @abstractmethod
    def _symbol_hits(self, needles: list[str], search: TextSearch) -> list[tuple[int, float]]:
        """``(event_id, needles found)`` of the events whose text or summary holds one of
        ``needles`` (distinct, at most 8), most first, then newest."""
