"""How PMMStore searches (mixed into the store; see :mod:`pmm.integrations.langgraph`):
keyword ranking within each namespace, cosine similarity over the items' vectors, both
fused by reciprocal rank::

    store = PMMStore("pmm.db", index={"embed": embed, "dims": 384, "fields": ["text"]})
    store.search(("users",), query="where does she live", filter={"type": "note"}, limit=5)
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import SearchItem, SearchOp

from pmm.errors import InvalidInputError
from pmm.integrations.store_filters import value_matches
from pmm.integrations.store_items import item_value, search_item
from pmm.integrations.store_ttl import PUT_KIND
from pmm.recall.fusion import rrf_fuse
from pmm.records import Event

if TYPE_CHECKING:
    from pmm.mind import Mind

SearchMode = Literal["hybrid", "keyword", "semantic"]


def checked_page(limit: object, offset: object) -> None:
    """Raise :class:`~pmm.errors.InvalidInputError` unless ``limit`` and ``offset`` are
    ints >= 0 (a negative slice bound would silently page from the end)."""
    for name, value in (("limit", limit), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidInputError(f"{name} must be an int >= 0, got {value!r}")


class StoreSearch:
    """The search half of PMMStore (needs ``mind``, ``mode`` and, with an index,
    ``embeddings`` and ``embedding_model``)."""

    mind: Mind
    mode: SearchMode
    embeddings: Embeddings
    embedding_model: str

    def _search_live(self, op: SearchOp, live: list[Event]) -> list[SearchItem]:
        """``op``'s page of the ``live`` items: filtered, then ranked when it has a query."""
        if op.filter:
            live = [e for e in live if value_matches(item_value(e), op.filter)]
        if not op.query or not op.query.strip():
            live.sort(key=lambda e: e.id, reverse=True)  # newest first
            return self._page(live[op.offset : op.offset + op.limit], None, op.refresh_ttl)
        by_id = {e.id: e for e in live}
        rankings: dict[str, list[int]] = {}
        scores: dict[int, float] = {}
        if self.mode != "semantic":
            rankings["keyword"] = self._keyword_ranking(op.query, live)
        if self.mode != "keyword":
            similarity = self._similarity(op.query, list(by_id))
            rankings["semantic"] = sorted(similarity, key=lambda i: -similarity[i])
            scores = similarity
        if self.mode == "semantic":
            ranked = [(i, scores[i]) for i in rankings["semantic"]]
        else:
            ranked = [(i, s) for i, s, _ in rrf_fuse(rankings)]
        page = ranked[op.offset : op.offset + op.limit]
        return self._page([by_id[i] for i, _ in page], [float(s) for _, s in page], op.refresh_ttl)

    def _page(
        self, events: list[Event], scores: list[float] | None, refresh: bool
    ) -> list[SearchItem]:
        """The search result for ``events``; their TTL pushed back when ``refresh``."""
        if refresh and events:
            self.mind.store.refresh_expiry([e.id for e in events], time.time())
        return [search_item(e, None if scores is None else scores[n]) for n, e in enumerate(events)]

    def _keyword_ranking(self, query: str, live: list[Event]) -> list[int]:
        """The live items' ids by BM25 (best first), ranked within their namespaces only:
        each namespace session is searched on its own, as deep as it holds puts, so that
        no other namespace's items can push them out of the result."""
        wanted = {e.id for e in live}
        store = self.mind.store
        hits: list[tuple[int, float]] = []
        for session in sorted({e.session_id for e in live if e.session_id is not None}):
            depth = store.count(session_id=session, kinds=(PUT_KIND,))
            hits += store.search_text(query, limit=depth, session_id=session, kinds=(PUT_KIND,))
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return [i for i, _ in hits if i in wanted]

    def _similarity(self, query: str, event_ids: list[int]) -> dict[int, float]:
        wanted = set(event_ids)
        stored = [
            (i, v) for i, v in self.mind.store.embeddings(self.embedding_model) if i in wanted
        ]
        if not stored:
            return {}
        matrix = np.stack([np.frombuffer(v, dtype=np.float32) for _, v in stored])
        query_vector = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query_vector) or 1.0)
        sims = matrix @ query_vector / np.where(norms == 0, 1.0, norms)
        return {i: float(s) for (i, _), s in zip(stored, sims, strict=True)}
