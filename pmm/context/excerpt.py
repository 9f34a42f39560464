"""The part of a long text that bears on a question: whole sentences around the best match.

    terms = query_terms("Where did Melanie go camping?")
    excerpt(long_reply, terms, max_tokens=60, counter=counter)
    # '… We went camping at the lake last weekend, the kids loved it. …'

A memory is worth its tokens for the sentence that answers the question, not for the
greeting before it. :func:`excerpt` keeps the sentence with the most query terms (by FTS5's
stems, as recall matched it) and grows the kept run by its neighbours, the next one first,
then the one before, while the run stays within ``max_tokens``: a neighbour usually carries
what the match refers to ("It was ..."). Whole sentences only, so a quoted fact is never cut
mid-clause; an ellipsis marks each side where text was left out. A text within the budget
comes back unchanged; a single sentence over it is cut at the end of a word.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from functools import lru_cache
from typing import TYPE_CHECKING

from pmm.context.budget import count_upto
from pmm.text.stemmer import fts_tokens
from pmm.text.words import STOPWORDS

if TYPE_CHECKING:
    from pmm.context.tokens import TokenCounter

ELLIPSIS = "…"
SCAN_CHARS = 100_000
"""Characters of a text an excerpt is taken from (its first ones)."""
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")


@lru_cache(maxsize=1)
def _stop_stems() -> frozenset[str]:
    return frozenset(s for w in STOPWORDS for s in fts_tokens(w))


def query_terms(query: str | None) -> frozenset[str]:
    """The stems of ``query``'s words that are not stopwords (what an excerpt looks for)."""
    if not query:
        return frozenset()
    stop = _stop_stems()
    return frozenset(t for t in fts_tokens(query) if t not in stop and len(t) > 1)


def sentences(text: str) -> list[str]:
    """``text`` split after ``.``, ``!``, ``?`` or ``…`` (and closing quotes) and at line
    breaks; empty pieces dropped, each piece stripped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def excerpt(
    text: str, terms: Collection[str], max_tokens: int, counter: TokenCounter
) -> tuple[str, bool]:
    """``(shown, cut)``: ``text`` itself when it costs at most ``max_tokens``; else the
    whole sentences around the one with the most of ``terms`` (the first sentence when none
    holds any), marked with ``…`` where text was left out, within ``max_tokens``.
    ``cut`` says whether anything was left out."""
    if max_tokens <= 0:
        return "", bool(text)
    count = counter.count
    if count_upto(count, text, max_tokens) <= max_tokens:
        return text, False
    parts = sentences(text[:SCAN_CHARS])
    if not parts:
        return "", True
    wanted = set(terms)
    scores = (
        [len(wanted.intersection(fts_tokens(p))) for p in parts] if wanted else [0] * len(parts)
    )
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    lo = hi = best

    def render(a: int, b: int) -> str:
        body = " ".join(parts[a : b + 1])
        before = ELLIPSIS + " " if a > 0 else ""
        after = " " + ELLIPSIS if b < len(parts) - 1 else ""
        return before + body + after

    cost: dict[int, int] = {}

    def sentence_cost(i: int) -> int:  # each sentence counted once
        if i not in cost:
            cost[i] = count(parts[i])
        return cost[i]

    if sentence_cost(best) + 2 > max_tokens:  # one sentence over the budget: the words that fit
        return _cut_words(parts[best], max_tokens, count, lead=best > 0), True
    spent = sentence_cost(best) + 2  # two ellipses at most
    grew = True
    while grew:  # the next sentence first, then the one before, while their counts fit
        grew = False
        for i, a, b in ((hi + 1, lo, hi + 1), (lo - 1, lo - 1, hi)):
            if 0 <= i < len(parts) and spent + sentence_cost(i) + 1 <= max_tokens:
                lo, hi, spent, grew = a, b, spent + sentence_cost(i) + 1, True
                break
    shown = render(lo, hi)
    while lo < hi and count(shown) > max_tokens:  # joined, it counts a token more: shrink
        lo, hi = (lo, hi - 1) if hi > best else (lo + 1, hi)
        shown = render(lo, hi)
    if count(shown) > max_tokens:
        return _cut_words(parts[best], max_tokens, count, lead=best > 0), True
    return shown, True


def _cut_words(sentence: str, max_tokens: int, count: Callable[[str], int], *, lead: bool) -> str:
    """The longest run of ``sentence``'s first words (with ellipses) within ``max_tokens``."""
    words = sentence.split()
    prefix = ELLIPSIS + " " if lead else ""
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(prefix + " ".join(words[:mid]) + " " + ELLIPSIS) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return prefix + " ".join(words[:lo]) + " " + ELLIPSIS if lo else ""
