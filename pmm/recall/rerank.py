"""Learned fusion: the rankers' lists and a few cheap features of each candidate turn,
scored by a small linear model whose coefficients are fixed here (no model file).

    from pmm.recall.rerank import candidate_features, rerank

    rankings = {"turn": [7, 3], "window": [3, 7, 9], "dense": [9, 3]}
    texts = {7: "Ann: What's my dog's name?", 3: "Ann: I have a dog named Bolt.", 9: "..."}
    order = rerank("Ann's dog?", rankings, texts, sessions={7: "s1", 3: "s1", 9: "s2"},
                   temporal=False, coverage=0.6, coefficients=HYBRID_COEFFICIENTS)
    # -> [(3, score), (7, score), (9, score)]: best first

Why: weighted reciprocal rank fusion (:mod:`pmm.recall.fusion`) only sees ranks. Two things the
ranks miss, measured on LoCoMo (``python bench/locomo.py --cv``):

- a turn that is itself a question ("What's my dog's name?") rarely holds the answer,
  yet it shares the question's words, so every keyword key ranks it high;
- a question about a named person ("When did Caroline ...") is mostly answered by turns by
  or about that person, and a name is a weak word for BM25 when half the turns carry it.

The features (:data:`FEATURES`) are each ranker's reciprocal rank at two sharpnesses, the
query's temporal flag and lexical coverage (see :func:`pmm.recall.fusion.lexical_coverage`)
crossed with them, whether the candidate is a question (and whether a turn that is none
holds the query's words it holds: measured, weight 0), whether it names a person the
query names, how much of the fused mass its session holds (two-stage recall: sessions,
then turns), whether its date holds the year / month / day the query names, its length,
the share of the query's terms it holds, and its session's rank among the candidates'
sessions by the session's whole text and by its mean turn vector
(:mod:`pmm.recall.session_rank`; passed in as ``session_ranks``). The coefficients were
fitted by logistic regression on LoCoMo and checked held out by conversation
(``bench/locomo.py --cv``; figures in ``docs/benchmarks/locomo.md``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from pmm.recall.query_features import (
    WORD,
    date_parts,
    is_question_turn,
    query_dates,
    query_names,
    query_terms,
)
from pmm.text.stemmer import fts_tokens

__all__ = [
    "FEATURES",
    "LEARNED_COEFFICIENTS",
    "LENGTH_CAP",
    "RANKED",
    "SESSION_RANKED",
    "TurnTerms",
    "candidate_features",
    "is_question_turn",
    "query_dates",
    "query_names",
    "query_terms",
    "rerank",
    "turn_terms",
]

RANKED = ("turn", "window", "dense")
"""The rankers whose ranks are features (digest is off by default)."""
SESSION_RANKED = ("stemmed", "dense")
"""The session rankers whose ranks are features (:mod:`pmm.recall.session_rank`)."""
FEATURES: tuple[str, ...] = (
    *(f"{r}_rr60" for r in RANKED),
    *(f"{r}_rr5" for r in RANKED),
    *(f"temporal_{r}" for r in RANKED),
    "lowcov_dense",
    "question_turn",
    "question_answered",
    "names_match",
    "names_miss",
    "session_share",
    "log_words",
    "date_match",
    "date_miss",
    "term_share",
    *(f"session_{r}_{x}" for r in SESSION_RANKED for x in ("rr5", "top")),
)

LEARNED_COEFFICIENTS: dict[str, dict[str, float]] = {
    # logistic regression on all 10 LoCoMo conversations (python bench/locomo.py --cv --lists
    # <lists 300 deep> prints them), with the length of the turn, the share of the query's
    # terms it holds (which keeps a long turn from outranking the one a query names in
    # small logs: tests/cli/test_cli.py) and its session's ranks by the session's whole
    # text and mean vector (pmm.recall.session_rank); held out by conversation (5 folds)
    # hybrid gave R@10 0.786, R@25 0.862, H@10 0.858 against 0.763 / 0.842 / 0.837 without
    # the four (docs/benchmarks/locomo.md)
    "hybrid": {
        "turn_rr60": -0.253, "window_rr60": 0.372, "dense_rr60": 0.11, "turn_rr5": 0.949,
        "window_rr5": 3.852, "dense_rr5": 1.708, "temporal_turn": -0.005,
        "temporal_window": -0.338, "temporal_dense": -0.851, "lowcov_dense": 2.078,
        "question_turn": -0.579, "names_match": -0.908, "names_miss": -2.649,
        "session_share": 0.427, "log_words": 1.585, "date_match": 0.621, "date_miss": -1.624,
        "term_share": 3.18, "session_stemmed_rr5": 0.159, "session_stemmed_top": 0.455,
        "session_dense_rr5": 1.087, "session_dense_top": 0.145,
    },
    # the same without the dense ranker and the session vectors, fitted on keyword mode's
    # own candidates (no dense list): held out R@10 0.768, R@25 0.838, H@10 0.835 against
    # 0.746 / 0.828 / 0.814 before
    "keyword": {
        "turn_rr60": -0.051, "window_rr60": 0.258, "turn_rr5": 1.255, "window_rr5": 4.029,
        "temporal_turn": -0.238, "temporal_window": -0.587, "question_turn": -0.672,
        "names_match": -1.018, "names_miss": -3.009, "session_share": 0.897,
        "log_words": 1.176, "date_match": 0.893, "date_miss": -1.26, "term_share": 3.599,
        "session_stemmed_rr5": 0.408, "session_stemmed_top": 0.529,
    },
}  # fmt: skip
"""Recall mode -> the coefficients :class:`pmm.recall.recaller.Recaller` fuses with in that mode
(fitted on LoCoMo by ``python bench/locomo.py --cv``); a mode without any (``semantic``)
keeps its single ranker's order."""

