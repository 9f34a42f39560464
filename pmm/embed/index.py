"""Cosine search over one model's vectors, cached in memory as a float32 matrix.

    from pmm.embed.index import VectorIndex

    index = VectorIndex(store, embedder.model_name, embedder.dim)
    [query] = embedder.embed(["where do I live?"])
    index.search(query, 5, session_id="alice", kinds=("prompt", "response"))
    # -> [(event_id, cosine), ...] best first

The cache follows the store without being told: before each search it asks the store
whether the file changed at all (:meth:`EventStore.data_version`, microseconds); only when
it did, it reads the vectors added above the newest one it holds, drops the vectors of
events redacted since (the ``redaction`` events name them), and compares a fingerprint of
the model's vectors (count, sum of event ids and in-place replacements, kept by triggers
in constant time) with its own. Any other difference (a vector deleted some other way, an
older event embedded after newer ones, a vector overwritten) makes it reload the model's
vectors in full. Only vectors stored under ``model_name`` are ever read, so a search never
mixes two models.

A big matrix (:data:`QUANTIZED_MIN` vectors or more) is searched in two passes: the sign
bits of every vector (48 bytes for 384 dimensions) are compared with the query's by Hamming
distance, and the few thousand nearest are scored exactly in float32, so every returned
score is the exact cosine and only the choice of the shortlist is approximate (how much of
the exact top k it keeps on real MiniLM vectors: docs/benchmarks/vector-quality.md, by
``bench/vector_quality.py`` at ``179830b``). A smaller matrix, or a search restricted to a
session, is scored exactly in one pass. ``quantized_min`` and ``shortlist_min`` tune this
per index.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pmm.embed import scoring
from pmm.embed.matrix import VectorRows
from pmm.embed.scoring import (
    QUANTIZED_MIN,
    SHORTLIST_MIN,
    SHORTLIST_PER_K,
    BoolArray,
    FloatArray,
    IdArray,
)
from pmm.errors import InvalidInputError

if TYPE_CHECKING:
    from pmm.storage.base import EventLog

log = logging.getLogger(__name__)

REDACTION_KIND = "redaction"
"""Kind of the event :meth:`EventStore.redact` appends; its ``meta["target"]`` is the id."""


def _kinds_key(kinds: Iterable[str] | str | None) -> tuple[str, ...] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str):
        return (kinds,)
    return tuple(sorted(set(kinds)))


class VectorIndex:
    """The vectors of ``model_name`` (each ``dim`` float32 values) in one matrix, searched
    exactly by cosine similarity. Safe to share between threads.

    Vectors whose size does not match ``dim`` (stored by another model that used the same
    name) are left out, with one warning per refresh that finds any.
    """

    def __init__(
        self,
        store: EventLog,
        model_name: str,
        dim: int,
        *,
        quantized_min: int = QUANTIZED_MIN,
        shortlist_min: int = SHORTLIST_MIN,
    ) -> None:
        if not isinstance(dim, int) or dim <= 0:
            raise InvalidInputError(f"dim must be a positive int, got {dim!r}")
        self.store = store
        self.model_name = model_name
        self.dim = dim
        self.quantized_min = quantized_min
        """Candidate sets this big are searched by sign bits first, then exactly (pass a
        huge number for exact search everywhere, 0 for the two passes everywhere)."""
        self.shortlist_min = shortlist_min
        self.shortlist_per_k = SHORTLIST_PER_K
        """The bit pass keeps ``max(shortlist_min, shortlist_per_k * k)`` candidates."""
        self.reloads = 0
        """How many times the cache was rebuilt from scratch (the first load included)."""
        self._lock = threading.RLock()
        self._rows = VectorRows(dim)
        self._replaced = 0
        self._max_id = 0
        self._skipped: dict[int, int] = {}
        self._events_seen = 0
        self._token: tuple[int, int] | None = None
        self._loaded = False
        self._masks: dict[tuple[str, ...], BoolArray] = {}
        self._pool: ThreadPoolExecutor | None = None

    @property
    def _n(self) -> int:
        return self._rows.n

    def __len__(self) -> int:
        """Vectors held now (as of the last refresh)."""
        return self._n

    def __repr__(self) -> str:
        return f"VectorIndex({self.model_name!r}, dim={self.dim}, vectors={self._n})"

    @property
    def ids(self) -> IdArray:
        """Event ids of the vectors held, ascending (a copy)."""
        with self._lock:
            return self._rows.held.copy()

    def stats(self) -> dict[str, Any]:
        """Vectors held, vectors left out for a wrong size, full reloads so far."""
        with self._lock:
            return {
                "model": self.model_name,
                "dim": self.dim,
                "vectors": self._n,
                "wrong_size": len(self._skipped),
                "reloads": self.reloads,
                "bytes": self._rows.nbytes(),
            }

    def invalidate(self) -> None:
        """Forget the cache; the next search reloads every vector of the model."""
        with self._lock:
            self._loaded = False
            self._token = None

    # -- keeping in step with the store -----------------------------------------------

    def refresh(self) -> None:
        """Bring the cache in step with the store (see the module docstring)."""
        with self._lock:
            token = self.store.data_version()
            if self._loaded and token == self._token:
                return
            if not self._loaded:
                self._reload()
            else:
                self._append(self.store.embeddings(self.model_name, after_id=self._max_id))
                self._drop_redacted()
                count, id_sum, replaced = self.store.embedding_stats(self.model_name)
                held = self._n + len(self._skipped)
                held_sum = self._rows.id_sum + sum(self._skipped)
                if (count, id_sum, replaced) != (held, held_sum, self._replaced):
                    log.debug(
                        "vectors of %s changed out of order (%d stored, %d held): reloading",
                        self.model_name,
                        count,
                        held,
                    )
                    self._reload()
            self._token = token

    def _reload(self) -> None:
        self._events_seen = self.store.last_id()
        self._replaced = self.store.embedding_stats(self.model_name)[2]
        rows = self.store.embeddings(self.model_name)
        self._rows = VectorRows(self.dim, len(rows))
        self._max_id = 0
        self._skipped = {}
        self._masks = {}
        self._append(rows)
        self._loaded = True
        self.reloads += 1

    def _append(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Add vectors of event ids above every id held (the store returns them sorted)."""
        if not rows:
            return
        size = self.dim * 4
        good = [(i, b) for i, b in rows if len(b) == size]
        wrong = {i: len(b) for i, b in rows if len(b) != size}
        if wrong:
            self._skipped.update(wrong)
            log.warning(
                "%d vectors stored under %r are %s bytes, not %d (dim %d): they are left out "
                "of semantic search; drop them with store.delete_embeddings(%r) and embed "
                "again",
                len(wrong),
                self.model_name,
                sorted(set(wrong.values())),
                size,
                self.dim,
                self.model_name,
            )
        self._max_id = max(self._max_id, rows[-1][0], *wrong)
        if not good:
            return
        self._rows.add(good)

    def _drop_redacted(self) -> None:
        """Drop the vectors of events redacted since the last look."""
        newest = self.store.last_id()
        if newest <= self._events_seen:
            return
        marker_ids = self.store.event_ids(kinds=(REDACTION_KIND,), after_id=self._events_seen)
        self._events_seen = newest
        if not marker_ids:
            return
        targets: set[int] = set()
        for marker in self.store.get_many(marker_ids).values():
            target = marker.meta.get("target")
            if isinstance(target, int):
                targets.add(target)
            many = marker.meta.get("targets")  # pmm.storage.sqlite.erasure.forget of several events
            if isinstance(many, list):
                targets.update(t for t in many if isinstance(t, int))
        self._remove(targets)

    def _remove(self, event_ids: Iterable[int]) -> None:
        wanted = np.fromiter(event_ids, dtype=np.int64)
        for event_id in wanted.tolist():
            self._skipped.pop(event_id, None)
        rows = self._rows.rows_of(wanted)
        if not rows.size:
            return
        keep = self._rows.remove(rows)
        # a mask may cover fewer rows than are held (rows appended since it was last used)
        self._masks = {key: mask[keep[: len(mask)]] for key, mask in self._masks.items()}

    @property
    def version(self) -> tuple[int, int, int]:
        """Changes whenever the vectors held change (reloads, rows held, their ids' sum):
        a reader caching sums of them (:meth:`vector_sums`) compares it."""
        with self._lock:
            return self.reloads, self._rows.n, self._rows.id_sum

    def vector_sums(self, groups: Sequence[Sequence[int]]) -> FloatArray:
        """Per group of event ids, the sum of the (normalised) vectors held of them, one
        row each (zeros where none is held), as of the last refresh (a search refreshes):
        the session ranks' mean turn vectors (:mod:`pmm.recall.session_rank`)."""
        with self._lock:
            out = np.zeros((len(groups), self.dim), dtype=np.float32)
            held = self._rows.held
            if not self._rows.n:
                return out
            for n, ids in enumerate(groups):
                wanted = np.asarray(ids, dtype=np.int64)
                pos = np.minimum(np.searchsorted(held, wanted), self._rows.n - 1)
                rows = pos[held[pos] == wanted]
                if rows.size:
                    out[n] = self._rows.matrix[rows].sum(axis=0)
            return out

    # -- search --------------------------------------------------------------------------

    def _kind_mask(self, key: tuple[str, ...]) -> BoolArray:
        """Which rows hold events of these kinds (kinds never change: extended as rows
        are appended, never recomputed)."""
        mask = self._masks.get(key)
        have = 0 if mask is None else len(mask)
        if mask is None or have < self._n:
            new_ids = self._rows.ids[have : self._n]
            of_kind = np.asarray(
                self.store.event_ids(kinds=key, after_id=int(new_ids[0]) - 1), dtype=np.int64
            )
            extra = np.isin(new_ids, of_kind, assume_unique=True)
            mask = extra if mask is None else np.concatenate([mask, extra])
            if len(self._masks) >= 16:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = mask
        return mask

    def _scoring_pool(self) -> ThreadPoolExecutor | None:
        """Threads for scoring a big matrix in slices (made once the index is big)."""
        if (
            self._pool is None
            and scoring.WORKERS > 1
            and self._n * self.dim >= scoring.PARALLEL_MIN
        ):
            self._pool = ThreadPoolExecutor(scoring.WORKERS, thread_name_prefix="pmm-vectors")
        return self._pool

    def _scope(
        self, session_id: str | None, key: tuple[str, ...] | None, user_id: str | None
    ) -> IdArray | None:
        """The event ids of the session or user (and kinds), read from the store; None for
        a search of every session."""
        if session_id is None and user_id is None:
            return None
        if session_id is None:
            ids = self.store.event_ids(user_id=user_id, kinds=key)
        elif user_id is None:
            ids = self.store.event_ids(session_id=session_id, kinds=key)
        else:
            ids = self.store.event_ids(session_id=session_id, kinds=key, user_id=user_id)
        return np.asarray(ids, dtype=np.int64)

    def search(
        self,
        query_vec: npt.ArrayLike,
        k: int,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | str | None = None,
        allowed_ids: Iterable[int] | None = None,
        exclude_ids: Iterable[int] = (),
        user_id: str | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` events most similar to ``query_vec``: ``(event_id, cosine)``, best
        first. ``session_id``, ``user_id``, ``kinds`` and ``allowed_ids`` restrict the
        candidates (all given ones apply; a user's candidates are read from the log's index
        of her events, so the cost follows her vectors, not everyone's); ``exclude_ids``
        are never returned."""
        query = self._unit(query_vec)
        if k <= 0:
            return []
        key = _kinds_key(kinds)
        with self._lock:
            self.refresh()
            if not self._n:
                return []
            scope = self._scope(session_id, key, user_id)
            return self._search_held(query, k, key, scope, allowed_ids, exclude_ids)

    def searcher(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | str | None = None,
        user_id: str | None = None,
    ) -> Callable[[npt.ArrayLike, int, Iterable[int]], list[tuple[int, float]] | None]:
        """:meth:`search` in two steps: reads from the store now, on this thread, what a
        search of this scope needs (the vectors added since the last look, the session's or
        user's event ids, the kinds' rows), and returns the search itself, ``(query_vec, k,
        exclude_ids)``, which reads no store and never waits for this index's lock: another
        thread can run it while this one uses the store (recall runs it on the process's
        one query-encoding thread, which every store's recall shares). Its results are
        :meth:`search`'s as of this call; it returns None instead (the caller searches with
        :meth:`search`) when the lock is held by another thread (a refresh, which may be
        waiting on the store: an erasure holds it while it scrubs the file) or when vectors
        came in since whose kinds only the store knows.

        >>> search = index.searcher(kinds=("prompt", "response"))  # doctest: +SKIP
        >>> pool.submit(search, query, 50, ()).result()             # doctest: +SKIP
        [(12, 0.61), (40, 0.57), ...]
        """
        key = _kinds_key(kinds)
        with self._lock:
            self.refresh()
            scope = self._scope(session_id, key, user_id)
            if key is not None and scope is None and self._n:
                self._kind_mask(key)  # extended here, not on the searching thread

        def search(
            query_vec: npt.ArrayLike, k: int, exclude_ids: Iterable[int] = ()
        ) -> list[tuple[int, float]] | None:
            query = self._unit(query_vec)
            if k <= 0:
                return []
            if not self._lock.acquire(blocking=False):
                return None
            try:
                if not self._n:
                    return []
                if key is not None and scope is None and len(self._masks.get(key, ())) < self._n:
                    return None  # rows came in since (another thread refreshed): not read here
                return self._search_held(query, k, key, scope, None, exclude_ids)
            finally:
                self._lock.release()

        return search

    def _unit(self, query_vec: npt.ArrayLike) -> FloatArray:
        """The query vector checked and normalised (InvalidInputError when it cannot be)."""
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise InvalidInputError(
                f"query vector has {query.shape[0]} dimensions, this index holds {self.dim}"
            )
        norm = float(np.linalg.norm(query))
        if not np.isfinite(norm) or norm == 0.0:
            raise InvalidInputError("query vector must be finite and non-zero")
        return query / norm

    def _search_held(
        self,
        query: FloatArray,
        k: int,
        key: tuple[str, ...] | None,
        scope: IdArray | None,
        allowed_ids: Iterable[int] | None,
        exclude_ids: Iterable[int],
    ) -> list[tuple[int, float]]:
        """The search over the vectors held (the lock held; ``scope``: :meth:`_scope`)."""
        candidates = scope
        if allowed_ids is not None:
            allowed = np.unique(np.fromiter(allowed_ids, dtype=np.int64))
            candidates = allowed if scope is None else np.intersect1d(scope, allowed)
        return self._rows.search(
            query,
            k,
            candidates=candidates,
            kind_mask=None if key is None or scope is not None else self._kind_mask(key),
            excluded=np.fromiter(exclude_ids, dtype=np.int64),
            quantized_min=self.quantized_min,
            keep=max(self.shortlist_min, self.shortlist_per_k * k),
            pool=self._scoring_pool(),
        )
