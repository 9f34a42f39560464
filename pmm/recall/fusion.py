"""Fusion: weighted reciprocal rank fusion of the rankers' lists (:func:`rrf_fuse`), and
the policy that picks one query's weights from two things the query shows - temporal
words, and how much lexical evidence the keyword rankers found.

    from pmm.recall.fusion import FusionPolicy, lexical_coverage, rrf_fuse

    policy = FusionPolicy({"turn": 0.25, "window": 1.5, "dense": 0.1},
                          temporal=TEMPORAL_KEYWORD_WEIGHTS,
                          low_evidence=LOW_EVIDENCE_WEIGHTS, threshold=EVIDENCE_THRESHOLD,
                          idf=True, blend=EVIDENCE_BLEND)
    idf = inverse_document_frequencies(store.document_frequencies(search_terms(query)),
                                       store.search_index_upto())
    coverage = lexical_coverage(query, texts_of_the_top_turn_hits, idf)
    weights = policy.weights_for(temporal=True, coverage=coverage)
    fused = rrf_fuse({"turn": [7, 3], "dense": [3]}, weights=weights)

Why: a question worded like the memory ("What did Yuki call her new pet?" / "Yuki named
her pet Nugget") is best found by the keyword keys; one worded differently ("Which doctor
told me to drink less caffeine?" / "The cardiologist said I should cut back on coffee")
gets only incidental keyword hits, and there the dense ranker should lead. The share of
the query's words that its best keyword hits hold tells the two apart without labels;
weighted by inverse document frequency, so that common words the hits hold by chance
("work", "days") count little.
Measured by ``bench/fusion.py`` (in git at ``e8ccbf3``; docs/benchmarks/fusion.md).

Measured and not adopted (``bench/fusion_signals.py``, in git at ``e8ccbf3``): gates that
let the dense ranker lead on other query-time signals - its top-1 cosine and margins, its
overlap with the keyword top 10, the BM25 drop from 1st to 10th, the question's share of
stop words. The ones that reach the dense ranker's recall on the paraphrase dataset cost
more chat questions than they win, and the 4-fold picks disagree between folds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import neg

from pmm.errors import ConfigurationError
from pmm.text.words import search_terms

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


RRF_K = 60
"""The reciprocal-rank-fusion constant: a rank ``r`` scores ``weight / (RRF_K + r)``."""
RANKERS: tuple[str, ...] = ("turn", "window", "dense", "digest")
KEYWORD_RANKERS: tuple[str, ...] = ("turn", "window", "digest")
DEFAULT_WEIGHTS: dict[str, float] = {"turn": 0.25, "window": 1.5, "dense": 0.1, "digest": 0.0}
"""Hybrid weights when the keyword rankers have lexical evidence (see
:class:`FusionPolicy`): the window key leads, the turn's own BM25 and the dense ranker
add to it at low weight."""
DEFAULT_KEYWORD_WEIGHTS: dict[str, float] = {"turn": 0.25, "window": 1.5, "digest": 0.0}
"""Keyword-mode weights (no dense ranker): the same keyword weights."""
DEFAULT_POLICY = FusionPolicy(
    DEFAULT_WEIGHTS,
    TEMPORAL_KEYWORD_WEIGHTS,
    LOW_EVIDENCE_WEIGHTS,
    EVIDENCE_THRESHOLD,
    idf=True,
    blend=EVIDENCE_BLEND,
)
"""Hybrid mode's default: chosen by cross-validation (docs/benchmarks/fusion.md)."""
DEFAULT_KEYWORD_POLICY = FusionPolicy(DEFAULT_KEYWORD_WEIGHTS, TEMPORAL_KEYWORD_WEIGHTS)
"""Keyword mode's default (no dense ranker, so no low-evidence switch)."""