LENGTH_CAP = 40
"""Distinct words past which a turn counts as no longer (the length feature): LoCoMo's
turns are short, and a long pasted text must not outrank the turn a query names."""


def candidate_features(
    query_name_set: frozenset[str],
    rankings: Mapping[str, Sequence[int]],
    texts: Mapping[int, str],
    sessions: Mapping[int, str],
    *,
    temporal: bool,
    coverage: float,
    dates: Mapping[int, str] | None = None,
    query_date_set: frozenset[str] = frozenset(),
    query_term_set: frozenset[str] = frozenset(),
    session_ranks: Mapping[str, Mapping[str, int]] | None = None,
) -> tuple[list[int], list[list[float]]]:
    """The candidates (every id any ranker lists, in first-seen order) and each one's
    feature row, in the order of :data:`FEATURES`. ``texts`` / ``sessions`` / ``dates``:
    each candidate's text, session and conversation time (``ts``, ISO-8601; missing:
    empty); ``query_date_set`` / ``query_term_set``: :func:`query_dates` /
    :func:`query_terms` of the query; ``session_ranks``: session ranker -> session ->
    rank (:meth:`pmm.recall.session_rank.SessionRanks.ranks`; a session absent is
    unranked)."""
    ranks: dict[int, dict[str, int]] = {}
    for ranker, ids in rankings.items():
        if ranker not in RANKED:
            continue
        for rank, event_id in enumerate(ids, start=1):
            ranks.setdefault(event_id, {}).setdefault(ranker, rank)
    ids = list(ranks)
    # two-stage recall: a session's share of the candidates' window and turn mass
    mass: dict[str, float] = {}
    own: list[float] = []
    for event_id in ids:
        r = ranks[event_id]
        m = sum(1.0 / (60 + r[k]) for k in ("turn", "window") if k in r)
        own.append(m)
        session = sessions.get(event_id, "")
        mass[session] = mass.get(session, 0.0) + m
    top_mass = max(mass.values(), default=0.0) or 1.0
    answered = _answered_questions(ids, texts, query_term_set)
    rows: list[list[float]] = []
    t = 1.0 if temporal else 0.0
    for event_id in ids:
        r = ranks[event_id]
        rr60 = [60.0 / (60 + r[k]) if k in r else 0.0 for k in RANKED]
        rr5 = [5.0 / (5 + r[k]) if k in r else 0.0 for k in RANKED]
        text = texts.get(event_id, "")
        words = _words(text)
        named = bool(query_name_set & words) if query_name_set else False
        session = sessions.get(event_id, "")
        rows.append(
            [
                *rr60,
                *rr5,
                *(t * x for x in rr60),
                (1.0 - coverage) * rr60[2],
                1.0 if is_question_turn(text) else 0.0,
                1.0 if event_id in answered else 0.0,
                1.0 if named else 0.0,
                1.0 if query_name_set and not named else 0.0,
                mass.get(session, 0.0) / top_mass,
                math.log1p(min(len(words), LENGTH_CAP)),
                *_date_features(query_date_set, (dates or {}).get(event_id, "")),
                _term_share(query_term_set, text),
                *_session_rank_features(session_ranks, session),
            ]
        )
    return ids, rows


def _answered_questions(
    ids: Sequence[int], texts: Mapping[int, str], terms: frozenset[str]
) -> set[int]:
    """The question turns among ``ids`` that hold some of the query's ``terms`` when a
    turn that is no question holds every one of them they hold: a user who asks "What's
    my dog's name?" twice fills the keys with the question, while "I have a dog named
    Bolt." holds its word and the answer."""
    if not terms:
        return set()
    questions: dict[int, frozenset[str]] = {}
    told: list[frozenset[str]] = []
    for event_id in ids:
        text = texts.get(event_id, "")
        held = terms.intersection(fts_tokens(text))
        if not held:
            continue
        if is_question_turn(text):
            questions[event_id] = held
        else:
            told.append(held)
    return {i for i, held in questions.items() if any(held <= t for t in told)}


