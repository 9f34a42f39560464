"""What PMM needs from an event log, as one typed protocol.

:class:`pmm.store.EventStore` (SQLite) and
:class:`pmm.storage.postgres.PostgresEventStore` implement it, with the same meaning for
every call: appends extend one hash chain (see :mod:`pmm.chain`), derived data (digests,
vectors, edges) never touches the chain, and ``verify`` walks it.

    def archive(log: EventLog) -> None:
        for event in log.iter_events():
            ...
        assert log.verify().ok
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, Self, runtime_checkable

from ..records import Event, NewEvent, TurnRow, VerifyReport


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
    ) -> Event: ...
    def append_many(self, entries: Iterable[NewEvent]) -> list[Event]: ...
    def redact(self, event_id: int, *, reason: str) -> Event: ...
    def import_events(self, events: Iterable[Event]) -> VerifyReport: ...

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
    ) -> list[Event]: ...
    def turn_rows(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        before_id: int | None = None,
        limit: int | None = None,
    ) -> list[TurnRow]: ...
    def iter_events(self, *, batch: int = 1000, after_id: int = 0) -> Iterator[Event]: ...
    def head(self) -> Event | None: ...
    def count(
        self, *, session_id: str | None = None, kinds: Iterable[str] | None = None
    ) -> int: ...
    def last_id(
        self, *, session_id: str | None = None, kinds: Iterable[str] | None = None
    ) -> int: ...
    def event_ids(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
    ) -> list[int]: ...

    # derived data
    def undigested(
        self, *, kinds: Iterable[str], limit: int | None = None, after_id: int = 0
    ) -> list[Event]: ...
    def count_undigested(self, *, kinds: Iterable[str]) -> int: ...
    def set_digests(self, digests: Iterable[tuple[int, str, Sequence[str], str]]) -> int: ...
    def put_embeddings(self, model: str, dim: int, vectors: Iterable[tuple[int, bytes]]) -> int: ...
    def embeddings(self, model: str, *, after_id: int = 0) -> list[tuple[int, bytes]]: ...
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

    # search, statistics, verification
    def sync_search_index(self) -> int: ...
    def search_index_upto(self) -> int: ...
    def search_text(
        self,
        query: str,
        *,
        limit: int = 10,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        sync: bool = True,
    ) -> list[tuple[int, float]]: ...
    def stats(self) -> dict[str, Any]: ...
    def verify(self, *, expect_head: str | None = None) -> VerifyReport: ...
