"""What the learned fusion reads of a query and of a turn's text: the names it names, the
calendar parts, its content terms, and whether a turn asks rather than tells
(:mod:`pmm.recall.rerank` turns them into features; :mod:`pmm.recall.session_rank` ranks
sessions by the terms).

    from pmm.recall.query_features import query_names, query_terms

    query_names("When did Caroline go to Jon's LGBTQ support group?")  # caroline, jon, lgbtq
    query_terms("What's my dog's name?")                               # dog, name
"""

from __future__ import annotations

import re

from pmm.text.stemmer import fts_tokens
from pmm.text.words import STOPWORDS, search_terms

WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
"""A word as the name and length features read it (letters, inner apostrophes and hyphens)."""
_NOT_NAMES = frozenset(
    """i i'm i've i'd i'll what when where who whom whose why how which would could should
    did does do is are was were has have had can will may might the a an in on at of for
    and or but if to from by with about as into after before during since than that this
    these those there their they he she his her hers him it its we our you your my me
    mr mrs ms dr yes no ok okay""".split()
)


def query_names(query: str) -> frozenset[str]:
    """The capitalised words of ``query`` that are likely names (lower-cased, without a
    possessive ``'s``): not its first word, not a function word.

    >>> sorted(query_names("When did Caroline go to Jon's LGBTQ support group?"))
    ['caroline', 'jon', 'lgbtq']
    >>> query_names("What did I say?")
    frozenset()
    """
    found = set()
    for n, m in enumerate(WORD.finditer(query)):
        word = m.group(0)
        if n == 0 or not word[0].isupper():
            continue
        low = word.lower().removesuffix("'s").removesuffix("’s").strip("'-")
        if low and low not in _NOT_NAMES:
            found.add(low)
    return frozenset(found)


_MONTHS = {
    m: n
    for n, m in enumerate(
        "january february march april may june july august september october november "
        "december".split(),
        start=1,
    )
}
_DATE_PART = re.compile(
    r"\b(?:(\d{1,2})\s+)?(" + "|".join(_MONTHS) + r")\b(?:\s+(\d{1,2})(?!\d))?|\b((?:19|20)\d\d)\b",
    re.IGNORECASE,
)


def query_dates(query: str) -> frozenset[str]:
    """The calendar parts a query names, as ``ts`` prefixes and parts: ``Y2023``,
    ``M06``, ``D13`` (a day only beside a month).

    >>> sorted(query_dates("What did Gina find on 1 February, 2023?"))
    ['D01', 'M02', 'Y2023']
    >>> sorted(query_dates("When did Melanie go camping in June?"))
    ['M06']
    >>> query_dates("May I ask when we met?")
    frozenset()
    """
    found: set[str] = set()
    for m in _DATE_PART.finditer(query):
        before, month, after, year = m.groups()
        if year:
            found.add(f"Y{year}")
            continue
        if month[0].isupper() or month.lower() != "may":  # "may" the verb is no month
            if month == "May" and m.start() == 0:
                continue
            found.add(f"M{_MONTHS[month.lower()]:02d}")
            day = before or after
            if day and 1 <= int(day) <= 31:
                found.add(f"D{int(day):02d}")
    return frozenset(found)


def query_terms(query: str) -> frozenset[str]:
    """The stems of the query's content words (stopwords left out, unlike a search whose
    query holds nothing else).

    >>> sorted(query_terms("What's my dog's name?"))
    ['dog', 'name']
    """
    return frozenset(t for w in search_terms(query) if w not in STOPWORDS for t in fts_tokens(w))


def date_parts(ts: str) -> frozenset[str]:
    """``2023-06-13T...`` as ``{'Y2023', 'M06', 'D13'}`` (empty when not a date)."""
    if len(ts) < 10 or ts[4] != "-" or ts[7] != "-":
        return frozenset()
    return frozenset((f"Y{ts[:4]}", f"M{ts[5:7]}", f"D{ts[8:10]}"))


_CAPTION = re.compile(r"\s*\[[^\]]*\]\s*$")
"""An image caption in brackets at the end of a turn."""


def is_question_turn(text: str) -> bool:
    """A turn that asks rather than tells: its last sentence ends with ``?`` (an image
    caption in brackets after it is ignored).

    >>> is_question_turn("Ann: What's my dog's name?"), is_question_turn("I have a dog.")
    (True, False)
    >>> is_question_turn("Nice! Where was it? [shares a photo of a beach]")
    True
    """
    if "[" not in text:  # no caption to strip (the pattern needs a bracket): the common case
        return text.rstrip().endswith("?")
    return _CAPTION.sub("", text).rstrip().endswith("?")
