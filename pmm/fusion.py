"""Fusion policy: which weights one query's rankers are fused with, from two things the
query shows - temporal words, and how much lexical evidence the keyword rankers found.

    from pmm.fusion import FusionPolicy, lexical_coverage

    policy = FusionPolicy({"turn": 0.25, "window": 1.5, "dense": 0.1},
                          temporal=TEMPORAL_KEYWORD_WEIGHTS,
                          low_evidence=LOW_EVIDENCE_WEIGHTS, threshold=EVIDENCE_THRESHOLD,
                          idf=True, blend=EVIDENCE_BLEND)
    idf = inverse_document_frequencies(store.document_frequencies(search_terms(query)),
                                       store.search_index_upto())
    coverage = lexical_coverage(query, texts_of_the_top_turn_hits, idf)
    weights = policy.weights_for(temporal=True, coverage=coverage)

Why: a question worded like the memory ("What did Yuki call her new pet?" / "Yuki named
her pet Nugget") is best found by the keyword keys; one worded differently ("Which doctor
told me to drink less caffeine?" / "The cardiologist said I should cut back on coffee")
gets only incidental keyword hits, and there the dense ranker should lead. The share of
the query's words that its best keyword hits hold tells the two apart without labels;
weighted by inverse document frequency, so that common words the hits hold by chance
("work", "days") count little.
Measured by ``python bench/fusion.py`` (see the README's Recall section).

Measured and not adopted (``python bench/fusion_signals.py``): gates that let the dense
ranker lead on other query-time signals - its top-1 cosine and margins, its overlap with
the keyword top 10, the BM25 drop from 1st to 10th, the question's share of stop words.
The ones that reach the dense ranker's recall on the paraphrase dataset cost more chat
questions than they win, and the 4-fold picks disagree between folds.
"""

from __future__ import annotations

import math
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
EVIDENCE_THRESHOLD = 0.4
"""Below this share of the query's idf mass found in those hits, the question is taken to
be worded differently from the memory (:data:`LOW_EVIDENCE_WEIGHTS`)."""
EVIDENCE_BLEND = 0.15
"""Half-width of the smooth switch: between ``EVIDENCE_THRESHOLD -+ EVIDENCE_BLEND`` the
weights move linearly from :data:`LOW_EVIDENCE_WEIGHTS` to the normal ones."""


def inverse_document_frequencies(frequencies: Mapping[str, int], total: int) -> dict[str, float]:
    """BM25's inverse document frequency of each word, from how many of ``total`` events
    hold it (:meth:`pmm.storage.base.EventLog.document_frequencies`): always > 0, and
    higher the rarer the word.

    >>> idf = inverse_document_frequencies({"work": 60, "cello": 1}, 500)
    >>> round(idf["work"], 2), round(idf["cello"], 2)
    (2.11, 5.81)
    """
    total = max(total, 0)
    return {
        word: math.log(1.0 + (max(total, df) - df + 0.5) / (df + 0.5))
        for word, df in ((w, max(int(f), 0)) for w, f in frequencies.items())
    }


def lexical_coverage(
    query: str, texts: Iterable[str], idf: Mapping[str, float] | None = None
) -> float:
    """The share of the query's content words that occur, as written (lower-cased), in
    ``texts``: 1.0 when every informative word was found, 0.0 when none was (or the
    query has no words). Exact words on purpose: a stemmed match ("planted" for "plant")
    is weaker evidence and measured worse. With ``idf`` (word -> inverse document
    frequency, see :func:`inverse_document_frequencies`) each word counts by its idf, so
    a common word ("work", "days") found by chance is little evidence; a word missing
    from ``idf`` counts as the rarest there.

    >>> lexical_coverage("Which doctor told me to drink less caffeine?",
    ...                  ["The cardiologist said I should cut back on coffee."])
    0.0
    >>> lexical_coverage("What did Yuki call her new pet?", ["Yuki named her pet Nugget"])
    0.5
    >>> lexical_coverage("hard days at work", ["work was hard"],
    ...                  idf={"hard": 1.0, "days": 4.0, "work": 1.0})
    0.3333333333333333
    """
    terms = search_terms(query)
    if not terms:
        return 0.0
    found: set[str] = set()
    for text in texts:
        found.update(search_terms(text, limit=10_000))
    if idf is None:
        return sum(t in found for t in terms) / len(terms)
    rarest = max(idf.values(), default=1.0)
    mass = {t: idf.get(t, rarest) for t in terms}
    total = sum(mass.values())
    return sum(m for t, m in mass.items() if t in found) / total if total > 0 else 0.0


@dataclass(frozen=True)
class FusionPolicy:
    """The weights one query is fused with: ``weights``, unless the query is temporal
    (``temporal`` overrides some of them) or the keyword rankers have little lexical
    evidence (coverage below ``threshold``: ``low_evidence`` replaces them all). With
    ``blend`` > 0 the switch is smooth: between ``threshold - blend`` and ``threshold +
    blend`` the weights move linearly from ``low_evidence`` to the others. ``idf``: the
    coverage is to be weighted by inverse document frequency (see
    :func:`lexical_coverage`).

    >>> policy = FusionPolicy({"turn": 1.0, "dense": 0.5}, low_evidence={"dense": 1.0},
    ...                       threshold=0.5)
    >>> policy.weights_for(temporal=False, coverage=0.2)
    {'dense': 1.0}
    >>> FusionPolicy({"turn": 1.0}, low_evidence={"dense": 1.0}, threshold=0.5,
    ...              blend=0.25).weights_for(temporal=False, coverage=0.5)
    {'turn': 0.5, 'dense': 0.5}
    """

    weights: Mapping[str, float]
    temporal: Mapping[str, float] | None = None
    low_evidence: Mapping[str, float] | None = None
    threshold: float = 0.0
    idf: bool = False
    blend: float = 0.0

    @property
    def needs_coverage(self) -> bool:
        return self.low_evidence is not None and self.threshold > 0

    def weights_for(self, *, temporal: bool, coverage: float | None) -> dict[str, float]:
        base = dict(self.weights)
        if temporal and self.temporal is not None:
            base.update(self.temporal)
        if self.low_evidence is None or coverage is None:
            return base
        if self.blend <= 0:
            return dict(self.low_evidence) if coverage < self.threshold else base
        share = (coverage - self.threshold + self.blend) / (2 * self.blend)
        if share >= 1:
            return base
        if share <= 0:
            return dict(self.low_evidence)
        low = self.low_evidence
        return {
            r: low.get(r, 0.0) * (1 - share) + base.get(r, 0.0) * share
            for r in dict.fromkeys([*base, *low])
        }
