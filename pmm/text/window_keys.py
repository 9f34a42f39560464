"""Window and date keys: the extra text a turn is found by (pure functions, no SQL).

A turn's *window* is its own text plus the text of up to ``radius`` turns before and after
it in the same session, never across a ``clear`` marker; its *date key* is its conversation
time in words. Keyword recall searches both beside the turn's own text, so that
"That sounds great! When?" / "Next Tuesday" is found by a question about the plan it
answers, and "When did ...?" / "in March" questions reach the turn through its date.

    >>> date_words("2024-01-14T18:30:00.000000Z")
    '2024 January 14 Sunday'
    >>> rows = [WindowRow(1, "prompt", "a"), WindowRow(2, "response", "b"),
    ...         WindowRow(3, "clear", None), WindowRow(4, "prompt", "c")]
    >>> window_texts(rows, radius=2, targets={1, 4})
    {1: 'a b', 4: 'c'}
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from datetime import date
from functools import lru_cache
from typing import NamedTuple

from pmm.text.stemmer import folded, fts_tokens, query_tokens, term_counts
from pmm.text.words import STOPWORDS, repeat_key

WINDOW_KINDS: tuple[str, ...] = ("prompt", "response")
"""The kinds that get a window key and appear in one another's windows."""
BOUNDARY_KIND = "clear"
"""A window never reaches across an event of this kind (Mind.clear's marker)."""
DEFAULT_WINDOW_RADIUS = 2
"""Turns before and after a turn in its window (PMM_RECALL_WINDOW), chosen by measurement."""

TEMPORAL_WORDS = frozenset(
    {"when", "date", "day", "days", "week", "weeks", "month", "months", "year", "years",
     "ago", "last", "yesterday", "today", "tomorrow", "weekend", "morning", "evening",
     "night", "time", "since", "before", "after", "recently", "earlier", "later",
     "january", "february", "march", "april", "may", "june", "july", "august",
     "september", "october", "november", "december", "monday", "tuesday", "wednesday",
     "thursday", "friday", "saturday", "sunday", "spring", "summer", "autumn", "fall",
     "winter"}
)  # fmt: skip
"""Query words that make a question temporal: the date/window key weighs more for it."""


WINDOW_TERM_CAP = 2
"""Occurrences of a term a window is indexed with at most (migrations/0011): a window is
five turns, and counting a term up to twice ranks as well as counting all of them (bench/
recall.py), in under half the index; once only cost 1.4 points of keyword recall@10."""
WINDOW_SKIP = frozenset(w for w in STOPWORDS if "'" not in w)
"""Tokens the window index leaves out: one-word stopwords, as words, not stems (a stopword's
stem may be a content word's: "please" / "pleased", "says" / "saying"). A query uses them
only when it holds nothing else (:func:`pmm.text.words.search_terms`); the turn index has them."""
WINDOW_TURN_CHARS = 16_384
"""Characters of a turn's text that its own and its neighbours' windows hold (its first
ones): a window is context, and a 3.6 MB tool result would otherwise make every key built
over it (each of the next ``radius`` appends rewrites one) as big and as slow as itself. The
turn's own key still holds all of it."""
WINDOW_BODY_RULES = 4
"""Bump when :func:`window_body` changes in a way :data:`WINDOW_BODY_FORMAT` cannot see."""


def _body_format() -> str:
    probe = "Running runs RUN caresses ponies agreed happily Łódź don't e-mail 3.5 東京 naïve"
    parts = (
        WINDOW_BODY_RULES,
        WINDOW_TERM_CAP,
        WINDOW_TURN_CHARS,
        sorted(WINDOW_SKIP),
        fts_tokens(probe),
    )
    return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()[:16]


WINDOW_BODY_FORMAT = _body_format()
"""How this code makes window bodies (rules, cap, stopwords, tokens and stems): a file's
window index records the format it was built with and is rebuilt under another one
(migrations/0012), since a contentless index deletes a row by the body it was indexed with."""


