"""Small text helpers shared by search, digests and fact rules: words and stopwords."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

_STOPWORD_TEXT = """
a about above after again against all am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do
does doesn't doing don't down during each few for from further had hadn't has hasn't
have haven't having he he'd he'll he's her here here's hers herself him himself his how
how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
mustn't my myself no nor not of off on once only or other ought our ours ourselves out
over own same shan't she she'd she'll she's should shouldn't so some such than that
that's the their theirs them themselves then there there's these they they'd they'll
they're they've this those through to too under until up very was wasn't we we'd we'll
we're we've were weren't what what's when when's where where's which while who who's
whom why why's with won't would wouldn't you you'd you'll you're you've your yours
yourself yourselves also just now like really yes yeah ok okay please thanks thank tell
know think said says say get got one
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def words(text: str) -> list[str]:
    """The words of ``text`` in order, as written.

    >>> words("Don't stop (now)!")
    ["Don't", 'stop', 'now']
    """
    return WORD.findall(text)


REPEAT_KEY_CHARS = 16_384
"""Characters of a text :func:`repeat_key` reads (its first ones; the window key reads as many)."""


def repeat_key(text: str | None) -> frozenset[str]:
    """What makes two texts one utterance said again: the set of their words, case-folded
    (``’`` read as ``'``), from the first :data:`REPEAT_KEY_CHARS` characters. Empty for a
    text with no word: such texts (emoji, erased turns) are never taken for repeats.

    A window key counts one utterance once and recall shows it once
    (:mod:`pmm.text.window_keys`, :func:`pmm.recall.sources.fused_hits`): a question asked
    twice does not outrank the fact it asks about.

    >>> repeat_key("What's my dog's name?") == repeat_key("what's my DOG’S name")
    True
    >>> repeat_key("I have a dog") == repeat_key("Do you have a dog?"), repeat_key("🐶")
    (False, frozenset())
    """
    if not text:
        return _NO_WORDS
    if len(text) <= 1024:
        return _short_repeat_key(text)
    return _key_of(text[:REPEAT_KEY_CHARS])


_NO_WORDS: frozenset[str] = frozenset()


@lru_cache(maxsize=8192)  # short texts only: the cache holds its keys' text
def _short_repeat_key(text: str) -> frozenset[str]:
    return _key_of(text)


def _key_of(text: str) -> frozenset[str]:
    return frozenset(WORD.findall(text.casefold().replace("’", "'")))


def search_terms(text: str, *, limit: int = 32) -> list[str]:
    """Lower-cased content words of a query, without duplicates; stopwords dropped unless
    nothing else is left. Nothing in the result carries search syntax."""
    seen: dict[str, None] = {}
    for word in words(text.lower()):
        word = word.replace("’", "'")
        if word.endswith("'s") and len(word) > 2:
            word = word[:-2]  # "dog's" finds "dog": the index splits it into "dog" + "s"
        seen.setdefault(word, None)
    terms = [w for w in seen if w not in STOPWORDS] or list(seen)
    return terms[:limit]


def symbol_needles(text: str, *, limit: int = 8) -> list[str]:
    """The symbols of a query that has no word (``"🐶"``, ``"❤️ ☕"``): its distinct
    characters of Unicode category ``So`` (emoji, pictographs, dingbats), which the
    full-text indexes drop. Empty when ``text`` holds a word: words are searched instead.

    >>> symbol_needles("🐶 ☕🐶")
    ['🐶', '☕']
    >>> symbol_needles("my 🐶")
    []
    """
    if WORD.search(text):  # a word (search_terms is empty exactly when there is none)
        return []
    seen: dict[str, None] = {}
    for char in text:
        if unicodedata.category(char) == "So":
            seen.setdefault(char, None)
    return list(seen)[:limit]


def snippet(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis.

    >>> snippet("a  long\nline", 8)
    'a long …'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def found_by(rankers: dict[str, int]) -> str:
    """Which rankers found a recall hit and where each placed it: ``keyword 1st, semantic
    3rd`` (readable, unlike fused scores that all look like 0.016)."""

    def nth(n: int) -> str:
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix}"

    return ", ".join(f"{name} {nth(rank)}" for name, rank in rankers.items()) or "-"
