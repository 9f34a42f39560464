"""Keyword search as every backend does it: the query's words, the informative ones among
them (:mod:`pmm.storage.terms`), then the backend's own ranking (``_ranked``).

    store.search_text("Lisbon", session_id="alice")          # [(event_id, score)]
    store.search_text("what did I do last May", key="window")
    store.document_frequencies(["coffee", "work"])            # {'coffee': 3, 'work': 41}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pmm.errors import InvalidInputError
from pmm.storage.shared.primitives import Primitives
from pmm.storage.shared.query import TextSearch, kind_tuple
from pmm.storage.terms import COMMON_TERM_MIN_DOCS, checked_words, pick_terms
from pmm.text.words import search_terms

SEARCH_KEYS = ("turn", "content", "digest", "window")
"""The keys ``search_text`` knows."""
MAX_NEEDLES = 8
"""Most symbols a ``search_symbols`` call looks for."""


class SharedSearch(Primitives):
    """``search_text``, ``search_symbols`` and ``document_frequencies``."""

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
    ) -> list[tuple[int, float]]:
        """``(event_id, score)`` best first, over one key of the events:

        - ``key="turn"``: the event's summary, keywords and content;
        - ``key="content"``: its content only; ``key="digest"``: summary and keywords only;
        - ``key="window"``: the turn with its neighbouring turns and its date in words
          (turns only; ``date_weight`` scales the date column against the text).

        The query is taken as plain words (any of them may match), never as query syntax.
        In a log of 1,000+ events, words found in over 5% of it count as stopwords, and at
        most the :data:`~pmm.storage.terms.MAX_QUERY_TERMS` rarest words are used; when
        every word is that common, the newest events holding the rarest one come first
        (score 0). ``sync=False`` skips indexing events appended since the last search
        (for callers that already hold the newest events). ``user_id`` keeps to that
        user's events (all her sessions)."""
        if key not in SEARCH_KEYS:
            raise InvalidInputError(f"key must be one of {', '.join(SEARCH_KEYS)}, got {key!r}")
        words = search_terms(query)
        if not words:
            return []
        if sync:
            self.sync_search_index()
        indexed = self.search_index_upto()
        counts = self._term_counts(words, indexed) if indexed >= COMMON_TERM_MIN_DOCS else {}
        terms = pick_terms(words, indexed, counts.__getitem__)
        search = TextSearch(key, limit, session_id, kind_tuple(kinds), user_id, date_weight)
        return self._ranked(terms, search)

    def search_symbols(
        self,
        needles: Sequence[str],
        *,
        limit: int = 10,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> list[tuple[int, float]]:
        """``(event_id, needles found)`` of the events whose text or summary holds one of
        ``needles`` (symbols such as emoji, which keyword indexes drop: see
        :func:`pmm.text.words.symbol_needles`), most needles first, then newest. A scan of
        the filtered rows (no index): recall calls it only for a query without a word."""
        wanted = [n for n in dict.fromkeys(needles) if n][:MAX_NEEDLES]
        if not wanted:
            return []
        search = TextSearch(limit=limit, session_id=session_id, kinds=kind_tuple(kinds),
                            user_id=user_id)  # fmt: skip
        return self._symbol_hits(wanted, search)

    def document_frequencies(self, words: Iterable[str]) -> dict[str, int]:
        """About how many indexed events hold each of ``words`` in their turn key (summary,
        keywords, content), matched as the index matches (stemmed, case-folded); with
        :meth:`search_index_upto` as the size of the log, enough for inverse document
        frequencies::

            store.document_frequencies(["coffee", "work"])   # {'coffee': 3, 'work': 41}
        """
        wanted = checked_words(words)
        indexed = self.search_index_upto()
        if not wanted or not indexed:
            return dict.fromkeys(wanted, 0)
        return self._term_counts(wanted, indexed)
