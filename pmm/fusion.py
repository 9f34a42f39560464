"""Fusion policy: which weights one query's rankers are fused with, from two things the
query shows - temporal words, and how much lexical evidence the keyword rankers found.

    from pmm.fusion import FusionPolicy, lexical_coverage

    policy = FusionPolicy({"turn": 0.25, "window": 1.5, "dense": 0.1},
                          temporal=TEMPORAL_KEYWORD_WEIGHTS,
                          low_evidence=LOW_EVIDENCE_WEIGHTS, threshold=EVIDENCE_THRESHOLD)
    coverage = lexical_coverage(query, texts_of_the_top_turn_hits)
    weights = policy.weights_for(temporal=True, coverage=coverage)

Why: a question worded like the memory ("What did Yuki call her new pet?" / "Yuki named
her pet Nugget") is best found by the keyword keys; one worded differently ("Which doctor
told me to drink less caffeine?" / "The cardiologist said I should cut back on coffee")
gets only incidental keyword hits, and there the dense ranker should lead. The share of
the query's words that its best keyword hits hold tells the two apart without labels.
Measured by ``python bench/fusion.py`` (see the README's Recall section).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .text import search_terms

TEMPORAL_KEYWORD_WEIGHTS: dict[str, float] = {"turn": 1.0, "window": 0.5}
"""Keyword weights for a temporal question ("when did we ...?"): the turn that names the
event leads; its neighbours share its date but mostly not its subject."""
LOW_EVIDENCE_WEIGHTS: dict[str, float] = {"turn": 0.1, "window": 0.1, "dense": 1.0, "digest": 0.0}
"""Hybrid weights when the keyword rankers have little lexical evidence: dense leads."""
EVIDENCE_HITS = 3
"""How many of the turn ranker's best hits are read to measure lexical evidence."""
EVIDENCE_THRESHOLD = 0.5
"""Below this share of the query's content words found in those hits, the question is
taken to be worded differently from the memory (:data:`LOW_EVIDENCE_WEIGHTS`)."""


def lexical_coverage(query: str, texts: Iterable[str]) -> float:
    """The share of the query's content words that occur, as written (lower-cased), in
    ``texts``: 1.0 when every informative word was found, 0.0 when none was (or the
    query has no words). Exact words on purpose: a stemmed match ("planted" for "plant")
    is weaker evidence and measured worse.

    >>> lexical_coverage("Which doctor told me to drink less caffeine?",
    ...                  ["The cardiologist said I should cut back on coffee."])
    0.0
    >>> lexical_coverage("What did Yuki call her new pet?", ["Yuki named her pet Nugget"])
    0.5
    """
    terms = search_terms(query)
    if not terms:
        return 0.0
    found: set[str] = set()
    for text in texts:
        found.update(search_terms(text, limit=10_000))
    return sum(t in found for t in terms) / len(terms)


@dataclass(frozen=True)
class FusionPolicy:
    """The weights one query is fused with: ``weights``, unless the query is temporal
    (``temporal`` overrides some of them) or the keyword rankers have little lexical
    evidence (coverage below ``threshold``: ``low_evidence`` replaces them all).

    >>> policy = FusionPolicy({"turn": 1.0, "dense": 0.5}, low_evidence={"dense": 1.0},
    ...                       threshold=0.5)
    >>> policy.weights_for(temporal=False, coverage=0.2)
    {'dense': 1.0}
    """

    weights: Mapping[str, float]
    temporal: Mapping[str, float] | None = None
    low_evidence: Mapping[str, float] | None = None
    threshold: float = 0.0

    @property
    def needs_coverage(self) -> bool:
        return self.low_evidence is not None and self.threshold > 0

    def weights_for(self, *, temporal: bool, coverage: float | None) -> dict[str, float]:
        if self.low_evidence is not None and coverage is not None and coverage < self.threshold:
            return dict(self.low_evidence)
        if temporal and self.temporal is not None:
            return {**self.weights, **self.temporal}
        return dict(self.weights)
