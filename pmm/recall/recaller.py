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

Weighted reciprocal rank fusion (:mod:`pmm.recall.fusion`): an event's score is the sum, over the
rankers that list it, of ``weight / (60 + rank)``; no calibration between BM25 and cosine
scores is needed. Modes: ``keyword`` fuses the BM25 rankers, ``semantic`` is ``dense``
alone, ``hybrid`` fuses all of them. The default weights (``turn=0.25, window=1.5,
dense=0.1``, chosen by cross-validation: ``python bench/fusion.py``) adapt to the query
(:class:`~pmm.recall.fusion.FusionPolicy`): a temporal question weighs the turn key over the
window, and when the best turn hits hold little of the query's words (by inverse document
frequency) the dense ranker leads.

Learned fusion (:mod:`pmm.recall.rerank`): in the modes
:data:`pmm.recall.rerank.LEARNED_COEFFICIENTS` names, the rankers' candidates are ordered by a
small linear model over their ranks and
cheap features of each turn (a question turn, a person the query names, its session's
share of the evidence) instead of the weighted reciprocal rank, with coefficients chosen
by cross-validation on LoCoMo (``python bench/locomo_cv.py``). ``Recaller(...,
learned=False)`` and ``PMM_RECALL_WEIGHTS`` keep the reciprocal rank fusion.

Weights set by ``PMM_RECALL_WEIGHTS`` (e.g. ``turn=1,window=1,dense=0.3``) are used as
given for every query. Query embeddings are cached (an LRU keyed by text);
:attr:`Recaller.encoder_seconds` is the time spent encoding.

Importing this module does not import torch or sentence-transformers; only an embedder
that loads a model does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, get_args

import numpy as np
import numpy.typing as npt