TurnTerms = tuple[int, tuple[str, ...], int]
"""What the term share and length features read of a turn, kept per turn by
:class:`pmm.recall.session_rank.SessionRanks`: ``(hash of its text, its distinct stems,
its distinct words up to LENGTH_CAP)``."""


def turn_terms(text: str) -> TurnTerms:
    """:data:`TurnTerms` of a turn's text (the hash tells a cached entry from another text)."""
    stems = tuple(sys.intern(t) for t in dict.fromkeys(fts_tokens(text)))
    return hash(text), stems, min(len(_words(text)), LENGTH_CAP)


def _term_share(terms: frozenset[str], text: str) -> float:
    """The share of the query's ``terms`` the turn's own words hold (0: the query has none)."""
    return len(terms.intersection(fts_tokens(text))) / len(terms) if terms else 0.0


def _session_rank_features(
    ranks: Mapping[str, Mapping[str, int]] | None, session: str
) -> list[float]:
    """Per session ranker: ``5 / (5 + rank)`` of the turn's session, and 1 when it is first
    (0, 0 when the ranker leaves it unranked)."""
    out: list[float] = []
    for ranker in SESSION_RANKED:
        rank = (ranks or {}).get(ranker, {}).get(session)
        out += [0.0, 0.0] if rank is None else [5.0 / (5 + rank), 1.0 if rank == 1 else 0.0]
    return out


def _date_features(wanted: frozenset[str], ts: str) -> tuple[float, float]:
    """(share of the query's date parts the turn's date holds, 1 when it holds none)."""
    if not wanted:
        return 0.0, 0.0
    share = len(wanted & date_parts(ts)) / len(wanted)
    return share, 1.0 if share == 0 else 0.0


def rerank(
    query: str,
    rankings: Mapping[str, Sequence[int]],
    texts: Mapping[int, str],
    sessions: Mapping[int, str],
    *,
    temporal: bool,
    coverage: float,
    coefficients: Mapping[str, float],
    dates: Mapping[int, str] | None = None,
    session_ranks: Mapping[str, Mapping[str, int]] | None = None,
    cached: Mapping[int, TurnTerms] | None = None,
) -> list[tuple[int, float]]:
    """The candidates of ``rankings`` best first by the linear score of their features
    (``coefficients``: feature name -> weight; missing features weigh 0). Ties: the best
    single rank, then the newer id.

    The score is the one of :func:`candidate_features`' rows (the same features summed in
    the order of :data:`FEATURES`, to the bit), computed a column at a time and only for
    the features with a weight (a turn's words read only for the names or the length).
    ``session_ranks``: session ranker -> session -> rank
    (:meth:`pmm.recall.session_rank.SessionRanks.ranks`; None: those features are 0);
    ``cached``: candidates' :func:`turn_terms` kept from before (one whose hash is not its
    text's is computed again).

    >>> rerank("dog", {"turn": [7, 3]}, {7: "My dog?", 3: "A dog."}, {}, temporal=False,
    ...        coverage=1.0, coefficients={"turn_rr60": 1.0, "question_turn": -0.5})
    [(3, 0.967741935483871), (7, 0.48360655737704916)]
    """
    weight = {f: float(coefficients.get(f, 0.0)) for f in FEATURES}
    names = query_names(query)
    wanted_dates = query_dates(query)
    shared = weight["term_share"]
    terms = query_terms(query) if weight["question_answered"] or shared else frozenset()
    ranks: dict[int, dict[str, int]] = {}
    for ranker, ids in rankings.items():
        if ranker in RANKED:
            for rank, event_id in enumerate(ids, start=1):
                ranks.setdefault(event_id, {}).setdefault(ranker, rank)
    ids = list(ranks)
    if not ids:
        return []
    # each feature a column over the candidates, added to the scores in the order of
    # FEATURES: every score is the sum of the rows' terms in their order, to the bit
    # (a term a row leaves out adds 0.0, which changes no sum)
    score = np.zeros(len(ids))
    rr60, rr5 = _reciprocal_ranks(ids, ranks)
    t = 1.0 if temporal else 0.0
    for n, r in enumerate(RANKED):
        score += weight[f"{r}_rr60"] * rr60[n]
    for n, r in enumerate(RANKED):
        score += weight[f"{r}_rr5"] * rr5[n]
    for n, r in enumerate(RANKED):
        score += weight[f"temporal_{r}"] * (t * rr60[n])
    score += weight["lowcov_dense"] * ((1.0 - coverage) * rr60[2])
    texts_of = [texts.get(i, "") for i in ids]
    if weight["question_turn"]:
        score += weight["question_turn"] * _flags(map(is_question_turn, texts_of))
    if weight["question_answered"] and terms:
        answered = _answered_questions(ids, texts, terms)
        score += weight["question_answered"] * _flags(i in answered for i in ids)
    if names:
        named = _flags(_names_in(names, x) for x in texts_of)
        score += weight["names_match"] * named
        score += weight["names_miss"] * (1.0 - named)
    if weight["session_share"]:
        share = _session_shares(ids, ranks, sessions)
        score += weight["session_share"] * np.array([share[sessions.get(i, "")] for i in ids])
    held = [_held(cached, i, x) for i, x in zip(ids, texts_of, strict=True)]
    if weight["log_words"]:
        lengths = [
            h[2] if h is not None else min(len(_words(x)), LENGTH_CAP)
            for h, x in zip(held, texts_of, strict=True)
        ]
        score += weight["log_words"] * np.array([_LOG_LENGTH[n] for n in lengths])
    if wanted_dates:
        found = [_date_features(wanted_dates, (dates or {}).get(i, "")) for i in ids]
        score += weight["date_match"] * np.array([f for f, _ in found])
        score += weight["date_miss"] * np.array([m for _, m in found])
    if shared:
        score += shared * np.array(
            [
                len(terms.intersection(h[1])) / len(terms)  # h[1]: distinct stems
                if h is not None and terms
                else _term_share(terms, x)
                for h, x in zip(held, texts_of, strict=True)
            ]
        )
    if session_ranks:
        for r in SESSION_RANKED:
            of = session_ranks.get(r, {})
            placed = [of.get(sessions.get(i, "")) for i in ids]
            if weight[f"session_{r}_rr5"]:
                rr = [0.0 if x is None else 5.0 / (5 + x) for x in placed]
                score += weight[f"session_{r}_rr5"] * np.array(rr)
            if weight[f"session_{r}_top"]:
                score += weight[f"session_{r}_top"] * _flags(x == 1 for x in placed)
    # ties: the best single rank, then the newer id
    order = np.lexsort((-np.array(ids), -rr60.max(axis=0), -score))
    return [(ids[j], float(score[j])) for j in order.tolist()]