def window_body(text: str) -> str:
    """A window's text as the window index holds it: each term at most
    :data:`WINDOW_TERM_CAP` times (as its first token), without :data:`WINDOW_SKIP`; the
    order of the terms is kept (the index keeps no order that any query reads).

    >>> window_body("The tomato, the tomatoes and one more tomato")
    'tomato tomato'
    """
    return _capped([term_counts(text, WINDOW_SKIP)])


def window_terms(parts: Iterable[dict[str, tuple[str, int]]]) -> dict[str, tuple[str, int]]:
    """The terms a window is indexed with, from its turns' :func:`~pmm.text.stemmer.term_counts`
    without :data:`WINDOW_SKIP`, in order: term -> (its first token, occurrences up to
    :data:`WINDOW_TERM_CAP`) (:func:`window_body` is these tokens as text).

    >>> window_terms([term_counts("the tomato", WINDOW_SKIP), term_counts("tomatoes, tomato")])
    {'tomato': ('tomato', 2)}
    """
    cap = WINDOW_TERM_CAP
    kept: dict[str, tuple[str, int]] = {}
    get = kept.get
    # run at every window rewrite of both rankers: no min() calls, and a term's pair is
    # kept as it is when under the cap
    for counts in parts:
        for term, pair in counts.items():
            held = get(term)
            if held is None:
                kept[term] = pair if pair[1] <= cap else (pair[0], cap)
            elif held[1] < cap:
                total = held[1] + pair[1]
                kept[term] = (held[0], total if total < cap else cap)
    return kept


def _capped(parts: Iterable[dict[str, tuple[str, int]]]) -> str:
    return " ".join(" ".join([token] * count) for token, count in window_terms(parts).values())


@lru_cache(maxsize=8192)
def window_query_terms(word: str) -> tuple[str, ...]:
    """The terms a query word is searched for on the window key: a word FTS5 splits into
    several tokens (``o'clock``, ``e-mail``) is the AND of them, less those in
    :data:`WINDOW_SKIP` (the index has none) unless that is all of them.
    :mod:`pmm.storage.sqlite.search` applies the same rule to its FTS5 query text (its
    ``_fts_word``). Cached: every recall reads its query's words once per key.

    >>> window_query_terms("e-mails"), window_query_terms("ma'am"), window_query_terms("the")
    (('e', 'mail'), ('ma',), ('the',))
    """
    tokens = query_tokens(word)
    if len(tokens) > 1:
        tokens = [t for t in tokens if folded(t) not in WINDOW_SKIP] or tokens
    return tuple(term for token in tokens for term in fts_tokens(token))


class WindowRow(NamedTuple):
    """One event of a session, as the window builder needs it (text None = erased)."""

    id: int
    kind: str
    text: str | None


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def date_words(ts: str) -> str:
    """A row's ``ts`` in words: year, month name, day of month, weekday (English, whatever
    the locale)."""
    return _day_words(ts[:10])


@lru_cache(maxsize=4096)
def _day_words(day: str) -> str:
    try:
        when = date.fromisoformat(day)
    except ValueError:
        return ""
    return f"{when.year} {_MONTHS[when.month - 1]} {when.day} {_WEEKDAYS[when.weekday()]}"


def _segments(rows: Sequence[WindowRow]) -> list[list[WindowRow]]:
    """The turns of ``rows`` split at every clear marker (a window never crosses one)."""
    segment: list[WindowRow] = []
    segments: list[list[WindowRow]] = [segment]
    for row in rows:
        if row.kind == BOUNDARY_KIND:
            segment = []
            segments.append(segment)
        elif row.kind in WINDOW_KINDS:
            segment.append(row)
    return segments


