"""Levers for ``bench/locomo_levers.py`` that read more than the shipped features: extra
feature columns beside :func:`pmm.recall.rerank.candidate_features`' rows, and deeper or
widened candidate lists.

    qs = load(lists, data)
    add_session_ranks(qs, convs, "bm25")          # two-stage: sessions first (BM25)
    add_digest_ranks(qs, load_records(dig_lists))  # the digest ranker as a feature
    fit = learned_extra(shipped, ["session_bm25_rr5"])

Columns (each a function of one candidate and the question, no label):

- ``session_<how>_rr5`` / ``session_<how>_top``: the rank of the candidate's session among
  the conversation's sessions for the question (``5 / (5 + rank)``, and 1 for the first),
  sessions ranked by BM25 over their turns' concatenated texts (``bm25``), by BM25 over their
  distinct words as PMM stems them (``stemmed``) or by the cosine of the question's vector
  to the mean of their turns' vectors (``dense``, MiniLM vectors from ``bench/locomo.py``'s
  cache); ``stemmed`` and ``dense`` through :mod:`pmm.recall.session_rank`, which recall
  itself reads (recall ranks the candidates' sessions, here every session);
- ``digest_rr60`` / ``digest_rr5``: the candidate's rank in the digest ranker's list (the
  heuristic digests' keys, from ``bench/locomo.py --digests --lists``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from locomo_cv import FEATURES, Question
from locomo_data import Conversation, PlainBM25


def session_order_bm25(conv: Conversation, question: str) -> list[int]:
    """The conversation's sessions, best first, by plain BM25 over each session's turns."""
    sessions = sorted({t.session for t in conv.turns})
    texts = [" ".join(t.text for t in conv.turns if t.session == s) for s in sessions]
    found = PlainBM25([str(s) for s in sessions], texts).search(question, len(sessions))
    return [int(s) for s in found]


def session_order_stemmed(conv: Conversation, question: str) -> list[int]:
    """The sessions, best first, by BM25 (k1 1.2, b 0.75) over each session's distinct words
    as PMM stems them: :func:`pmm.recall.session_rank.stemmed_order`, the function recall
    ranks the candidates' sessions with (here over every session of the conversation)."""
    from pmm.recall.rerank import query_terms
    from pmm.recall.session_rank import SessionTerms, stemmed_order

    sessions = sorted({t.session for t in conv.turns})
    terms = {s: SessionTerms.of(t.text for t in conv.turns if t.session == s) for s in sessions}
    return stemmed_order(terms, query_terms(question))


class Centroids:
    """Each session's mean turn vector, and question vectors, from the bench's vector cache
    (``bench/locomo.py`` writes it; the question as the fp16 query encoder embedded it)."""

    def __init__(self, cache: Path) -> None:
        with np.load(cache) as saved:
            self.vectors = {k: saved[k] for k in saved.files}
        self.means: dict[str, tuple[list[int], np.ndarray]] = {}

    def vector(self, text: str, prefix: str = "") -> np.ndarray:
        key = prefix + hashlib.sha256(text.encode("utf-8")).hexdigest()
        if key not in self.vectors:
            raise SystemExit(f"no cached vector for {text[:40]!r}: run bench/locomo.py first")
        return self.vectors[key]

    def order(self, conv: Conversation, question: str) -> list[int]:
        from pmm.recall.session_rank import vector_order

        if conv.sample_id not in self.means:
            sessions = sorted({t.session for t in conv.turns})
            sums = []
            for s in sessions:
                vs = [self.vector(t.text) for t in conv.turns if t.session == s]
                sums.append(np.sum([v / (np.linalg.norm(v) or 1.0) for v in vs], axis=0))
            self.means[conv.sample_id] = (sessions, np.array(sums))
        sessions, matrix = self.means[conv.sample_id]
        # as recall ranks them (pmm.recall.session_rank.vector_order)
        order = vector_order({str(s): row for s, row in zip(sessions, matrix, strict=True)},
                             self.vector(question, "fp16_"))  # fmt: skip
        return [int(s) for s in order]


def session_order_mass(q: Question, conv: Conversation, depth: int) -> list[int]:
    """The sessions, best first, by the reciprocal-rank mass (``1 / (60 + rank)``) of their
    turns in the turn and dense rankers' lists ``depth`` deep: a proxy of BM25 and vectors
    over whole sessions that recall could read from its own (deeper) lists."""
    session = {t.dia_id: t.session for t in conv.turns}
    mass: dict[int, float] = {}
    for r in ("turn", "dense"):
        for n, d in enumerate(q.rec["rankers"].get(r, [])[:depth], start=1):
            mass[session[d]] = mass.get(session[d], 0.0) + 1.0 / (60 + n)
    return sorted(mass, key=lambda s: -mass[s])


def session_of(conv: Conversation) -> dict[int, int]:
    """Turn position (1-based, as the lists') -> session number."""
    return {n: t.session for n, t in enumerate(conv.turns, start=1)}


