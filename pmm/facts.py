"""Key information: what the user says about themselves, found by conservative rules.

    extract_facts("Hi, my name is Ana Sousa and I live in Lisbon.")
    # [Fact('name', 'Ana Sousa'), Fact('location', 'Lisbon')]
    extract_facts("I am tired")            # [] : "tired" is not a name

Rules fire only on statements (questions are skipped), need capitalised names and places,
and refuse common words, so small talk does not become "facts". Later statements replace
earlier ones for single-valued attributes (name, location, age, job).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .text import STOPWORDS

_NAME = r"[A-Z][a-zà-ÿ'’-]+(?:\s+[A-Z][a-zà-ÿ'’-]+){0,2}"
_PLACE = r"[A-Z][\w'’.-]*(?:(?:\s+|,\s*)(?:[A-Z][\w'’.-]*|de|da|do|del|la|le|on|upon))*"
_PHRASE = r"[^.!?;\n]{2,60}?"
_END = r"(?=\s*(?:[.!?;,\n]|$|\s+(?:and|but|so|because|since|where|now|these|this|for|with)\b))"

# Capitalised words that follow "I'm" without being a name.
_NOT_NAMES = frozenset(
    """sorry fine good great ok okay here there back done ready sure happy sad tired not just
    so very really going gonna still also always never afraid glad
    excited english american british french german spanish portuguese italian chinese japanese
    indian canadian australian irish scottish dutch swedish russian brazilian mexican muslim
    christian jewish hindu buddhist catholic vegan vegetarian monday tuesday wednesday thursday
    friday saturday sunday january february march april may june july august september october
    november december hungry thirsty busy free home alone late early curious confused interested
    trying looking thinking working learning planning hoping wondering using""".split()
)
_JOBS = (
    "engineer|developer|programmer|teacher|doctor|nurse|student|designer|lawyer|writer|"
    "manager|scientist|researcher|accountant|chef|artist|musician|photographer|consultant|"
    "architect|pilot|farmer|journalist|professor|pharmacist|dentist|mechanic|electrician|"
    "analyst|founder|entrepreneur|translator|librarian|therapist|veterinarian|firefighter"
)


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing the user said about themselves: ``attribute`` is one of ``name``,
    ``location``, ``origin``, ``age``, ``job``, ``works_at``, ``likes``, ``dislikes``,
    ``favorite <thing>`` or ``<relation> name``."""

    attribute: str
    value: str


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

