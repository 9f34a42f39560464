"""Recall: the events most relevant to a query, found through several keys, each its own
ranker, fused by weighted reciprocal rank.

    from pmm.recall.recaller import Recaller

    recaller = Recaller(store, embedder)          # embedder=None: keyword rankers only
    for hit in recaller.recall("where do I live?", k=5, session_id="alice"):
        hit.event.content, hit.score, hit.rankers  # e.g. {'turn': 3, 'window': 1, 'dense': 9}

Rankers:

- ``turn``: BM25 over the event's own text (and its digest when there is one);
- ``window``: BM25 over the turn with its neighbouring turns of the same session and its
  conversation date in words (see :mod:`pmm.text.window_keys`) - hits are still single turns;
- ``dense``: cosine similarity of the single turn's embedding (never of the window);
- ``digest``: BM25 over the summary and keywords alone (weight 0 by default: measured not
  to help on top of ``turn``, which already holds them).

Fusion: in the modes :data:`pmm.recall.rerank.LEARNED_COEFFICIENTS` names (``hybrid``,
``keyword``), the rankers' candidates are ordered by a small linear model over their ranks
and cheap features of each turn (:mod:`pmm.recall.rerank`: a question turn, a person the
query names, its session's rank, :mod:`pmm.recall.session_rank`), chosen by cross-validation
on LoCoMo (``python bench/locomo.py --cv``). ``Recaller(..., learned=False)`` and weights set
by ``PMM_RECALL_WEIGHTS`` (``turn=1,window=1,dense=0.3``: used as given for every query)
keep the weighted reciprocal rank fusion of :mod:`pmm.recall.fusion`, whose default weights
adapt to the query (:class:`~pmm.recall.fusion.FusionPolicy`). ``semantic`` is ``dense``
alone. Slot questions ("what do I do for a living?"): :mod:`pmm.recall.slots`.

Query embeddings are cached (an LRU keyed by text) and, in hybrid mode, computed on a
worker thread while the keyword rankers search (:mod:`pmm.recall.query_vectors`), followed
there by the in-memory dense search (:mod:`pmm.recall.dense`);
:attr:`Recaller.encoder_seconds` is the time spent encoding. Where each ranker's list
comes from: :mod:`pmm.recall.sources`. Importing this module does not import torch or
sentence-transformers; only an embedder that loads a model does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, get_args

import numpy as np
import numpy.typing as npt

from pmm.embed.backfill import DEFAULT_KINDS
from pmm.errors import ConfigurationError, InvalidInputError
from pmm.recall.dense import dense_ids, worker_search
from pmm.recall.fusion import (
    DEFAULT_KEYWORD_POLICY,
    DEFAULT_KEYWORD_WEIGHTS,
    DEFAULT_POLICY,
    DEFAULT_WEIGHTS,
    KEYWORD_RANKERS,
    RANKERS,
    RRF_K,
    FusionChoice,
    FusionPolicy,
    parse_weights,
    rrf_fuse,
)
from pmm.recall.query_vectors import QueryVectors
from pmm.recall.rerank import LEARNED_COEFFICIENTS
from pmm.recall.session_rank import SessionRanks
from pmm.recall.slots import keyword_query, slot_first
from pmm.recall.sources import (
    checked_kinds,
    fused_hits,
    keyword_ids,
    learned_order,
    one_copy,
    policy_weights,
    query_weights,
    ranker_order,
    symbol_hits,
)
from pmm.records import Event, Hit
from pmm.text.window_keys import is_temporal
from pmm.text.words import symbol_needles, words

if TYPE_CHECKING:
    from pmm.embed.base import Embedder
    from pmm.embed.index import VectorIndex
    from pmm.recall.session_index import SessionRanker
    from pmm.recall.user_index import UserRanker
    from pmm.storage.base import EventLog

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_KEYWORD_POLICY",
    "DEFAULT_KEYWORD_WEIGHTS",
    "DEFAULT_POLICY",
    "DEFAULT_WEIGHTS",
    "KEYWORD_RANKERS",
    "RANKERS",
    "RECALL_MODES",
    "RRF_K",
    "TEMPORAL_DATE_WEIGHT",
    "RecallMode",
    "Recaller",
    "parse_weights",
    "rrf_fuse",
]
"""Fusion's weights and :func:`rrf_fuse` live in :mod:`pmm.recall.fusion`, and are here too."""

log = logging.getLogger(__name__)

