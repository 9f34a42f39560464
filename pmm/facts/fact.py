"""A fact a rule found, and the shape of a rule.

Candidate(Fact("name", "Bob"), start=7, end=10)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing the user said about themselves: ``attribute`` is one of ``name``,
    ``location``, ``origin``, ``age``, ``job``, ``works_at``, ``likes``, ``dislikes``,
    ``favorite <thing>`` or ``<relative or pet>'s name`` (``sister's name``, ``cat's name``)."""

    attribute: str
    value: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fact with the span of its value in the text, and whether the rule that found it is a
    weak one (a bare "I'm X" or "my sister X") that a parser may overrule."""

    fact: Fact
    start: int
    end: int
    weak: bool = False


Rule = Callable[[str, int, int], list[Candidate]]
"""A rule: ``rule(text, start, end)`` gives the candidates in ``text[start:end]``, one
statement of a user turn."""