def parse_weights(text: str) -> dict[str, float]:
    """``PMM_RECALL_WEIGHTS`` as the ranker weights it sets (rankers it leaves out keep
    their default; an empty text sets none).

    >>> parse_weights("turn=1, window=0.5")
    {'turn': 1.0, 'window': 0.5}
    """
    if not isinstance(text, str):
        raise ConfigurationError(f"PMM_RECALL_WEIGHTS must be a str, got {type(text).__name__}")
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = (x.strip() for x in part.partition("="))
        if not sep or name not in RANKERS:
            raise ConfigurationError(
                f"PMM_RECALL_WEIGHTS={text!r} is not valid: expected ranker=weight pairs "
                f"separated by commas, rankers {', '.join(RANKERS)} "
                "(e.g. 'turn=1,window=1,dense=0.3')"
            )
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        if not weight >= 0 or weight == float("inf"):
            raise ConfigurationError(
                f"PMM_RECALL_WEIGHTS={text!r} is not valid: the weight of {name} must be a "
                f"number >= 0, got {value!r}"
            )
        weights[name] = weight
    keyword = {**DEFAULT_KEYWORD_WEIGHTS, **weights}
    if not any(keyword.get(r, 0.0) > 0 for r in KEYWORD_RANKERS):
        raise ConfigurationError(
            f"PMM_RECALL_WEIGHTS={text!r} is not valid: at least one of "
            f"{', '.join(KEYWORD_RANKERS)} needs a weight > 0"
        )
    return weights


@dataclass(frozen=True)
class FusionChoice:
    """A recaller's weights and policies in hybrid and keyword mode. Built by :meth:`of`
    from the weights a caller gives (a mapping or ``PMM_RECALL_WEIGHTS`` text), which are
    laid over :data:`DEFAULT_WEIGHTS` and used as given for every query; without any, the
    default policies, which adapt to temporal questions and weak lexical evidence.

    >>> FusionChoice.of("turn=1").keyword_weights
    {'turn': 1.0, 'window': 1.5, 'digest': 0.0}
    >>> FusionChoice.of(None).policy is DEFAULT_POLICY
    True
    """

    weights: dict[str, float]
    keyword_weights: dict[str, float]
    policy: FusionPolicy
    keyword_policy: FusionPolicy
    given: bool
    """Whether the caller gave weights."""

    @classmethod
    def of(cls, weights: Mapping[str, float] | str | None) -> FusionChoice:
        if isinstance(weights, Mapping):
            weights = ",".join(f"{k}={v}" for k, v in weights.items())
        chosen = parse_weights(weights or "")
        hybrid = {**DEFAULT_WEIGHTS, **chosen}
        keyword = {**DEFAULT_KEYWORD_WEIGHTS, **chosen}
        keyword.pop("dense", None)
        if not chosen:
            return cls(hybrid, keyword, DEFAULT_POLICY, DEFAULT_KEYWORD_POLICY, False)
        return cls(hybrid, keyword, FusionPolicy(hybrid), FusionPolicy(keyword), True)


def rrf_fuse(
    rankings: Mapping[str, Sequence[int]],
    *,
    k_constant: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[int, float, dict[str, int]]]:
    """Fuse ranked id lists: ``[(event_id, score, {ranker: rank}), ...]`` best first;
    ``weights`` (default 1 each) scale each ranker's ``1 / (k_constant + rank)``.

    Ties are broken by the best single rank, then by the newer event.

    >>> rrf_fuse({"turn": [7, 3], "dense": [3]})[0][:2]
    (3, 0.03252247488101534)
    """
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    best: dict[int, int] = {}  # the best rank of each event (keys in the order of scores')
    for ranker, ids in rankings.items():
        weight = 1.0 if weights is None else weights.get(ranker, 1.0)
        for rank, event_id in enumerate(ids, start=1):
            seen = ranks.get(event_id)
            if seen is None:
                ranks[event_id] = {ranker: rank}
                scores[event_id] = 0.0 + weight / (k_constant + rank)
                best[event_id] = rank
            elif ranker not in seen:
                seen[ranker] = rank
                scores[event_id] += weight / (k_constant + rank)
                if rank < best[event_id]:
                    best[event_id] = rank
    # sorted as plain tuples built in C (no key function or tuple display per event)
    keys = list(scores)
    order = sorted(zip(map(neg, scores.values()), best.values(), map(neg, keys), keys, strict=True))
    return [(i, scores[i], ranks[i]) for _, _, _, i in order]