RecallMode = Literal["hybrid", "keyword", "semantic"]
RECALL_MODES: tuple[str, ...] = get_args(RecallMode)
TEMPORAL_DATE_WEIGHT = 3.0
"""For a temporal question the date column of the window key weighs this much against
its text (measured neutral on the chat dataset: its "when" questions name no date)."""


DEFAULT_DEPTH = 50
"""How many candidates each ranker contributes at least (more when ``k`` is larger)."""


class Recaller:
    """Ranks a store's events against a query (see the module docstring).

    ``embedder`` enables the ``semantic`` ranker; without it ``hybrid`` recall is keyword
    recall (with one warning) and ``semantic`` recall raises
    :class:`~pmm.errors.ConfigurationError`. The vector cache is built on the first
    semantic search and kept in step with the store from then on. ``weights``: see
    :class:`~pmm.recall.fusion.FusionChoice`. Query embeddings are kept in an LRU of
    ``query_cache_size`` texts; a hybrid query is embedded, and the in-memory vectors
    searched, on a worker thread while the keyword rankers search
    (``background_encoding=False``: in line, the embedding before them, the search after).
    """

    def __init__(
        self,
        store: EventLog,
        embedder: Embedder | None = None,
        *,
        depth: int = DEFAULT_DEPTH,
        default_kinds: Sequence[str] = DEFAULT_KINDS,
        weights: Mapping[str, float] | str | None = None,
        query_cache_size: int = 256,
        summaries: bool = False,
        summary_prior: float = -0.05,
        summary_children: int = 2,
        session_ranker: bool = True,
        learned: bool = True,
        user_ranker: bool = True,
        background_encoding: bool = True,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.depth = depth
        self.default_kinds = tuple(default_kinds)
        fusion = FusionChoice.of(weights)
        self.weights = fusion.weights
        """Hybrid-mode weights: :data:`DEFAULT_WEIGHTS` with the given ones over them."""
        self.keyword_weights = fusion.keyword_weights
        """Keyword-mode weights: :data:`DEFAULT_KEYWORD_WEIGHTS` with the given ones."""
        self.policy, self.keyword_policy = fusion.policy, fusion.keyword_policy
        self.learned: dict[str, Mapping[str, float]] = (
            dict(LEARNED_COEFFICIENTS) if learned and not fusion.given else {}
        )
        """Mode -> the learned fusion's coefficients (:mod:`pmm.recall.rerank`), used instead of
        the weighted RRF in that mode; none when ``weights`` are given or ``learned`` is
        False."""
        self._query_cache_size = query_cache_size
        self.background_encoding = background_encoding
        self._vectors = None if embedder is None else QueryVectors(embedder, query_cache_size)
        self._index: VectorIndex | None = None
        self.session_ranker: SessionRanker | None = None
        """Ranks one session's turns in memory for session-scoped keyword rankers (see
        :mod:`pmm.recall.session_index`); None: every keyword ranker asks the store."""
        if session_ranker:
            from pmm.recall.session_index import SessionRanker

            self.session_ranker = SessionRanker(store)
        self.user_ranker: UserRanker | None = None
        """Ranks one user's turns (all her threads) in memory for user-scoped keyword
        rankers (see :mod:`pmm.recall.user_index`); None: they ask the store."""
        if user_ranker:
            from pmm.recall.user_index import UserRanker

            self.user_ranker = UserRanker(store)
        self.session_ranks = SessionRanks(store)  # the learned fusion's session features
        self._lock = threading.Lock()
        self._warned = False
        # Consolidation (pmm/dream/consolidation.py): summary nodes compete with turns and expand.
        self.summaries = summaries
        self.summary_prior = summary_prior
        self.summary_children = summary_children

    def __repr__(self) -> str:
        model = self.embedder.model_name if self.embedder is not None else None
        return f"Recaller({self.store.path!r}, embedder={model!r})"

    @property
    def index(self) -> VectorIndex | None:
        """The vector cache of the embedder's model (None without an embedder; built,
        and the model loaded, on first use)."""
        if self.embedder is None:
            return None
        with self._lock:
            if self._index is None:
                from pmm.embed.index import VectorIndex

                self._index = VectorIndex(self.store, self.embedder.model_name, self.embedder.dim)
            return self._index

    def recall(
        self,
        query: str,
        k: int = 10,
        *,
        session_id: str | None = None,
        mode: str = "hybrid",
        kinds: Iterable[str] | str | None = None,
        exclude_ids: Iterable[int] = (),
        sync_index: bool = True,
        user_id: str | None = None,
    ) -> list[Hit]:
        """The ``k`` events most relevant to ``query``, best first.

        ``session_id=None`` searches every session; ``user_id`` keeps to that user's
        sessions (every ranker filters by her first: no other user's event is a candidate).
        ``mode`` is ``hybrid`` (BM25 and cosine similarity, fused), ``keyword`` or
        ``semantic``. ``kinds`` defaults to the turn kinds (``prompt``, ``response``).
        ``exclude_ids`` (e.g. the turns already in the prompt) are left out before
        ranking. Text is searched as plain words: FTS5 syntax in ``query`` never raises.
        An empty query recalls nothing.
        ``sync_index=False`` lets the keyword ranker skip events appended since the last
        search (for a caller that already holds them, like the context's recent window).
        """
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a str, got {type(query).__name__}")
        if mode not in RECALL_MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(RECALL_MODES)}, got {mode!r}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise InvalidInputError(f"k must be an int >= 0, got {k!r}")
        if mode == "semantic" and self.embedder is None:
            raise ConfigurationError(
                "semantic recall needs embeddings: set PMM_ENABLE_EMBEDDINGS=1 (or "
                "enable_embeddings=True) and install pmm-memory[embeddings]"
            )
        if mode == "hybrid" and self.embedder is None:
            if not self._warned:
                self._warned = True
                log.warning(
                    "hybrid recall without embeddings (PMM_ENABLE_EMBEDDINGS is off): "
                    "falling back to keyword recall"
                )
            mode = "keyword"
        if k == 0 or not query.strip():
            return []
        kind_list = self.default_kinds if kinds is None else checked_kinds(kinds)
        if kinds is None and self.summaries:
            kind_list += ("summary",)
        excluded = set(exclude_ids)
        depth = max(self.depth, k) + len(excluded)
        needles = symbol_needles(query)
        if needles:  # no word, only symbols (emoji) that no index holds: a scan finds them
            return symbol_hits(
                self.store, needles, k, depth, session_id, kind_list, excluded, user_id
            )
        policy = {"semantic": _SEMANTIC, "keyword": self.keyword_policy}.get(mode, self.policy)
        temporal = is_temporal(words(query.lower()))
        date_weight = TEMPORAL_DATE_WEIGHT if temporal else 1.0
        searched = keyword_query(query)  # a slot question searches its slot's words

        def keyword(ranker: str) -> list[int]:
            return keyword_ids(
                self.store, self.session_ranker, self.user_ranker, searched, ranker,
                session_id=session_id, kinds=kind_list, depth=depth, date_weight=date_weight,
                sync=sync_index, excluded=excluded, user_id=user_id,
            )  # fmt: skip

        maybe = [policy.weights, *filter(None, (policy.temporal, policy.low_evidence))]
        coefficients = self.learned.get(mode) if "summary" not in kind_list else None
        weighs = [w.get("dense", 0) > 0 for w in maybe]
        learned_dense = any(f.startswith("dense") for f in coefficients or ())
        vector, found = None, None  # futures: the query vector, the dense ranker's list
        if (any(weighs) or learned_dense) and self._vectors is not None:
            background = self.background_encoding and mode != "semantic"
            search = None
            if background and (learned_dense or all(weighs)):  # surely searched: on the worker
                search = worker_search(
                    self.store, lambda: self.index, depth, session_id=session_id,
                    kinds=kind_list, excluded=excluded, user_id=user_id,
                )  # fmt: skip
            if search is None:  # in line, or the store's own vector search after the rankers
                vector = self._vectors.start(query, background=background)
            else:  # searched on the query-encoding thread while the rankers search
                vector, found = self._vectors.start_then(query, search)
        rankings: dict[str, list[int]] = {}
        if policy.needs_coverage:
            rankings["turn"] = keyword("turn")
        weights, coverage = policy_weights(
            self.store, policy, searched, temporal, rankings.get("turn", [])
        )
        rankings = {r: ids for r, ids in rankings.items() if weights.get(r, 0) > 0}
        order = ranker_order(list(rankings), weights, coefficients, vector is not None)
        for ranker in order:  # every keyword ranker before the query vector is awaited
            if ranker != "dense" and ranker not in rankings:
                rankings[ranker] = keyword(ranker)
        read: dict[int, Event] = {}
        pending = found if found is not None else vector
        if coefficients and pending is not None and not pending.done():
            # while the query is still being encoded (or searched): the keyword candidates'
            # rows and their sessions' terms, which the learned fusion reads next
            read = self.store.get_many(i for ids in rankings.values() for i in ids)
            self.session_ranks.hold(e.session_id or "" for e in read.values())
        on_worker = None if found is None else found.result()  # awaited: its error raised here
        if on_worker is not None:
            rankings["dense"] = on_worker
        elif "dense" in order and vector is not None:  # in line (the worker's index was busy)
            rankings["dense"] = self._semantic(
                vector.result(), depth, session_id, kind_list, excluded, user_id
            )
        rankings = {r: rankings[r] for r in order}  # the order the fusion reads them in
        if coefficients:
            ranks = self.session_ranks.bind(query, coefficients, vector, self.index)
            fused, read = learned_order(
                self.store, query, rankings, coefficients, temporal, coverage, ranks, read
            )
        else:
            fused, read = rrf_fuse(rankings, weights=weights), {}
        fused = fused if mode == "semantic" else slot_first(self.store, query, fused, read)
        hits = fused_hits(self.store, fused, k, user_id, read)
        from pmm.dream.consolidation import consolidated_hits  # the one consolidation hook

        return consolidated_hits(
            self.store,
            hits,
            query,
            k,
            children=self.summary_children if self.summaries else 0,
            prior=self.summary_prior,
        )

    def ranker_lists(
        self,
        query: str,
        *,
        depth: int = DEFAULT_DEPTH,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> dict[str, list[int]]:
        """Each ranker's event ids for ``query``, best first, ``depth`` deep, as
        :meth:`recall`'s learned fusion reads them (the turn kinds; the temporal date weight
        where the query is temporal; ``dense`` only with an embedder; repeats of one
        utterance as one, :func:`~pmm.recall.sources.one_copy`): what benchmarks fuse
        offline.

        >>> recaller.ranker_lists("where do I live?", depth=20)  # doctest: +SKIP
        {'turn': [12, 3], 'window': [12, 11, 13, 3], 'digest': [], 'dense': [12, 40, ...]}
        """
        date_weight = TEMPORAL_DATE_WEIGHT if is_temporal(words(query.lower())) else 1.0
        kinds = self.default_kinds
        out = {r: keyword_ids(
            self.store, self.session_ranker, self.user_ranker, keyword_query(query), r,
            session_id=session_id, kinds=kinds, depth=depth, date_weight=date_weight,
            user_id=user_id) for r in KEYWORD_RANKERS}  # fmt: skip
        if self.embedder is not None and query.strip():
            out["dense"] = self._semantic(
                self._query_vector(query), depth, session_id, kinds, set(), user_id
            )
        # as the learned fusion reads them: one candidate per utterance said again
        return one_copy(out, self.store.get_many({i for ids in out.values() for i in ids}))

    def fusion_weights(self, query: str, mode: str = "hybrid") -> dict[str, float]:
        """The weights :meth:`recall` fuses its rankers with for ``query`` across all
        sessions (the adaptive policy's choice; benchmarks check their offline fusion
        against it).

        >>> recaller.fusion_weights("when did we move?")  # doctest: +SKIP
        {'turn': 1.0, 'window': 0.5, 'dense': 0.1, 'digest': 0.0}
        """
        if mode == "hybrid" and self.embedder is None:
            mode = "keyword"  # as recall falls back
        policy = {"semantic": _SEMANTIC, "keyword": self.keyword_policy}.get(mode, self.policy)
        kinds = self.default_kinds + (("summary",) if self.summaries else ())
        return query_weights(self.store, policy, query, kinds, TEMPORAL_DATE_WEIGHT)

    @property
    def encoder_seconds(self) -> float:
        """Time spent embedding queries (cache misses), for benchmarks."""
        return 0.0 if self._vectors is None else self._vectors.encoder_seconds

    def clear_query_cache(self) -> None:
        """Forget the cached query embeddings (benchmarks time cold queries with it)."""
        if self._vectors is not None:
            self._vectors.clear()

    def _query_vector(self, query: str) -> npt.NDArray[np.float32]:
        """The query's embedding (cached), computed on this thread."""
        if self._vectors is None:  # checked by recall(); keeps mypy sure
            raise ConfigurationError("semantic recall needs an embedder")
        return self._vectors.get(query)

    def _semantic(
        self, vector: npt.NDArray[np.float32], depth: int, session_id: str | None,
        kinds: tuple[str, ...], excluded: set[int], user_id: str | None = None,
    ) -> list[int]:  # fmt: skip
        if self.embedder is None:  # checked by recall(); keeps mypy sure
            raise ConfigurationError("semantic recall needs an embedder")
        return dense_ids(
            self.store, self.embedder, lambda: self.index, vector, depth,
            session_id=session_id, kinds=kinds, excluded=excluded, user_id=user_id,
        )  # fmt: skip


_SEMANTIC = FusionPolicy({"dense": 1.0})
