"""The facts of a session: :func:`extract_facts` for one turn, :class:`FactBook` for many.

    book = FactBook()
    book.extend(["I live in Porto", "I love jazz.", "I moved to Lisbon"])
    book.lines()                   # ['Lives in: Lisbon', 'Likes: jazz']

Later statements replace earlier ones for single-valued attributes (name, location, origin,
age, job, works_at, favourites, a relative's or pet's name); likes and dislikes keep the
``max_values`` newest distinct values.
"""

from __future__ import annotations

from collections.abc import Iterable

from pmm.facts.fact import Fact
from pmm.facts.rules import candidates
from pmm.facts.words import FAMILY, PET_KIND

SINGLE_VALUED = frozenset({"name", "location", "origin", "age", "job", "works_at"})
LABELS = {
    "name": "Name",
    "location": "Lives in",
    "origin": "From",
    "age": "Age",
    "job": "Works as",
    "works_at": "Works at",
    "likes": "Likes",
    "dislikes": "Dislikes",
}


FACT_SCAN_CHARS = 20_000
"""Facts are read from the first this many characters of a turn: what a user says about
themselves is not buried deep in a pasted file, and the rules took ~5 s over a 2 MB paste."""


def extract_facts(text: str, *, nlp: bool = False) -> list[Fact]:
    """Facts stated in one user turn (its first :data:`FACT_SCAN_CHARS` characters), in
    the order they appear, without duplicates.

    With ``nlp``, a spaCy parse confirms the rules' candidates and adds what it finds (see
    :mod:`pmm.facts.nlp`); when spaCy or its model is missing, the rules alone answer."""
    text = text[:FACT_SCAN_CHARS]
    found = candidates(text)
    if nlp:
        from pmm.facts.nlp import refine

        facts = refine(text, found)
    else:
        facts = [c.fact for c in found]
    return list(dict.fromkeys(facts))


def slot_group(attribute: str) -> str:
    """The slot an attribute is reported under: ``sister's name`` → ``family``,
    ``cat's name`` → ``pet``, ``favorite color`` → ``favorite``; others as they are."""
    if attribute.endswith("'s name"):
        noun = attribute.removesuffix("'s name")
        return "family" if noun in FAMILY or noun not in PET_KIND else "pet"
    if attribute.startswith("favorite "):
        return "favorite"
    return attribute


def _single_valued(attribute: str) -> bool:
    return attribute in SINGLE_VALUED or slot_group(attribute) in {"family", "pet", "favorite"}


class FactBook:
    """The facts of one session, updated turn by turn (user turns only: the caller decides).

    >>> book = FactBook(); book.add("I live in Porto"); book.add("I moved to Lisbon")
    >>> book.lines()
    ['Lives in: Lisbon']

    ``nlp=True`` runs each turn through spaCy as well (``PMM_FACTS_NLP``).

    The facts of a user's many threads go in one book, each value with its ``source``
    (the thread and date it was said in), shown by ``lines(sources=True)``; a thread's
    clear marker drops that thread's values (:meth:`drop_source_session`)::

        book.add("I live in Porto", source=("thread-1", "2026-11-20"))
        book.lines(sources=True)      # ['Lives in: Porto (2026-11-20)']
    """

    def __init__(self, max_values: int = 5, *, nlp: bool = False) -> None:
        self.max_values = max_values
        self.nlp = nlp
        self._facts: dict[str, list[str]] = {}
        self._sources: dict[tuple[str, str], tuple[str, str]] = {}

    def add(self, text: str, *, source: tuple[str, str] | None = None) -> None:
        for fact in extract_facts(text, nlp=self.nlp):
            values = self._facts.setdefault(fact.attribute, [])
            if _single_valued(fact.attribute):
                values[:] = [fact.value]
            elif fact.value.lower() not in (v.lower() for v in values):
                values.append(fact.value)
                del values[: -self.max_values]
            if source is not None:
                self._sources[fact.attribute, fact.value.lower()] = source

    def drop_source_session(self, session: str) -> None:
        """Forget the values said in thread ``session`` (its history was cleared)."""
        for attribute in list(self._facts):
            values = self._facts[attribute]
            values[:] = [
                v
                for v in values
                if self._sources.get((attribute, v.lower()), ("", ""))[0] != session
            ]
            if not values:
                del self._facts[attribute]
        self._sources = {k: v for k, v in self._sources.items() if v[0] != session}

    def extend(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.add(text)

    def clear(self) -> None:
        self._facts.clear()
        self._sources.clear()

    def __bool__(self) -> bool:
        return bool(self._facts)

    def values(self, attribute: str) -> list[str]:
        return list(self._facts.get(attribute, []))

    def lines(self, *, sources: bool = False) -> list[str]:
        """One ``Label: value, value`` line per attribute, names first (with ``sources``,
        each value followed by the date it was said)."""
        order = list(LABELS)
        keys = sorted(self._facts, key=lambda a: (order.index(a) if a in order else len(order), a))
        return [
            f"{LABELS.get(key, key[0].upper() + key[1:])}: "
            + ", ".join(self._shown(key, v, sources) for v in self._facts[key])
            for key in keys
        ]

    def _shown(self, attribute: str, value: str, sources: bool) -> str:
        source = self._sources.get((attribute, value.lower())) if sources else None
        # the date it was said; the thread id stays out of the prompt (ids are often e-mail
        # addresses, and can be thousands of characters)
        return value if source is None else f"{value} ({source[1]})"
