"""One search key of a session's turns in memory: its documents, their postings, and
FTS5's BM25 over them (k1 1.2, b 0.75, per-column weights). :mod:`pmm.recall.session_index`
keeps one :class:`Key` per key and session up to date; this module only indexes and ranks.

    key = Key(TURN_WEIGHTS)  # summary, keywords, content
    for event_id, text in ((7, "red kayak"), (8, "a boat"), (9, "a bike")):
        key.put(event_id, "prompt", (EMPTY, EMPTY, Column.of(fts_tokens(text))))
    key.rank(turn_query("kayak"), {"prompt", "response"}, TURN_WEIGHTS, limit=10)
    # -> [(7, 0.5108...)]: (id, BM25 score), best first

How each key reads a query word:

- the turn key (:func:`turn_query`): the AND of its terms, each scored as its own phrase
  with its own document frequency, as the turn index is queried since migration 0011
  (which keeps no positions: a word FTS5 splits, like ``o'brien``, is no phrase there);
- the window key (:func:`window_query`): the AND of its terms as the window index is
  queried (:func:`pmm.text.window_keys.window_query_terms`: stopwords out, since the index
  holds none), each term scored as its own phrase with its own document frequency, as
  FTS5's bm25() does for ``("o" AND "clock")``.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from pmm.storage.terms import pick_terms
from pmm.text.stemmer import fts_tokens
from pmm.text.window_keys import window_query_terms
from pmm.text.words import search_terms

K1 = 1.2
B = 0.75
TURN_WEIGHTS = (2.0, 3.0, 1.0)
"""summary, keywords, content: the turn key's BM25 column weights (as in FTS5)."""
DIGEST_WEIGHTS = (2.0, 3.0, 0.0)
DIGEST_COLUMNS = (True, True, False)
"""The digest key: the turn key's summary and keywords columns only (as in FTS5)."""
WINDOW_WEIGHTS = (1.0, 1.0)
"""body, dates: the window key's weights (the dates' is ``date_weight`` when given)."""


@dataclass(frozen=True)
class Query:
    """A query's search words, each with its terms (``words``): a word matches a document
    holding all of its terms, and each term is scored on its own."""

    words: tuple[tuple[str, tuple[str, ...]], ...]


@lru_cache(maxsize=256)
def turn_query(query: str) -> Query:
    """The turn key's reading of ``query``: each search word that has terms, as the AND of
    them (a query is searched once per key: analysed once)."""
    pairs = ((word, tuple(fts_tokens(word))) for word in search_terms(query))
    return Query(tuple((word, terms) for word, terms in pairs if terms))


@lru_cache(maxsize=256)
def window_query(query: str) -> Query:
    """The window key's reading of ``query``: each search word that has terms, as the AND
    of :func:`~pmm.text.window_keys.window_query_terms`."""
    pairs = ((word, window_query_terms(word)) for word in search_terms(query))
    return Query(tuple((word, terms) for word, terms in pairs if terms))


@dataclass
class Column:
    """One column of a document: its term counts and its length in tokens (no order: no
    key searches phrases)."""

    counts: Mapping[str, int]
    size: int

    @classmethod
    def of(cls, tokens: list[str]) -> Column:
        """The column of ``tokens`` (columns are never modified: empty ones are shared)."""
        return cls(Counter(tokens), len(tokens)) if tokens else EMPTY

    @classmethod
    def counted(cls, counts: Mapping[str, int]) -> Column:
        """A column known by its term counts."""
        return cls(counts, sum(counts.values())) if counts else EMPTY


EMPTY = Column({}, 0)


@dataclass
class Doc:
    id: int
    kind: str
    columns: tuple[Column, ...]
    length: int  # tokens in every column, plus the one session-tag token FTS5 counts
    weighted: dict[str, float]  # token -> occurrences weighted by the key's usual weights

    def hits(self, term: str, weights: Sequence[float]) -> float:
        """The term's occurrences, each weighted by its column's weight."""
        total = 0.0
        for weight, column in zip(weights, self.columns, strict=True):
            total += weight * column.counts.get(term, 0)
        return total


