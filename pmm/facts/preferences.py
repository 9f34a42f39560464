"""Likes, dislikes and favourites: the rules whose value is a list of things.

    LIKES("I love swimming and cycling.", 0, 28)
    # [Candidate(Fact('likes', 'swimming'), ...), Candidate(Fact('likes', 'cycling'), ...)]

"I like to cook" gives ``cooking``; a weak object ("I like it", "I love that") gives nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pmm.facts.complete import complete, shares_determiner
from pmm.facts.fact import Candidate, Fact, Rule
from pmm.facts.spans import guarded, phrase
from pmm.facts.words import WEAK_OBJECTS, WEAK_VERBS

_I = r"(?:i|we)"


def _gerund(verb: str) -> str:
    """ "cook" → "cooking", "bake" → "baking", "swim" → "swimming" (good enough for hobbies)."""
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    vowels = "aeiou"
    if (
        len(verb) <= 4
        and len(verb) >= 3
        and verb[-1] not in vowels + "wxy"
        and verb[-2] in vowels
        and verb[-3] not in vowels
    ):
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _preferences(attribute: str, trigger: str) -> Rule:
    pattern = re.compile(trigger, re.I)

    def rule(text: str, start: int, end: int) -> list[Candidate]:
        out: list[Candidate] = []
        for match in pattern.finditer(text, start, end):
            if guarded(text, start, match.start()) or _in_relative_clause(text, match.start()):
                continue
            span = phrase(text, match.end(), end, max_words=6)
            if span is None:
                continue
            items = _with_shared_head(list(_items(text, span)))
            for n, (item_start, item) in enumerate(items):
                words = item.split()
                first = words[0].lower()
                if first in WEAK_OBJECTS or len(item) < 3:
                    continue
                if first == "to":
                    if len(words) < 2 or words[1].lower() in WEAK_VERBS:
                        continue
                    item = " ".join([_gerund(words[1].lower()), *words[2:]])
                last = n == len(items) - 1
                value = complete(item, text[span[1] : end] if last else "")
                if value is None:
                    if n == 0 and shares_determiner(item):
                        break  # "the shape and light": the light of the photo too
                    continue
                out.append(Candidate(Fact(attribute, value), item_start, item_start + len(item)))
        return out

    return rule


_GAP_NOUNS = frozenset(
    "thing things something anything everything nothing stuff those what whatever one ones".split()
)
_HEADS = frozenset(
    "movies films books music games shows novels series songs stories food dishes".split()
)


def _in_relative_clause(text: str, trigger: int) -> bool:
    """ "songs I love make driving fun", "the friends we love": the liking is the clause's, and
    what follows the verb is not its object."""
    before = re.search(r"([^\W\d_]+)\s+$", text[max(0, trigger - 40) : trigger])
    return before is not None and before.group(1).lower() in _GAP_NOUNS


def _with_shared_head(items: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """ "horror and war movies" → "horror movies", "war movies": a one-word modifier
    before "and" shares the last item's head noun."""
    if len(items) < 2:
        return items
    head = items[-1][1].split()
    if len(head) < 2 or head[-1].lower() not in _HEADS:
        return items
    return [
        (at, f"{item} {head[-1]}") if " " not in item and not item.endswith("s") else (at, item)
        for at, item in items[:-1]
    ] + items[-1:]


def _items(text: str, span: tuple[int, int]) -> Iterator[tuple[int, str]]:
    """ "swimming and cycling" → "swimming", "cycling" (with their start offsets)."""
    pos = span[0]
    for part in re.split(r"(\s+and\s+|\s*,\s*)", text[span[0] : span[1]]):
        if part and not re.fullmatch(r"\s+and\s+|\s*,\s*", part):
            yield pos, part
        pos += len(part)


_FAVORITE = re.compile(r"\bmy\s+favou?rite\s+([^\W\d_]+(?:\s+[^\W\d_]+)?)\s+(?:is|are)\s+", re.I)


def favorite_rule(text: str, start: int, end: int) -> list[Candidate]:
    """ "My favourite colour is green" → ``favorite colour`` = ``green``."""
    out = []
    for match in _FAVORITE.finditer(text, start, end):
        span = phrase(text, match.end(), end, max_words=5)
        if span and not guarded(text, start, match.start()):
            slot = f"favorite {match.group(1).lower()}"
            out.append(Candidate(Fact(slot, text[span[0] : span[1]]), *span))
    return out


LIKES = _preferences(
    "likes",
    rf"\b{_I}\s+(?:really\s+|absolutely\s+|also\s+|just\s+|totally\s+|truly\s+)?"
    r"(?:like|love|enjoy|adore|prefer)\s+"
    r"|\bi(?:'m|\s+am)\s+(?:really\s+|very\s+|so\s+|quite\s+|also\s+)?"
    r"(?:into|passionate\s+about|an?\s+(?:big\s+|huge\s+)?fan\s+of|keen\s+on|fond\s+of)\s+",
)
DISLIKES = _preferences(
    "dislikes",
    rf"\b{_I}\s+(?:really\s+)?(?:hate|dislike|detest|loathe|can't\s+stand|cannot\s+stand|"
    r"don't\s+(?:really\s+)?(?:like|enjoy)|do\s+not\s+(?:like|enjoy))\s+"
    r"|\bi(?:'m|\s+am)\s+not\s+(?:an?\s+(?:big\s+)?fan\s+of|into|keen\s+on|fond\s+of)\s+",
)