from pmm.embed.backfill import DEFAULT_KINDS
from pmm.errors import ConfigurationError, InvalidInputError
from pmm.recall.fusion import (
    DEFAULT_KEYWORD_POLICY,
    DEFAULT_KEYWORD_WEIGHTS,
    DEFAULT_POLICY,
    DEFAULT_WEIGHTS,
    EVIDENCE_HITS,
    KEYWORD_RANKERS,
    RANKERS,
    RRF_K,
    FusionPolicy,
    inverse_document_frequencies,
    lexical_coverage,
    parse_weights,
    rrf_fuse,
)
from pmm.recall.rerank import LEARNED_COEFFICIENTS, rerank
from pmm.recall.rerank import RANKED as RERANKED
from pmm.records import Event, Hit
from pmm.text.window_keys import is_temporal
from pmm.text.words import search_terms, symbol_needles, words

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
    semantic search and kept in step with the store from then on. Without ``weights`` the
    fusion follows :data:`DEFAULT_POLICY` (:data:`DEFAULT_KEYWORD_POLICY` in keyword
    mode); ``weights`` (a mapping or ``PMM_RECALL_WEIGHTS`` text) override
    :data:`DEFAULT_WEIGHTS` and are used as given for every query. Query embeddings are
    kept in an LRU of ``query_cache_size`` texts.
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
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.depth = depth
        self.default_kinds = tuple(default_kinds)
        if isinstance(weights, Mapping):
            weights = ",".join(f"{k}={v}" for k, v in weights.items())
        chosen = parse_weights(weights or "")
        self.weights = {**DEFAULT_WEIGHTS, **chosen}
        """Hybrid-mode weights: :data:`DEFAULT_WEIGHTS` with the given ones over them."""
        self.keyword_weights = {**DEFAULT_KEYWORD_WEIGHTS, **chosen}
        self.keyword_weights.pop("dense", None)
        """Keyword-mode weights: :data:`DEFAULT_KEYWORD_WEIGHTS` with the given ones."""
        # Weights set by the caller are used as given, for every query; the defaults
        # adapt to temporal questions and to weak lexical evidence.
        self.policy = DEFAULT_POLICY if not chosen else FusionPolicy(self.weights)
        self.learned: dict[str, Mapping[str, float]] = (
            dict(LEARNED_COEFFICIENTS) if learned and not chosen else {}
        )
        """Mode -> the learned fusion's coefficients (:mod:`pmm.recall.rerank`), used instead of
        the weighted RRF in that mode; none when ``weights`` are given or ``learned`` is
        False."""
        self.keyword_policy = (
            DEFAULT_KEYWORD_POLICY if not chosen else FusionPolicy(self.keyword_weights)
        )
        self._query_vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._query_cache_size = query_cache_size
        self.encoder_seconds = 0.0
        """Time spent embedding queries (cache misses), for benchmarks."""
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
        kind_list = self.default_kinds if kinds is None else _kinds(kinds)
        if kinds is None and self.summaries:
            kind_list += ("summary",)
        excluded = set(exclude_ids)
        depth = max(self.depth, k) + len(excluded)
        needles = symbol_needles(query)
        if needles:  # no word, only symbols (emoji) that no index holds: a scan finds them
            return self._symbol_hits(needles, k, depth, session_id, kind_list, excluded, user_id)
        policy = {"semantic": _SEMANTIC, "keyword": self.keyword_policy}.get(mode, self.policy)
        temporal = is_temporal(words(query.lower()))
        date_weight = TEMPORAL_DATE_WEIGHT if temporal else 1.0

        def keyword(ranker: str) -> list[int]:
            return self._keyword(
                query,
                ranker,
                session_id,
                kind_list,
                depth,
                date_weight,
                sync_index,
                excluded,
                user_id,
            )

        maybe = [policy.weights, *filter(None, (policy.temporal, policy.low_evidence))]
        vector = self._query_vector(query) if any(w.get("dense", 0) > 0 for w in maybe) else None
        rankings: dict[str, list[int]] = {}
        if policy.needs_coverage:
            rankings["turn"] = keyword("turn")
        weights, coverage = self._weights(policy, query, temporal, rankings.get("turn", []))
        rankings = {r: ids for r, ids in rankings.items() if weights.get(r, 0) > 0}
        for ranker in KEYWORD_RANKERS:
            if weights.get(ranker, 0) > 0 and ranker not in rankings:
                rankings[ranker] = keyword(ranker)
        if vector is not None and weights.get("dense", 0) > 0:
            rankings["dense"] = self._semantic(
                vector, depth, session_id, kind_list, excluded, user_id
            )
        coefficients = self.learned.get(mode) if "summary" not in kind_list else None
        if coefficients:
            # the learned fusion reads every ranker it has coefficients for
            for ranker in RERANKED:
                if ranker in rankings or not any(f.startswith(ranker) for f in coefficients):
                    continue
                if ranker != "dense":
                    rankings[ranker] = keyword(ranker)
                elif self.embedder is not None:
                    rankings[ranker] = self._semantic(
                        self._query_vector(query), depth, session_id, kind_list, excluded, user_id
                    )
            fused = self._rerank(query, rankings, coefficients, temporal, coverage)
        else:
            fused = rrf_fuse(rankings, weights=weights)
        hits: list[Hit] = []
        start = 0
        while len(hits) < k and start < len(fused):
            chunk = fused[start : start + k - len(hits)]
            start += len(chunk)
            events = self.store.get_many(i for i, _, _ in chunk)
            for event_id, score, ranks in chunk:
                event = events.get(event_id)
                if event is None or (event.content is None and not event.summary):
                    continue  # redacted after the rankers read it
                if user_id is not None and event.user_id != user_id:
                    continue  # never another user's: checked on the row itself too
                hits.append(Hit(event, score, ranks))
        from pmm.dream.consolidation import consolidated_hits  # the one consolidation hook

        return consolidated_hits(
            self.store,
            hits,
            query,
            k,
            children=self.summary_children if self.summaries else 0,
            prior=self.summary_prior,
        )

    def _symbol_hits(
        self,
        needles: list[str],
        k: int,
        depth: int,
        session_id: str | None,
        kinds: tuple[str, ...],
        excluded: set[int],
        user_id: str | None = None,
    ) -> list[Hit]:
        """Recall of a query made of symbols only (``"🐶"``): the events holding them, by
        :meth:`EventLog.search_symbols`, ranked as the ``symbol`` ranker; with ``user_id``,
        only that user's events."""
        found = self.store.search_symbols(
            needles, limit=depth, session_id=session_id, kinds=kinds, user_id=user_id
        )
        ids = [i for i, _ in found if i not in excluded]
        events = self.store.get_many(ids)
        hits: list[Hit] = []
        for rank, event_id in enumerate(ids, 1):
            event = events.get(event_id)
            if event is None or (event.content is None and not event.summary):
                continue
            hits.append(Hit(event, 1.0 / (RRF_K + rank), {"symbol": rank}))
            if len(hits) >= k:
                break
        return hits

    def ranker_lists(
        self,
        query: str,
        *,
        depth: int = DEFAULT_DEPTH,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> dict[str, list[int]]:
        """Each ranker's event ids for ``query``, best first, ``depth`` deep, as
        :meth:`recall` reads them before fusing (the turn kinds; the temporal date weight
        where the query is temporal; ``dense`` only with an embedder): what benchmarks fuse
        offline.

        >>> recaller.ranker_lists("where do I live?", depth=20)  # doctest: +SKIP
        {'turn': [12, 3], 'window': [12, 11, 13, 3], 'digest': [], 'dense': [12, 40, ...]}
        """
        date_weight = TEMPORAL_DATE_WEIGHT if is_temporal(words(query.lower())) else 1.0
        kinds = self.default_kinds
        out = {
            r: self._keyword(query, r, session_id, kinds, depth, date_weight, True, set(), user_id)
            for r in KEYWORD_RANKERS
        }
        if self.embedder is not None and query.strip():
            out["dense"] = self._semantic(
                self._query_vector(query), depth, session_id, kinds, set(), user_id
            )
        return out

    def _keyword(
        self,
        query: str,
        ranker: str,
        session_id: str | None,
        kinds: tuple[str, ...],
        depth: int,
        date_weight: float,
        sync: bool,
        excluded: set[int],
        user_id: str | None = None,
    ) -> list[int]:
        """One keyword ranker's ids: the session's or the user's in-memory ranker where it
        serves, else the store's full-text index."""
        local = self.session_ranker
        users = self.user_ranker
        if session_id is not None and local is not None and local.serves(ranker, kinds):
            found = local.search(
                query,
                session_id=session_id,
                key=ranker,
                kinds=kinds,
                limit=depth,
                date_weight=date_weight,
            )
        elif user_id is not None and users is not None and users.serves(ranker, kinds):
            found = users.search(
                query,
                user_id=user_id,
                key=ranker,
                kinds=kinds,
                limit=depth,
                date_weight=date_weight,
            )
        else:
            found = self.store.search_text(
                query,
                limit=depth,
                session_id=session_id,
                kinds=kinds,
                sync=sync,
                key=ranker,
                date_weight=date_weight,
                **({} if user_id is None else {"user_id": user_id}),
            )
        return [i for i, _ in found if i not in excluded]

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
        temporal = is_temporal(words(query.lower()))
        turn: list[int] = []
        if policy.needs_coverage:
            kinds = self.default_kinds + (("summary",) if self.summaries else ())
            found = self.store.search_text(
                query, limit=EVIDENCE_HITS, kinds=kinds, key="turn",
                date_weight=TEMPORAL_DATE_WEIGHT if temporal else 1.0,
            )  # fmt: skip
            turn = [i for i, _ in found]
        return self._weights(policy, query, temporal, turn)[0]

    def _weights(
        self, policy: FusionPolicy, query: str, temporal: bool, turn_hits: list[int]
    ) -> tuple[dict[str, float], float | None]:
        """The policy's weights for the query, and the lexical coverage they read (None
        when the policy reads none)."""
        coverage = None
        if policy.needs_coverage:
            top = self.store.get_many(turn_hits[:EVIDENCE_HITS]).values()
            # no hit: coverage is 0 with or without idf, so the frequencies are not read
            idf = self._idf(query) if policy.idf and top else None
            coverage = lexical_coverage(query, (_searchable(e) for e in top), idf)
        return policy.weights_for(temporal=temporal, coverage=coverage), coverage

    def _rerank(
        self,
        query: str,
        rankings: Mapping[str, list[int]],
        coefficients: Mapping[str, float],
        temporal: bool,
        coverage: float | None,
    ) -> list[tuple[int, float, dict[str, int]]]:
        """The learned fusion (:mod:`pmm.recall.rerank`) of the rankers' candidates, in
        :func:`rrf_fuse`'s shape: ``(event_id, score, {ranker: rank})`` best first."""
        ids = list(dict.fromkeys(i for ids in rankings.values() for i in ids))
        events = self.store.get_many(ids)
        texts = {i: e.text for i, e in events.items()}
        sessions = {i: e.session_id or "" for i, e in events.items()}
        ranked = rerank(
            query, rankings, texts, sessions, temporal=temporal,
            coverage=1.0 if coverage is None else coverage, coefficients=coefficients,
            dates={i: e.ts for i, e in events.items()},
        )  # fmt: skip
        ranks: dict[int, dict[str, int]] = {}
        for ranker, found in rankings.items():
            for rank, event_id in enumerate(found, start=1):
                ranks.setdefault(event_id, {}).setdefault(ranker, rank)
        return [(i, score, ranks[i]) for i, score in ranked]

    def _idf(self, query: str) -> dict[str, float]:
        """The inverse document frequency of the query's words in the store."""
        frequencies = self.store.document_frequencies(search_terms(query))
        return inverse_document_frequencies(frequencies, self.store.search_index_upto())

    def _query_vector(self, query: str) -> npt.NDArray[np.float32]:
        """The query's embedding. In hybrid mode it is computed before the BM25 search, so
        that torch's worker threads have gone idle when the vector search starts."""
        if self.embedder is None:  # checked by recall(); keeps mypy sure
            raise ConfigurationError("semantic recall needs an embedder")
        with self._lock:
            cached = self._query_vectors.get(query)
            if cached is not None:
                self._query_vectors.move_to_end(query)
                return cached
        started = time.perf_counter()
        vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        vector.setflags(write=False)
        with self._lock:
            self.encoder_seconds += time.perf_counter() - started
            self._query_vectors[query] = vector
            while len(self._query_vectors) > self._query_cache_size:
                self._query_vectors.popitem(last=False)
        return vector

    def _semantic(
        self,
        vector: npt.NDArray[np.float32],
        depth: int,
        session_id: str | None,
        kinds: tuple[str, ...],
        excluded: set[int],
        user_id: str | None = None,
    ) -> list[int]:
        if self.embedder is None:  # checked by recall(); keeps mypy sure
            raise ConfigurationError("semantic recall needs an embedder")
        # A store with a server-side vector index (PostgreSQL with pgvector) answers itself;
        # one without it (None) leaves the exact in-memory search to PMM.
        served = getattr(self.store, "search_vectors", None)
        if served is not None:
            found = served(
                self.embedder.model_name, vector, depth, session_id=session_id, kinds=kinds,
                exclude_ids=excluded, **({} if user_id is None else {"user_id": user_id}),
            )  # fmt: skip
            if found is not None:
                return [i for i, _ in found]
        index = self.index
        if index is None:
            raise ConfigurationError("semantic recall needs an embedder")
        found = index.search(
            vector, depth, session_id=session_id, kinds=kinds, exclude_ids=excluded,
            user_id=user_id,
        )  # fmt: skip
        return [i for i, _ in found]


_SEMANTIC = FusionPolicy({"dense": 1.0})


def _searchable(event: Event) -> str:
    """The text the turn key indexes: content, summary and keywords."""
    return " ".join(filter(None, (event.text, event.summary, *event.keywords)))


def _kinds(kinds: Iterable[str] | str) -> tuple[str, ...]:
    found = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not found or not all(isinstance(k, str) and k for k in found):
        raise InvalidInputError(f"kinds must be one or more non-empty strings, got {kinds!r}")
    return found
