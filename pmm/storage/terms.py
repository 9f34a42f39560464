"""Which words of a query a keyword search uses, for every backend.

    pick_terms(["the", "violin", "lesson"], indexed=50_000, frequency=docs_holding)
    # QueryTerms(words=['violin', 'lesson'], common=False)
    checked_words(("coffee", "work"))   # ['coffee', 'work']: document_frequencies' argument

Ranking cost grows with how common the words are (a ranker reads every matching row), and a
word found in most rows ranks nothing. So in a log of COMMON_TERM_MIN_DOCS+ events, words in
over COMMON_TERM_SHARE of them are dropped, and at most MAX_QUERY_TERMS of the rarest are kept.
When every word is that common, the rarest one alone is kept and ``common`` is set: callers
then order by recency, since a ranker could not tell the rows apart anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from pmm.errors import InvalidInputError

MAX_QUERY_TERMS = 6
"""Most words of a query that a keyword search uses (the rarest ones)."""
COMMON_TERM_SHARE = 0.05
"""Share of the indexed events above which a word counts as a stopword."""
COMMON_TERM_MIN_DOCS = 1000
"""Below this many indexed events every word is used."""


class QueryTerms(NamedTuple):
    words: list[str]
    common: bool
    """Every word of the query was very common: rank by recency, not by relevance."""


def pick_terms(words: list[str], indexed: int, frequency: Callable[[str], int]) -> QueryTerms:
    """The informative words of ``words`` (see the module docstring); ``frequency(word)``
    is how many of the ``indexed`` events hold it (an estimate will do)."""
    if indexed < COMMON_TERM_MIN_DOCS:
        return QueryTerms(words[:MAX_QUERY_TERMS], common=False)
    freq = {w: frequency(w) for w in words}
    ranked = sorted(words, key=lambda w: freq[w])
    informative = [w for w in ranked if freq[w] <= COMMON_TERM_SHARE * indexed]
    if informative:
        return QueryTerms(informative[:MAX_QUERY_TERMS], common=False)
    return QueryTerms(ranked[:1], common=True)


def checked_words(words: Iterable[str]) -> list[str]:
    """The words of a ``document_frequencies(words)`` call as a list; raises
    :class:`InvalidInputError` for a lone string or anything that is not a str."""
    problem = InvalidInputError(f"words must be an iterable of str, got {words!r}")
    if isinstance(words, str):
        raise problem
    try:
        wanted = list(words)
    except TypeError:
        raise problem from None
    if not all(isinstance(w, str) for w in wanted):
        raise problem
    return wanted