class Key:
    """One key's documents in a session, with postings (token -> ids) and per-kind totals.
    Not thread-safe: its owner's lock guards it."""

    def __init__(self, weights: tuple[float, ...]) -> None:
        self.weights = weights
        self.docs: dict[int, Doc] = {}
        self.postings: dict[str, dict[int, float]] = {}
        """token -> {event id: the token's occurrences weighted by the usual weights}"""
        self.lengths: dict[int, int] = {}
        self.count: dict[str, int] = {}
        self.length: dict[str, int] = {}

    def put(
        self,
        event_id: int,
        kind: str,
        columns: tuple[Column, ...],
        touched: Collection[str] | None = None,
    ) -> None:
        """Index (or re-index) a document; ``touched``: when it is re-indexed, the only
        tokens whose counts may have changed (None: any of them)."""
        weighted: dict[str, float] = {}
        for weight, column in zip(self.weights, columns, strict=True):
            if weight == 1.0 and not weighted:
                # the counts as they are (whole numbers: the same sums in any order)
                weighted = dict(column.counts)
                continue
            for token, count in column.counts.items():
                weighted[token] = weighted.get(token, 0.0) + weight * count
        length = 1 + sum(c.size for c in columns)
        doc = Doc(event_id, kind, columns, length, weighted)
        old = self.docs.get(event_id)
        # a rewritten window shares most of its words with the old one: touch only the
        # postings of the words that came, went or changed count
        postings = self.postings
        changed: Iterable[tuple[str, float]] = weighted.items()
        if old is not None:
            before = old.weighted
            if touched is None:
                gone: Iterable[str] = before.keys() - weighted.keys()
                changed = [(t, v) for t, v in weighted.items() if before.get(t) != v]
            else:
                gone = [t for t in touched if t in before and t not in weighted]
                changed = [
                    (t, weighted[t])
                    for t in touched
                    if t in weighted and before.get(t) != weighted[t]
                ]
            for token in gone:
                ids = postings[token]
                del ids[event_id]
                if not ids:
                    del postings[token]
        for token, value in changed:
            posting = postings.get(token)
            if posting is None:
                postings[token] = {event_id: value}
            else:
                posting[event_id] = value
        self.lengths[event_id] = length
        if old is not None:
            self.count[old.kind] -= 1
            self.length[old.kind] -= old.length
        self.docs[event_id] = doc
        self.count[kind] = self.count.get(kind, 0) + 1
        self.length[kind] = self.length.get(kind, 0) + length

    def drop(self, event_id: int) -> None:
        doc = self.docs.pop(event_id, None)
        if doc is None:
            return
        del self.lengths[event_id]
        for token in doc.weighted:
            ids = self.postings.get(token)
            if ids is not None:
                ids.pop(event_id, None)
                if not ids:
                    del self.postings[token]
        self.count[doc.kind] -= 1
        self.length[doc.kind] -= doc.length

    def _matching(
        self, tokens: Sequence[str], kinds: set[str], other_kinds: bool
    ) -> Collection[int]:
        """Ids of the documents of ``kinds`` that hold each of ``tokens``; do not modify.
        ``other_kinds``: documents of other kinds are held (the caller works it out once)."""
        found = self.postings.get(tokens[0])
        if not found:
            return ()
        ids: Collection[int] = found
        for token in tokens[1:]:
            ids = set(ids) & self.postings.get(token, {}).keys()
        if other_kinds:
            docs = self.docs
            ids = [i for i in ids if docs[i].kind in kinds]
        return ids

    def rank(
        self,
        query: Query,
        kinds: Iterable[str],
        weights: tuple[float, ...],
        limit: int,
        columns: tuple[bool, ...] | None = None,
    ) -> list[tuple[int, float]]:
        """``(id, score)`` of the documents of ``kinds`` by FTS5's BM25 for ``query``, best
        first. The query words used are picked as a full-text search picks them
        (:func:`pmm.storage.terms.pick_terms`) from the documents' own frequencies.
        ``columns``: only a document that holds a word's terms in these columns matches
        it, and only those count in its document frequency (FTS5's column filter, as
        ``{summary keywords} : word``); None: any column."""
        wanted = set(kinds)
        n = sum(self.count.get(k, 0) for k in wanted)
        if not n or limit <= 0:
            return []
        avgdl = sum(self.length.get(k, 0) for k in wanted) / n
        usual = weights == self.weights
        postings = self.postings
        other_kinds = any(self.count[k] for k in self.count if k not in wanted)
        found: dict[str, Collection[int]] = {}
        tokens = dict(query.words)
        for word, phrase in tokens.items():
            if len(phrase) == 1 and not other_kinds:  # the usual case, inline
                found[word] = postings.get(phrase[0], ())
            else:
                found[word] = self._matching(phrase, wanted, other_kinds)
            if columns is not None:
                found[word] = [i for i in found[word] if self._holds(i, phrase, columns)]
        df = {w: len(ids) for w, ids in found.items()}
        present = sorted(found, key=lambda w: (df[w] == 0, df[w]))
        terms = pick_terms(present, n, df.__getitem__)
        used = [w for w in terms.words if df[w]]
        if not used:
            return []
        if terms.common:
            return [(i, 0.0) for i in sorted(found[used[0]], reverse=True)[:limit]]
        # A word in half the session or more has an idf FTS5 clamps to 1e-6: it could only
        # break ties, and scoring it would read most of the session.
        informative = [w for w in used if 2 * df[w] < n]
        scores: dict[int, float] = {}
        lean = K1 * B / avgdl
        base = K1 * (1 - B)
        lengths = self.lengths
        k1_1 = K1 + 1
        get = scores.get
        for word in informative or used:
            ids = found[word]
            phrase = tokens[word]
            # an AND of terms is scored term by term, each with its own document frequency
            # (FTS5's bm25() scores each phrase of a query)
            parts: list[tuple[int, str]]
            if len(phrase) > 1:
                parts = [(self._frequency(t, wanted, other_kinds, columns), t) for t in phrase]
            else:
                parts = [(df[word], phrase[0])]
            for count, part in parts:
                value = math.log((n - count + 0.5) / (count + 0.5))
                idf = value if value > 0 else 1e-6
                if usual:
                    # the token's postings hold its weighted counts: one pass, no Doc
                    posting = postings[part]
                    pairs: Iterable[tuple[int, float]] = (
                        posting.items() if ids is posting else ((i, posting[i]) for i in ids)
                    )
                else:
                    docs = self.docs
                    pairs = ((i, docs[i].hits(part, weights)) for i in ids)
                if not scores:  # nothing to add to: one comprehension (0.0 + gain is gain)
                    scores = {
                        i: idf * f * k1_1 / (f + (base + lean * lengths[i])) for i, f in pairs if f
                    }
                    get = scores.get
                    continue
                for event_id, freq in pairs:
                    if freq:
                        gain = idf * freq * k1_1 / (freq + (base + lean * lengths[event_id]))
                        scores[event_id] = get(event_id, 0.0) + gain
        return top(scores, limit)

    def _frequency(
        self,
        token: str,
        kinds: set[str],
        other_kinds: bool,
        columns: tuple[bool, ...] | None = None,
    ) -> int:
        """How many documents of ``kinds`` hold ``token`` (in ``columns``, when given)."""
        ids = self.postings.get(token, {})
        if not other_kinds and columns is None:
            return len(ids)
        docs = self.docs
        return sum(
            1
            for i in ids
            if docs[i].kind in kinds and (columns is None or self._holds(i, (token,), columns))
        )

    def _holds(self, event_id: int, tokens: Sequence[str], columns: tuple[bool, ...]) -> bool:
        """Whether the document holds every one of ``tokens`` in one of ``columns``."""
        doc = self.docs[event_id].columns
        return all(
            any(on and token in column.counts for on, column in zip(columns, doc, strict=True))
            for token in tokens
        )


def top(scores: dict[int, float], limit: int) -> list[tuple[int, float]]:
    """``(id, score)`` of the ``limit`` best scores, best first (ties: higher id first)."""
    # compared as plain (score, id) tuples (no key function per item); a full sort in C
    # beats a heap unless few of many are wanted
    pairs = zip(scores.values(), scores.keys(), strict=True)
    if len(scores) <= 8 * limit:
        ranked = sorted(pairs, reverse=True)[:limit]
    else:
        ranked = heapq.nlargest(limit, pairs)
    return [(i, score) for score, i in ranked]
