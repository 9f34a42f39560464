"""What PMM needs from an event log, as one typed protocol.

:class:`pmm.storage.sqlite.EventStore` (SQLite) and
:class:`pmm.storage.postgres.PostgresEventStore` implement it, each as
:class:`pmm.storage.shared.SharedLog` (which writes most calls once) over its own
primitives (docs/design/storage.md), with the same meaning for every call: appends
extend one hash chain (see :mod:`pmm.events.chain`), derived data (digests, vectors,
edges) never touches the chain, and ``verify`` walks it. Each event may carry the
user (tenant) its session belongs to: an append without a user takes its session's, one
under another user is refused, and reads filter by ``user_id`` through an index.

    def archive(log: EventLog) -> None:
        for event in log.iter_events():
            ...
        assert log.verify().ok
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

from pmm.records import Event, NewEvent, TurnRow, VerifyReport

if TYPE_CHECKING:
    from datetime import datetime, timedelta

    from pmm.retention.compaction import CompactionReport
    from pmm.retention.erasure import ErasureReport


@runtime_checkable
class EventLog(Protocol):
    """The log: chained appends, reads, derived data, search, verification."""

    path: str
    """Where the log lives, for messages: a file path, or a URL without its password."""

    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> None: ...

    # writing
    def append(
        self,
        kind: str,
        content: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        meta: dict[str, Any] | None = None,
        ts: datetime | str | None = None,
    ) -> Event: ...
    def append_many(
        self, entries: Iterable[NewEvent], *, unique_meta: str | None = None
    ) -> list[Event]: ...
    def redact(self, event_id: int, *, reason: str) -> Event: ...
    def import_events(
        self, events: Iterable[Event], *, keys: Iterable[tuple[str, bytes]] = ()
    ) -> VerifyReport: ...
    def chain_keys(self, user_id: str | None = None) -> list[tuple[str, bytes]]: ...
    def forget(
        self,
        *,
        event_ids: Iterable[int] | None = None,
        session_id: str | None = None,
        session_ids: Iterable[str] | None = None,
        match: str | None = None,
        reason: str,
        dry_run: bool = False,
        identifiers_of: str | None = None,  # her every event: her ids and chain key go too
    ) -> ErasureReport: ...
    def compact(
        self, *, older_than: str | timedelta, session_id: str | None = None, dry_run: bool = False
    ) -> CompactionReport: ...
    def count_compacted(self) -> int: ...  # rows whose raw text compaction dropped

    # reading
    def get(self, event_id: int) -> Event: ...
    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]: ...
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
    ) -> list[Event]: ...
    def turn_rows(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        before_id: int | None = None,
        limit: int | None = None,
        user_id: str | None = None,
    ) -> list[TurnRow]: ...
    def iter_events(self, *, batch: int = 1000, after_id: int = 0) -> Iterator[Event]: ...
    def head(self) -> Event | None: ...
    def count(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> int: ...
    def last_id(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> int: ...
    def event_ids(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        user_id: str | None = None,
    ) -> list[int]: ...

    # users (tenants): a session belongs to one user
    def session_owner(self, session_id: str) -> tuple[bool, str | None]: ...
    def assign_user(self, session_id: str, user_id: str, *, reason: str = "") -> Event: ...

    # derived data
    def undigested(
        self, *, kinds: Iterable[str], limit: int | None = None, after_id: int = 0
    ) -> list[Event]: ...
    def count_undigested(self, *, kinds: Iterable[str]) -> int: ...
    def set_digests(self, digests: Iterable[tuple[int, str, Sequence[str], str]]) -> int: ...
    def put_embeddings(self, model: str, dim: int, vectors: Iterable[tuple[int, bytes]]) -> int: ...
    def embeddings(self, model: str, *, after_id: int = 0) -> list[tuple[int, bytes]]: ...
    def embeddings_of(self, model: str, ids: Sequence[int]) -> list[tuple[int, bytes]]: ...
    def embedding_models(self) -> dict[str, int]: ...
    def unembedded(
        self, model: str, *, kinds: Iterable[str], limit: int | None = None
    ) -> list[Event]: ...
    def count_unembedded(self, model: str, *, kinds: Iterable[str]) -> int: ...
    def delete_embeddings(self, model: str) -> int: ...
    def embedding_stats(self, model: str) -> tuple[int, int, int]: ...
    def data_version(self) -> tuple[int, int]: ...
    def add_edges(self, edges: Iterable[tuple[int, int, str]]) -> None: ...
    def edges_from(self, src: int, kind: str) -> list[int]: ...

    # consolidation: session summaries, edges, supersession
    def summary_candidates(self, *, kinds: Iterable[str]) -> list[tuple[str, int, int]]: ...
    def summary_turns(self, session_id: str, *, kinds: Iterable[str], upto: int) -> list[Event]: ...
    def latest_summary(self, session_id: str, *, kind: str = "summary") -> Event | None: ...
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
    ) -> tuple[Event, bool]: ...
    def edge_targets(self, srcs: Iterable[int], kind: str) -> dict[int, list[int]]: ...
    def edge_sources(
        self, dsts: Iterable[int], kind: str | Sequence[str]
    ) -> dict[int, list[int]]: ...
    def max_edge_src(self, kind: str) -> int: ...
    def append_supersession(
        self, marker: NewEvent, *, newer: int, older: int, kind: str
    ) -> Event | None: ...

    # lookups by a meta field (LangChain v1 middleware, LangGraph store)
    def stored_meta_values(
        self, *, session_id: str, field: str, values: Iterable[str]
    ) -> set[str]: ...
    def latest_per_meta_key(
        self,
        *,
        kinds: Iterable[str],
        field: str,
        session_id: str | None = None,
        session_prefix: str | None = None,
        value: str | None = None,
    ) -> list[Event]: ...

    # LangGraph store TTL (store_expiry: not chained; expires_at in Unix seconds)
    def set_expiry(self, rows: Iterable[tuple[int, float, float]]) -> None: ...
    def refresh_expiry(self, event_ids: Iterable[int], now: float) -> int: ...
    def expiry(self, event_ids: Iterable[int]) -> dict[int, float]: ...
    def expired(self, now: float) -> list[int]: ...

    # search, statistics, verification
    def sync_search_index(self) -> int: ...
    def search_index_upto(self) -> int: ...
    def document_frequencies(self, words: Iterable[str]) -> dict[str, int]: ...
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
        user_id: str | None = None,
    ) -> list[tuple[int, float]]: ...
    def search_symbols(
        self,
        needles: Sequence[str],
        *,
        limit: int = 10,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> list[tuple[int, float]]: ...
    def stats(self) -> dict[str, Any]: ...
    def verify(
        self, *, expect_head: str | None = None, user_id: str | None = None
    ) -> VerifyReport: ...
