"""Query embeddings for recall: an LRU keyed by the query's text, and encoding on a worker
thread while the keyword rankers search.

    from pmm.recall.query_vectors import QueryVectors

    vectors = QueryVectors(embedder, size=256)
    pending = vectors.start("where do I live?")   # the model runs on a worker thread
    ...                                             # BM25 searches on this thread meanwhile
    vector = pending.result()                       # float32 (dim,), read-only
    vectors.get("where do I live?")                 # cached now: no model call

Why a worker thread (``Recaller(background_encoding=False)`` embeds in line instead): a
query's embedding is the longest single step of hybrid recall (one torch thread runs MiniLM
over a dozen tokens, 15-30 ms on a small CPU) and the keyword rankers do not need it; torch
and SQLite release the GIL while they compute, so the two overlap on a second core.
Measured on the 2-core development machine with the same queries asked of both in turn
(load 1.3): hybrid p50 36.8 ms against 41.4 ms in line. Where no core is free it gains
nothing, and the model's forward, which takes the GIL back between its small torch calls,
can wait on the caller's Python work. The vector is the same either way.

An embedder with an ``embed_query(text)`` method (``SentenceEmbedder``) embeds queries
through it, so that ``PMM_QUERY_ENCODER=int8`` reaches them; documents never take it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import numpy.typing as npt

from pmm.embed.base import embed_texts
from pmm.errors import BackendError, PMMError
from pmm.models.redact import error_text

if TYPE_CHECKING:
    from pmm.embed.base import Embedder

__all__ = ["QueryVectors"]

Vector = npt.NDArray[np.float32]
T = TypeVar("T")

_WORKER: ThreadPoolExecutor | None = None
_WORKER_LOCK = threading.Lock()


def _worker() -> ThreadPoolExecutor:
    """The process's one query-encoding thread (started on first use): one is enough, as a
    model encodes one batch at a time under its own lock."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pmm-query-encoder")
        return _WORKER


class QueryVectors:
    """The embeddings of recall queries, cached in an LRU of ``size`` texts.

    :meth:`get` embeds on the calling thread; :meth:`start` on the process's query-encoding
    thread, returning a future. Either way a miss is embedded once, its time added to
    :attr:`encoder_seconds`, and the vector kept (read-only).

    >>> vectors = QueryVectors(embedder, size=2)   # doctest: +SKIP
    >>> vectors.get("hello").shape                  # doctest: +SKIP
    (384,)
    """

    def __init__(self, embedder: Embedder, size: int = 256) -> None:
        self.embedder = embedder
        self.size = size
        self.encoder_seconds = 0.0
        """Time spent embedding queries (cache misses), for benchmarks."""
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        """Forget every cached query embedding (benchmarks time cold queries with it)."""
        with self._lock:
            self._cache.clear()

    def cached(self, query: str) -> Vector | None:
        """The query's embedding when it is cached (marked as just used), else None."""
        with self._lock:
            vector = self._cache.get(query)
            if vector is not None:
                self._cache.move_to_end(query)
            return vector

    def get(self, query: str) -> Vector:
        """The query's embedding, from the cache or computed on this thread."""
        cached = self.cached(query)
        return cached if cached is not None else self._embed(query)

    def start(self, query: str, *, background: bool = True) -> Future[Vector]:
        """A future of the query's embedding: already done when it is cached (or when
        ``background`` is False: computed on this thread, its error raised here), else
        computed on the query-encoding thread (its error raised by ``result()``)."""
        if background and self.cached(query) is None:
            return _worker().submit(self._embed, query)
        done: Future[Vector] = Future()
        done.set_result(self.get(query))
        return done

    def start_then(
        self, query: str, then: Callable[[Vector], T]
    ) -> tuple[Future[Vector], Future[T]]:
        """Futures of the query's embedding and of ``then(embedding)``, both computed on the
        query-encoding thread, ``then`` right after the embedding (at once when it is
        cached): recall's in-memory dense search runs there while the keyword rankers search
        on the calling thread. An error of either is raised by its future's ``result()``
        (the embedding's by both).

        >>> vector, ids = vectors.start_then("hi", search)  # doctest: +SKIP
        >>> ids.result()                                     # doctest: +SKIP
        [12, 40, 7]
        """
        vector: Future[Vector] = Future()
        cached = self.cached(query)
        if cached is not None:
            vector.set_result(cached)
            return vector, _worker().submit(then, cached)

        def embed_then() -> T:
            try:
                found = self._embed(query)
            except BaseException as error:
                vector.set_exception(error)
                raise
            vector.set_result(found)
            return then(found)

        return vector, _worker().submit(embed_then)

    def _embed(self, query: str) -> Vector:
        started = time.perf_counter()
        embed_query = getattr(self.embedder, "embed_query", None)
        if callable(embed_query):
            try:
                raw = embed_query(query)
            except PMMError:
                raise
            except Exception as exc:  # redacted: an embedding service may echo its key
                detail = error_text(exc, self.embedder)
                raise BackendError(f"embedding the query failed: {detail}") from None
        else:
            raw = embed_texts(self.embedder, [query])[0]
        vector = np.asarray(raw, dtype=np.float32)
        vector.setflags(write=False)
        with self._lock:
            self.encoder_seconds += time.perf_counter() - started
            self._cache[query] = vector
            self._cache.move_to_end(query)
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return vector
