"""Questions that ask for a fact slot ("what do I do for a living?" asks for a job): the
keyword rankers search the slot's words as well, and the turns whose facts
(:mod:`pmm.facts`) fill the slot move up.

    >>> asked_slots("What do I do for a living?"), asked_slots("Where is the living room?")
    (('job',), ())
    >>> keyword_query("What do I do for a living?")
    'What do I do work job occupation profession'

A turn says "I work as a nurse" or "I'm a nurse", and the question says "what do I do for
a living?": they share no word but "living", which stems to "live" and finds "I live in
Zürich." instead. So the idiom's words are not searched, the slot's words are, and a
candidate turn whose facts fill the slot ranks before the others
(:func:`slot_first`) when it is the asker's: for a first-person question ("my", "I") a user
turn, for a question that names someone (LoCoMo's "What is Caroline's job?") a turn that
person speaks ("Caroline: I'm a counselor.": a fact is its speaker's, and PMM knows no
speaker's name but from such a prefix).

Measured on LoCoMo and the generated chat dataset (docs/benchmarks/locomo.md, "What do I
do for a living?"): wider slot questions ("career", "job" anywhere) lost held out, so
only questions that ask what the job is are slot questions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from pmm.facts import extract_facts, slot_group
from pmm.recall.rerank import query_names
from pmm.records import Event
from pmm.text.stemmer import fts_tokens

if TYPE_CHECKING:
    from pmm.storage.base import EventLog

__all__ = ["SLOTS", "Slot", "asked_slots", "keyword_query", "slot_first"]


class Slot(NamedTuple):
    """A fact slot a question can ask for: the question's ``asks`` pattern, the words of
    it that are no evidence (``idiom``, searched without them), the ``words`` the keyword
    rankers search beside the question's, and the fact ``attributes`` that fill it."""

    asks: re.Pattern[str]
    idiom: re.Pattern[str] | None
    words: str
    attributes: frozenset[str]


SLOTS: dict[str, Slot] = {
    "job": Slot(
        re.compile(
            r"\b(?:for a living|do for work|what do (?:i|you) do\s*(?:\?|$)|"
            r"where do (?:i|you) work\b|"
            r"what(?: is|'s| was) (?:my|your|\w+'s) (?:job|occupation|profession)\b|"
            r"what (?:job|occupation|profession) (?:do|does|did)\b)",
            re.IGNORECASE,
        ),
        re.compile(r"\bfor a living\b", re.IGNORECASE),
        "work job occupation profession",
        frozenset({"job", "works_at"}),
    ),
}
"""The slots recall knows questions for, by name (:data:`pmm.facts.Fact.attribute` groups)."""

_WORD = re.compile(r"[^\W_]+")
_FIRST_PERSON = frozenset({"i", "my", "me", "mine", "myself"})
_FACT_TEXT_CHARS = 2_000
"""Facts are read from a candidate's first this many characters: a statement of one's job
is short, and every candidate of a slot question is read."""


def asked_slots(query: str) -> tuple[str, ...]:
    """The slots ``query`` asks for (names of :data:`SLOTS`), in their order there."""
    return tuple(name for name, slot in SLOTS.items() if slot.asks.search(query))


def keyword_query(query: str) -> str:
    """``query`` as the keyword rankers search it: for each slot it asks for, without the
    slot's idiom, and with the slot's words when it names none of them ("what's my job?"
    is searched as it is: the generated chat dataset's "What was Yuki's job before?" lost
    answers with "work" and the rest added); any other query as it is.

    >>> keyword_query("What's my job?"), keyword_query("What do you do?")
    ("What's my job?", 'What do you do work job occupation profession')
    """
    slots = asked_slots(query)
    if not slots:
        return query
    extra = []
    for name in slots:
        slot = SLOTS[name]
        if slot.idiom is not None:
            query = slot.idiom.sub("", query)
        if slot.words and not set(fts_tokens(slot.words)) & set(fts_tokens(query)):
            extra.append(slot.words)
    return " ".join([query.rstrip(" ?!."), *extra]) if extra else query


@lru_cache(maxsize=4096)
def _attributes(text: str) -> frozenset[str]:
    """The attributes of the facts ``text`` states, and their slot groups ("pet" for
    "dog's name")."""
    facts = extract_facts(text[:_FACT_TEXT_CHARS])
    return frozenset(a for f in facts for a in (f.attribute, slot_group(f.attribute)))


def slot_first(
    store: EventLog,
    query: str,
    fused: Sequence[tuple[int, float, dict[str, int]]],
    read: Mapping[int, Event],
) -> list[tuple[int, float, dict[str, int]]]:
    """``fused`` (best first, as :func:`~pmm.recall.fusion.rrf_fuse` gives it) with the
    candidates whose facts fill a slot ``query`` asks for moved to the front, in their
    order; the others follow in theirs. Only the asker's candidates move: user turns for a
    first-person question; for a question about a person it names
    (:func:`~pmm.recall.rerank.query_names`), turns of a transcript that person speaks
    ("Caroline: I'm a counselor."); a question of neither kind moves nothing. Candidates'
    rows come from ``read`` or ``store``.

    >>> slot_first(store, "what's my job?", [(3, 0.9, {}), (7, 0.5, {})], {})  # doctest: +SKIP
    [(7, 0.9, {}), (3, 0.9, {})]
    """
    slots = asked_slots(query)
    if not slots or not fused:
        return list(fused)
    wanted = frozenset().union(*(SLOTS[name].attributes for name in slots))
    first_person = bool(_FIRST_PERSON.intersection(_WORD.findall(query.lower())))
    names = frozenset() if first_person else query_names(query)
    if not first_person and not names:
        return list(fused)
    missing = [row[0] for row in fused if row[0] not in read]
    events = {**read, **store.get_many(missing)} if missing else read

    def fills(event_id: int) -> bool:
        event = events.get(event_id)
        if event is None or not event.text:
            return False
        if names:  # a fact is its speaker's: the turn must be theirs ("Caroline: I ...")
            speaker = event.text.partition(":")[0].strip().lower()
            if speaker not in names:
                return False
        elif event.role != "user":
            return False
        return bool(wanted & _attributes(event.text))

    moved = [row for row in fused if fills(row[0])]
    if not moved:
        return list(fused)
    kept = {row[0] for row in moved}
    top = fused[0][1]  # scores stay in order: a moved row takes the first one's at least
    return [(i, max(score, top), ranks) for i, score, ranks in moved] + [
        row for row in fused if row[0] not in kept
    ]
