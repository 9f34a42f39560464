"""Recall: the events most relevant to a query, by keyword (BM25), by meaning (cosine
similarity of embeddings), or both fused by reciprocal rank.

    from pmm.recall import Recaller

    recaller = Recaller(store, embedder)          # embedder=None: keyword search only
    for hit in recaller.recall("where do I live?", k=5, session_id="alice"):
        hit.event.content, hit.score, hit.rankers  # e.g. {'keyword': 3, 'semantic': 1}

Reciprocal rank fusion: each ranker lists its best candidates; an event's score is the sum,
over the rankers that list it, of ``1 / (60 + rank)``. It needs no score calibration
between BM25 and cosine, and an event both rankers like beats one only a single ranker
likes. Scores have this meaning in every mode (in ``keyword`` mode, too).

Importing this module does not import torch or sentence-transformers; only an embedder
that loads a model does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, get_args

import numpy as np
import numpy.typing as npt

from .embed.backfill import DEFAULT_KINDS
from .errors import ConfigurationError, InvalidInputError
from .records import Hit

if TYPE_CHECKING:
    from .embed.base import Embedder
    from .embed.index import VectorIndex
    from .storage.base import EventLog

log = logging.getLogger(__name__)

RecallMode = Literal["hybrid", "keyword", "semantic"]
RECALL_MODES: tuple[str, ...] = get_args(RecallMode)
RRF_K = 60
"""The reciprocal-rank-fusion constant: a rank ``r`` scores ``1 / (RRF_K + r)``."""
DEFAULT_DEPTH = 50
"""How many candidates each ranker contributes at least (more when ``k`` is larger)."""


def rrf_fuse(
    rankings: Mapping[str, Sequence[int]], *, k_constant: int = RRF_K
) -> list[tuple[int, float, dict[str, int]]]:
    """Fuse ranked id lists: ``[(event_id, score, {ranker: rank}), ...]`` best first.

    Ties are broken by the best single rank, then by the newer event.

    >>> rrf_fuse({"keyword": [7, 3], "semantic": [3]})[0][:2]
    (3, 0.03252247488101534)
    """
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for ranker, ids in rankings.items():
        for rank, event_id in enumerate(ids, start=1):
            if ranker in ranks.get(event_id, {}):
                continue
            scores[event_id] = scores.get(event_id, 0.0) + 1.0 / (k_constant + rank)
            ranks.setdefault(event_id, {})[ranker] = rank
    order = sorted(scores, key=lambda i: (-scores[i], min(ranks[i].values()), -i))
    return [(i, scores[i], ranks[i]) for i in order]


class Recaller:
    """Ranks a store's events against a query (see the module docstring).

    ``embedder`` enables the ``semantic`` ranker; without it ``hybrid`` recall is keyword
    recall (with one warning) and ``semantic`` recall raises
    :class:`~pmm.errors.ConfigurationError`. The vector cache is built on the first
    semantic search and kept in step with the store from then on.
    """

    def __init__(
        self,
        store: EventLog,
        embedder: Embedder | None = None,
        *,
        depth: int = DEFAULT_DEPTH,
        default_kinds: Sequence[str] = DEFAULT_KINDS,
        summaries: bool = False,
        summary_prior: float = -0.05,
        summary_children: int = 2,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.depth = depth
        self.default_kinds = tuple(default_kinds)
        self._index: VectorIndex | None = None
        self._lock = threading.Lock()
        self._warned = False
        # Consolidation (pmm/consolidate.py): summary nodes compete with turns and expand.
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
                from .embed.index import VectorIndex

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
    ) -> list[Hit]:
        """The ``k`` events most relevant to ``query``, best first.

        ``session_id=None`` searches every session. ``mode`` is ``hybrid`` (BM25 and
        cosine similarity, fused), ``keyword`` or ``semantic``. ``kinds`` defaults to the
        turn kinds (``prompt``, ``response``). ``exclude_ids`` (e.g. the turns already in
        the prompt) are left out before ranking. Text is searched as plain words: FTS5
        syntax in ``query`` never raises. An empty query recalls nothing.
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
        rankings: dict[str, list[int]] = {}
        vector = self._query_vector(query) if mode != "keyword" else None
        if mode != "semantic":
            rankings["keyword"] = self._keyword(
                query, depth, session_id, kind_list, excluded, sync_index
            )
        if vector is not None:
            rankings["semantic"] = self._semantic(vector, depth, session_id, kind_list, excluded)
        fused = rrf_fuse(rankings)
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
                hits.append(Hit(event, score, ranks))
        from .consolidate import consolidated_hits  # the one consolidation hook

        return consolidated_hits(
            self.store,
            hits,
            query,
            k,
            children=self.summary_children if self.summaries else 0,
            prior=self.summary_prior,
        )

    def _keyword(
        self,
        query: str,
        depth: int,
        session_id: str | None,
        kinds: tuple[str, ...],
        excluded: set[int],
        sync_index: bool,
    ) -> list[int]:
        found = self.store.search_text(
            query, limit=depth, session_id=session_id, kinds=kinds, sync=sync_index
        )
        return [i for i, _ in found if i not in excluded]

    def _query_vector(self, query: str) -> npt.NDArray[np.float32]:
        """The query's embedding. In hybrid mode it is computed before the BM25 search, so
        that torch's worker threads have gone idle when the vector search starts."""
        if self.embedder is None:  # checked by recall(); keeps mypy sure
            raise ConfigurationError("semantic recall needs an embedder")
        vectors = self.embedder.embed([query])
        return np.asarray(vectors[0], dtype=np.float32)

    def _semantic(
        self,
        vector: npt.NDArray[np.float32],
        depth: int,
        session_id: str | None,
        kinds: tuple[str, ...],
        excluded: set[int],
    ) -> list[int]:
        index = self.index
        if index is None:  # checked by recall(); keeps mypy sure
            raise ConfigurationError("semantic recall needs an embedder")
        found = index.search(
            vector, depth, session_id=session_id, kinds=kinds, exclude_ids=excluded
        )
        return [i for i, _ in found]


def _kinds(kinds: Iterable[str] | str) -> tuple[str, ...]:
    found = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not found or not all(isinstance(k, str) and k for k in found):
        raise InvalidInputError(f"kinds must be one or more non-empty strings, got {kinds!r}")
    return found