def add_session_ranks(
    qs: Sequence[Question], convs: dict[str, Conversation], how: str, cache: Path | None = None
) -> None:
    """``q.extra[session_<how>_rr5 | _top]`` for every candidate of every question."""
    centroids = Centroids(cache) if how == "dense" and cache is not None else None
    for q in qs:
        conv = convs[q.conv]
        if how.startswith("mass"):
            order = session_order_mass(q, conv, int(how.removeprefix("mass") or 300))
        elif how == "stemmed":
            order = session_order_stemmed(conv, q.rec["question"])
        elif centroids is not None:
            order = centroids.order(conv, q.rec["question"])
        else:
            order = session_order_bm25(conv, q.rec["question"])
        rank = {s: n for n, s in enumerate(order, start=1)}
        where = session_of(conv)
        r = np.array([rank.get(where[i], 10**6) for i in q.ids], dtype=float)
        q.session_rank = rank  # type: ignore[attr-defined]
        extra = q.__dict__.setdefault("extra", {})
        extra[f"session_{how}_rr5"] = 5.0 / (5.0 + r)
        extra[f"session_{how}_top"] = (r == 1).astype(float)


def load_records(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return records


def add_digest_ranks(qs: Sequence[Question], records: Sequence[dict[str, Any]]) -> None:
    """``q.extra[digest_rr60 | digest_rr5]`` from another run's digest lists (the same
    questions in the same order)."""
    if [r["question"] for r in records] != [q.rec["question"] for q in qs]:
        raise SystemExit("the digest lists hold other questions")
    for q, rec in zip(qs, records, strict=True):
        position = {d: n for n, d in enumerate(q.rec["_dia"], start=1)}
        rank: dict[int, int] = {}
        for n, d in enumerate(rec["rankers"].get("digest", [])[:50], start=1):
            rank.setdefault(position[d], n)
        r = np.array([rank.get(i, 0) for i in q.ids], dtype=float)
        extra = q.__dict__.setdefault("extra", {})
        extra["digest_rr60"] = np.where(r > 0, 60.0 / (60.0 + r), 0.0)
        extra["digest_rr5"] = np.where(r > 0, 5.0 / (5.0 + r), 0.0)


def learned_extra(
    cols_names: Sequence[str], extra: Sequence[str], c: float = 1.0, balanced: bool = True
) -> Callable[[list[Question]], Any]:
    """Logistic regression over the features ``cols_names`` and the extra columns
    ``extra`` (``q.extra``), fitted on the training questions (as ``locomo_cv.learned``
    with ``c`` 1 and ``balanced`` classes)."""
    cols = [FEATURES.index(f) for f in cols_names]

    def matrix(q: Question) -> np.ndarray:
        x = q.x[:, cols]
        if not extra:
            return x
        if not len(q.ids):
            return np.zeros((0, len(cols) + len(extra)))
        more = np.column_stack([q.extra[e] for e in extra])  # type: ignore[attr-defined]
        return np.hstack([x, more])

    def fit(train: list[Question]) -> Any:
        from sklearn.linear_model import LogisticRegression

        weights = "balanced" if balanced else None
        model = LogisticRegression(C=c, max_iter=2000, class_weight=weights)
        model.fit(np.vstack([matrix(q) for q in train]), np.concatenate([q.y for q in train]))
        coef = np.asarray(model.coef_[0])

        def rank(q: Question) -> list[int]:
            return q.ranked(matrix(q) @ coef)

        rank.coef = dict(zip([*cols_names, *extra], coef, strict=True))  # type: ignore[attr-defined]
        return rank

    return fit


def via(other: dict[int, Question], fit: Callable[[list[Question]], Any]) -> Callable[..., Any]:
    """A fit that trains and ranks on ``other[id(q)]`` (the same question with other
    candidate lists: deeper, or widened by sessions) in place of ``q``."""

    def fitted(train: list[Question]) -> Any:
        rank = fit([other[id(q)] for q in train])

        def ranked(q: Question) -> list[int]:
            return list(rank(other[id(q)]))

        return ranked

    return fitted


def widened(
    rec: dict[str, Any], keep: Callable[[str], bool], depth: int, base: int = 50
) -> dict[str, Any]:
    """``rec`` with each ranker's list cut at ``base`` plus the items ranked ``base+1 ..
    depth`` that ``keep`` (a dia_id test) lets in."""
    out = dict(rec)
    out["rankers"] = {
        r: [d for n, d in enumerate(ids[:depth]) if n < base or keep(d)]
        for r, ids in rec["rankers"].items()
    }
    return out


def add_rank_shape(qs: Sequence[Question]) -> None:
    """``q.extra[<ranker>_in | <ranker>_rr20]`` and ``n_lists``: whether each ranker lists
    the candidate, a reciprocal rank between the shipped two sharpnesses, and in how many
    lists it is (the order between ranks 10 and 50, where R@25 is decided)."""
    for q in qs:
        extra = q.__dict__.setdefault("extra", {})
        total = np.zeros(len(q.ids))
        for r in ("turn", "window", "dense"):
            rank = {i: n for n, i in reversed(list(enumerate(q.lists.get(r, []), start=1)))}
            at = np.array([rank.get(i, 0) for i in q.ids], dtype=float)
            extra[f"{r}_in"] = (at > 0).astype(float)
            extra[f"{r}_rr20"] = np.where(at > 0, 20.0 / (20.0 + at), 0.0)
            total += at > 0
        extra["n_lists"] = total