_LOG_LENGTH = [math.log1p(n) for n in range(LENGTH_CAP + 1)]  # length feature of n words


def _reciprocal_ranks(
    ids: Sequence[int], ranks: Mapping[int, Mapping[str, int]]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per ranker of RANKED (rows) and candidate (columns): ``60 / (60 + rank)`` and
    ``5 / (5 + rank)``, 0 where the ranker does not list it."""
    rank = np.array([[r.get(k, 0) for k in RANKED] for r in (ranks[i] for i in ids)]).T
    listed = rank > 0
    rr60 = np.where(listed, 60.0 / (60.0 + rank), 0.0)
    rr5 = np.where(listed, 5.0 / (5.0 + rank), 0.0)
    return rr60, rr5


def _flags(values: Iterable[bool]) -> npt.NDArray[np.float64]:
    return np.fromiter(values, dtype=np.float64)


def _names_in(names: frozenset[str], text: str) -> bool:
    """Whether the turn's words hold one of the query's ``names`` (a name that is a word
    is a substring: the words are read only when one is)."""
    lowered = text.lower()
    for name in names:  # a loop, not any(): called for every candidate
        if name in lowered:
            return bool(names & _words(text))
    return False


def _held(cached: Mapping[int, TurnTerms] | None, event_id: int, text: str) -> TurnTerms | None:
    """The candidate's cached :func:`turn_terms`, None when absent or another text's."""
    found = None if cached is None else cached.get(event_id)
    return found if found is not None and found[0] == hash(text) else None


def _words(text: str) -> set[str]:
    """The turn's words as the name and length features read them."""
    return {w.lower().removesuffix("'s") for w in WORD.findall(text)}


def _session_shares(
    ids: Sequence[int], ranks: Mapping[int, Mapping[str, int]], sessions: Mapping[int, str]
) -> dict[str, float]:
    """Each session's share of the candidates' turn and window mass, over the largest."""
    mass: dict[str, float] = {}
    for event_id in ids:
        r = ranks[event_id]
        m = 0.0  # the turn's then the window's term, as sum() over them adds them
        if "turn" in r:
            m += 1.0 / (60 + r["turn"])
        if "window" in r:
            m += 1.0 / (60 + r["window"])
        session = sessions.get(event_id, "")
        mass[session] = mass.get(session, 0.0) + m
    top = max(mass.values(), default=0.0) or 1.0
    return {session: m / top for session, m in mass.items()}
