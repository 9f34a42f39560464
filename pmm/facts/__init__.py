"""Key information: what the user says about themselves (name, home, origin, job, age, pets,
family, likes), kept per session by :class:`FactBook`.

    extract_facts("Hi, I'm Bob from Oslo.")      # [Fact('name', 'Bob'), Fact('origin', 'Oslo')]
    extract_facts("I am tired")                  # [] : "tired" is not a name
    extract_facts("I live in Łódź.", nlp=True)   # rules checked by spaCy when installed

Rules (:mod:`pmm.facts.rules`) always run; with ``nlp=True`` (``PMM_FACTS_NLP``) a spaCy
pipeline (:mod:`pmm.facts.nlp`) drops candidates its parse contradicts and adds entities the
rules missed. Without spaCy or its model the rules alone run, after one warning.
"""

from __future__ import annotations

from pmm.facts.book import LABELS, SINGLE_VALUED, FactBook, extract_facts, slot_group
from pmm.facts.fact import Candidate, Fact

__all__ = [
    "LABELS",
    "SINGLE_VALUED",
    "Candidate",
    "Fact",
    "FactBook",
    "extract_facts",
    "slot_group",
]