def window_members(
    rows: Sequence[WindowRow], radius: int, targets: Collection[int]
) -> dict[int, list[WindowRow]]:
    """The rows whose text makes up the window of each turn in ``targets`` (turn kinds
    only, erased turns left out), in order. ``rows`` are one session's events in id order
    (turns and clear markers).

    Repeats do not reinforce (:func:`~pmm.text.words.repeat_key`): a neighbour that says
    the turn's own words again is left out of its window. A question asked twice would
    otherwise hold its words twice in each copy's window and outrank the fact it asks
    about.

    >>> rows = [WindowRow(1, "prompt", "Bolt is my dog."), WindowRow(2, "prompt", "My dog?"),
    ...         WindowRow(3, "response", "Ok."), WindowRow(4, "prompt", "my dog"),
    ...         WindowRow(5, "response", "Ok.")]
    >>> {i: [r.id for r in near] for i, near in window_members(rows, 2, {2, 3}).items()}
    {2: [1, 2, 3], 3: [1, 2, 3, 4]}
    """
    found: dict[int, list[WindowRow]] = {}
    for seg in _segments(rows):
        for pos, row in enumerate(seg):
            if row.id not in targets or row.text is None:
                continue
            near = seg[max(0, pos - radius) : pos + radius + 1]
            found[row.id] = _distinct(row, [r for r in near if r.text])
    return found


def _distinct(turn: WindowRow, near: list[WindowRow]) -> list[WindowRow]:
    """``near`` (holding ``turn``) without the other rows that repeat ``turn``; a text
    with no word is never taken for a repeat."""
    own = repeat_key(turn.text)
    if not own:
        return near
    return [r for r in near if r is turn or repeat_key(r.text) != own]


def reached_turns(rows: Sequence[WindowRow], radius: int, marked: Collection[int]) -> set[int]:
    """The turns whose windows hold a ``marked`` turn (one appended, or whose text
    changed): it and up to ``radius`` turns either side of it, never across a clear
    marker. ``rows`` as for :func:`window_members`; each backend rewrites these windows.

    >>> rows = [WindowRow(1, "prompt", "a"), WindowRow(2, "response", "b"),
    ...         WindowRow(3, "clear", None), WindowRow(4, "prompt", "c")]
    >>> sorted(reached_turns(rows, radius=2, marked={4}))
    [4]
    """
    reached: set[int] = set()
    for seg in _segments(rows):
        for pos, row in enumerate(seg):
            if row.id in marked:
                reached.update(r.id for r in seg[max(0, pos - radius) : pos + radius + 1])
    return reached


def window_texts(
    rows: Sequence[WindowRow], radius: int, targets: Collection[int]
) -> dict[int, str]:
    """The window text of each turn in ``targets`` (see :func:`window_members`): each
    member's first :data:`WINDOW_TURN_CHARS` characters."""
    return {
        event_id: " ".join(r.text[:WINDOW_TURN_CHARS] for r in near if r.text)
        for event_id, near in window_members(rows, radius, targets).items()
    }


def window_bodies(
    rows: Sequence[WindowRow],
    radius: int,
    targets: Collection[int],
    counted: dict[int, dict[str, tuple[str, int]]] | None = None,
) -> dict[int, str]:
    """:func:`window_body` of each target's window text (:func:`window_texts`), reading
    each row's terms once (``counted``: row id -> its terms, shared between calls), from
    its first :data:`WINDOW_TURN_CHARS` characters: the work is bounded by the radius,
    whatever a turn holds.

    >>> huge = WindowRow(1, "response", "row; " * 900_000)  # a 4.5 MB tool result
    >>> window_bodies([huge, WindowRow(2, "prompt", "sales figures")], 1, {2})
    {2: 'row row sales figures'}
    """
    counted = {} if counted is None else counted

    def terms(row: WindowRow) -> dict[str, tuple[str, int]]:
        found = counted.get(row.id)
        if found is None:
            text = (row.text or "")[:WINDOW_TURN_CHARS]
            found = counted[row.id] = term_counts(text, WINDOW_SKIP)
        return found

    return {
        event_id: _capped(terms(r) for r in near)
        for event_id, near in window_members(rows, radius, targets).items()
    }


def is_temporal(words: Sequence[str]) -> bool:
    """Whether a query's (lower-cased) words ask about time."""
    return any(w in TEMPORAL_WORDS for w in words)
