"""Precision and recall of :func:`pmm.facts.extract_facts` against labelled sentences.

    cases = load_cases("tests/facts/data/facts_cases.jsonl")
    report = evaluate(cases, nlp=False)
    report.overall.precision, report.by_slot["name"].recall

A case is one JSON line ``{"split": "dev", "text": ..., "facts": [[attribute, value], ...]}``;
``facts`` is empty for a trap. A predicted fact counts when attribute and value match the
label exactly (values compared without case).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pmm.errors import InvalidInputError
from pmm.facts.book import extract_facts, slot_group
from pmm.facts.fact import Fact


@dataclass(frozen=True, slots=True)
class Case:
    split: str
    text: str
    facts: tuple[Fact, ...]


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


@dataclass
class Report:
    overall: Score = field(default_factory=Score)
    by_slot: dict[str, Score] = field(default_factory=dict)
    errors: list[tuple[Case, list[Fact]]] = field(default_factory=list)


def load_cases(path: str | Path) -> list[Case]:
    cases = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            facts = tuple(Fact(str(a), str(v)) for a, v in row["facts"])
            cases.append(Case(str(row["split"]), str(row["text"]), facts))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError(f"{path}:{number}: not a fact case ({exc})") from exc
    return cases


def evaluate(
    cases: Iterable[Case],
    *,
    nlp: bool = False,
    extract: Callable[[str], list[Fact]] | None = None,
) -> Report:
    """Score ``extract_facts`` (or ``extract``, another extractor) over ``cases``."""
    report = Report()
    for case in cases:
        predicted = extract(case.text) if extract else extract_facts(case.text, nlp=nlp)
        gold = {(f.attribute, f.value.lower()) for f in case.facts}
        got = {(f.attribute, f.value.lower()) for f in predicted}
        for attribute, value in gold | got:
            score = report.by_slot.setdefault(slot_group(attribute), Score())
            hit = (attribute, value) in gold, (attribute, value) in got
            for target in (score, report.overall):
                if all(hit):
                    target.tp += 1
                elif hit[1]:
                    target.fp += 1
                else:
                    target.fn += 1
        if gold != got:
            report.errors.append((case, predicted))
    return report