_LIKE = "like|love|enjoy|adore|prefer"
_DISLIKE = "hate|dislike|can't stand|don't like|do not like"
_RELATIONS = (
    "wife|husband|partner|son|daughter|brother|sister|mother|father|mom|dad|friend|boss|"
    "dog|cat|kid|child|girlfriend|boyfriend"
)
# Triggers are case-insensitive ((?i:...)); names and places must be capitalised.
_PLACE_END = r"(?=\s*(?:[.!?;,\n]|$)|\s+[a-z])"
_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("name", re.compile(rf"\b(?i:my name(?:'s| is))\s+({_NAME}){_END}")),
    ("name", re.compile(rf"\b(?i:call me|i go by)\s+({_NAME}){_END}")),
    ("name", re.compile(rf"(?:^|[.!]\s+|,\s*)(?i:i'm|i am|this is)\s+({_NAME}){_END}")),
    (
        "location",
        re.compile(
            rf"\b(?i:i(?:'ve| have)? (?:live|lived|am living|'m living) in) ({_PLACE}){_PLACE_END}"
        ),
    ),
    (
        "location",
        re.compile(rf"\b(?i:i(?: just| recently)? (?:moved|relocated) to) ({_PLACE}){_PLACE_END}"),
    ),
    ("location", re.compile(rf"\b(?i:i(?:'m| am) (?:based|living) in) ({_PLACE}){_PLACE_END}")),
    (
        "origin",
        re.compile(rf"\b(?i:i(?:'m| am| come) (?:originally )?from) ({_PLACE}){_PLACE_END}"),
    ),
    ("age", re.compile(r"\bi(?:'m| am) (\d{1,3}) (?:years old|yo)\b", re.I)),
    ("job", re.compile(rf"\bi work as (?:an? )?({_PHRASE}){_END}", re.I)),
    ("job", re.compile(rf"\bi(?:'m| am) an? ((?:[a-z-]+ ){{0,2}}(?:{_JOBS})){_END}", re.I)),
    ("works_at", re.compile(rf"\b(?i:i work (?:at|for)) ({_PLACE}){_PLACE_END}")),
    (
        "likes",
        re.compile(
            rf"\bi (?:really |absolutely |also )?(?:{_LIKE}) ({_PHRASE}){_END}",
            re.I,
        ),
    ),
    (
        "dislikes",
        re.compile(
            rf"\bi (?:really )?(?:{_DISLIKE}) ({_PHRASE}){_END}",
            re.I,
        ),
    ),
]
_FAVORITE = re.compile(rf"\bmy favou?rite ([a-z]+(?: [a-z]+)?) is ({_PHRASE}){_END}", re.I)
_RELATION = re.compile(
    rf"\b(?i:my) ((?i:{_RELATIONS}))(?i:'s name is| is called| is named) ({_NAME}){_END}",
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
# "I like to think", "I love it": the object is not a preference worth keeping.
_WEAK_OBJECTS = frozenset("it that this them you to the idea when how what if".split())


def extract_facts(text: str) -> list[Fact]:
    """Facts stated in one user turn, in the order they appear."""
    found: list[Fact] = []
    for sentence in _SENTENCE.findall(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        for attribute, pattern in _RULES:
            for match in pattern.finditer(sentence):
                value = _clean(match.group(1))
                if value and _plausible(attribute, value):
                    found.append(Fact(attribute, value))
        for match in _FAVORITE.finditer(sentence):
            found.append(Fact(f"favorite {match.group(1).lower()}", _clean(match.group(2))))
        for match in _RELATION.finditer(sentence):
            found.append(Fact(f"{match.group(1).lower()}'s name", _clean(match.group(2))))
    return found


def _clean(value: str) -> str:
    return value.strip(" ,.'\"’").removesuffix(" too").removesuffix(" a lot").strip()


def _plausible(attribute: str, value: str) -> bool:
    first = value.split()[0].lower().strip("'’")
    if attribute == "name":
        return first not in _NOT_NAMES and first not in STOPWORDS
    if attribute in {"location", "origin", "works_at"}:
        return first not in _NOT_NAMES and first not in STOPWORDS
    if attribute in {"likes", "dislikes"}:
        return first not in _WEAK_OBJECTS and len(value) >= 3
    return True


class FactBook:
    """The facts of one session, updated turn by turn.

    >>> book = FactBook(); book.add("I live in Porto"); book.add("I moved to Lisbon")
    >>> book.lines()
    ['Lives in: Lisbon']
    """

    def __init__(self, max_values: int = 5) -> None:
        self.max_values = max_values
        self._facts: dict[str, list[str]] = {}

    def add(self, text: str) -> None:
        for fact in extract_facts(text):
            values = self._facts.setdefault(fact.attribute, [])
            if (
                fact.attribute in SINGLE_VALUED
                or fact.attribute.startswith(("favorite ",))
                or fact.attribute.endswith("'s name")
            ):
                values[:] = [fact.value]
            elif fact.value.lower() not in (v.lower() for v in values):
                values.append(fact.value)
                del values[: -self.max_values]

    def extend(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.add(text)

    def clear(self) -> None:
        self._facts.clear()

    def __bool__(self) -> bool:
        return bool(self._facts)

    def values(self, attribute: str) -> list[str]:
        return list(self._facts.get(attribute, []))

    def lines(self) -> list[str]:
        """One ``Label: value, value`` line per attribute, names first."""
        order = list(LABELS)
        keys = sorted(self._facts, key=lambda a: (order.index(a) if a in order else len(order), a))
        return [
            f"{LABELS.get(key, key[0].upper() + key[1:])}: {', '.join(self._facts[key])}"
            for key in keys
        ]
