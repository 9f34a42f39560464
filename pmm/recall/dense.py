"""The dense ranker's list: the store's own vector index where it has one (PostgreSQL with
pgvector), else PMM's exact in-memory one (:class:`~pmm.embed.index.VectorIndex`), which
hybrid recall searches on the query-encoding thread while the keyword rankers search.

    from pmm.recall.dense import dense_ids, worker_search

    ids = dense_ids(store, embedder, index, vector, 50, kinds=("prompt", "response"))
    search = worker_search(store, index, 50, kinds=("prompt", "response"))  # None: pgvector
    vector, found = query_vectors.start_then("where do I live?", search)
    ...                      # the keyword rankers search on this thread meanwhile
    found.result()           # the ids of dense_ids(..., vector.result(), ...), or None:
                             # the index was busy, dense_ids() searches it in line

Why on the worker: over 100,000 vectors the in-memory search takes about 6 ms, spent in
numpy (BLAS, argpartition) that releases the GIL, so it overlaps the keyword rankers'
SQLite work on a second core; it was run on the calling thread after them. The store is
read on the calling thread only (:meth:`~pmm.embed.index.VectorIndex.searcher` reads what
the search needs before it is handed over), and the worker never waits for an index's lock:
it is the one thread of every store's recall in the process, and an index's lock can be held
through a wait on its store (a refresh while an erasure scrubs the file), which would hold up
the recall of every other store. A store that searches vectors itself does so
through its own connection, which the calling thread is using: that search stays in line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from pmm.errors import ConfigurationError

if TYPE_CHECKING:
    from pmm.embed.base import Embedder
    from pmm.embed.index import VectorIndex
    from pmm.storage.base import EventLog

__all__ = ["dense_ids", "worker_search"]

Vector = npt.NDArray[np.float32]


def dense_ids(
    store: EventLog,
    embedder: Embedder,
    index: Callable[[], VectorIndex | None],
    vector: npt.NDArray[np.float32],
    depth: int,
    *,
    session_id: str | None = None,
    kinds: tuple[str, ...],
    excluded: frozenset[int] | set[int] = frozenset(),
    user_id: str | None = None,
) -> list[int]:
    """The dense ranker's ids: the store's server-side vector index where it has one
    (PostgreSQL with pgvector), else the exact in-memory search of ``index()`` (called
    only then: it may load every vector on first use)."""
    served = getattr(store, "search_vectors", None)
    if served is not None:
        found = served(
            embedder.model_name, vector, depth, session_id=session_id, kinds=kinds,
            exclude_ids=excluded, **({} if user_id is None else {"user_id": user_id}),
        )  # fmt: skip
        if found is not None:
            return [i for i, _ in found]
    vectors = index()
    if vectors is None:
        raise ConfigurationError("semantic recall needs an embedder")
    found = vectors.search(
        vector, depth, session_id=session_id, kinds=kinds, exclude_ids=excluded,
        user_id=user_id,
    )  # fmt: skip
    return [i for i, _ in found]


def worker_search(
    store: EventLog,
    index: Callable[[], VectorIndex | None],
    depth: int,
    *,
    session_id: str | None = None,
    kinds: tuple[str, ...],
    excluded: frozenset[int] | set[int] = frozenset(),
    user_id: str | None = None,
) -> Callable[[Vector], list[int] | None] | None:
    """:func:`dense_ids` of the in-memory index as a function of the query vector that
    reads no store (safe to run on another thread while this one searches the store):
    what it reads (vectors added since, the scope's ids) is read here, now. The function
    returns None where it would wait (the index busy: the caller calls :func:`dense_ids`).
    None where the store searches vectors itself (its search stays on the calling
    thread)."""
    if getattr(store, "search_vectors", None) is not None:
        return None
    vectors = index()
    if vectors is None:
        raise ConfigurationError("semantic recall needs an embedder")
    search = vectors.searcher(session_id=session_id, kinds=kinds, user_id=user_id)

    def ids(vector: Vector) -> list[int] | None:
        found = search(vector, depth, excluded)
        return None if found is None else [i for i, _ in found]

    return ids
