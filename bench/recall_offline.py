"""Offline pieces of bench/recall.py: scoring, a plain BM25 baseline, weighted fusion of
precomputed ranker lists, and cross-validation of the fusion weights by conversation.

    from recall_offline import PlainBM25, fuse, score, cross_validate

    bm25 = PlainBM25([(turn_id, text), ...])   # one conversation's raw turns
    bm25.search("When is Caroline's pottery class?", 50)   # -> [turn_id, ...]
    fuse({"turn": [...], "dense": [...]}, {"turn": 1.0, "dense": 0.3})  # -> [id, ...]

The baseline is textbook BM25 as SQLite's FTS5 computes it (``bm25()``, k1 = 1.2,
b = 0.75) over the raw text of each turn, with the same tokenizer PMM's index uses
(``porter unicode61 remove_diacritics 2``) and the query's content words OR-ed: no
digests, no windows, no dropping of common words, no dense vectors. It runs in a private
in-memory database, apart from PMM's store.

Fusion uses the engine's own function when it takes weights (``pmm.recall.recaller.rrf_fuse(...,
weights=...)`` or ``pmm.recall.recaller.weighted_rrf``); otherwise weighted reciprocal rank fusion
written here, ``sum(w_r / (60 + rank_r))``, which with all weights 1 is exactly today's
``rrf_fuse`` (same constant, same tie-break by best single rank). ``fusion_source()``
says which one ran.
"""

from __future__ import annotations

import inspect
import itertools
import sqlite3
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pmm.text.words import search_terms

KS = (1, 5, 10, 25)
METRICS = [f"R@{k}" for k in KS] + [f"H@{k}" for k in KS] + ["MRR"]
RRF_K = 60


def score(ranked: Sequence[str], answers: Sequence[str]) -> dict[str, float]:
    """recall@k (share of the answer turns in the top k), hit@k (any of them in the top
    k) for k in KS, and MRR (1 / rank of the first answer turn, 0 beyond 25)."""
    wanted = set(answers)
    out: dict[str, float] = {}
    for k in KS:
        found = wanted.intersection(ranked[:k])
        out[f"R@{k}"] = len(found) / len(wanted)
        out[f"H@{k}"] = 1.0 if found else 0.0
    first = next((r for r, turn in enumerate(ranked[: max(KS)], 1) if turn in wanted), None)
    out["MRR"] = 1.0 / first if first else 0.0
    return out


def mean_scores(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {m: statistics.fmean(r[m] for r in rows) if rows else 0.0 for m in METRICS}


class PlainBM25:
    """FTS5 BM25 over the raw text of one conversation's turns (see the module doc)."""

    def __init__(self, turns: Sequence[tuple[str, str]]) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute(
            "CREATE VIRTUAL TABLE t USING fts5(text, tokenize = 'porter unicode61 "
            "remove_diacritics 2')"
        )
        self.ids = [turn_id for turn_id, _ in turns]
        self.conn.executemany(
            "INSERT INTO t(rowid, text) VALUES (?, ?)",
            [(i + 1, text) for i, (_, text) in enumerate(turns)],
        )

    def search(self, query: str, limit: int) -> list[str]:
        terms = search_terms(query)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self.conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, limit)
        ).fetchall()
        return [self.ids[r[0] - 1] for r in rows]

    def close(self) -> None:
        self.conn.close()


def _local_weighted_rrf(
    rankings: Mapping[str, Sequence[int]], weights: Mapping[str, float]
) -> list[int]:
    """``sum(w / (60 + rank))``; ties by the best single rank, then the newer (larger) id,
    as ``pmm.recall.recaller.rrf_fuse`` breaks them."""
    scores: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranker, ids in rankings.items():
        w = weights.get(ranker, 1.0)
        seen: set[int] = set()
        for rank, item in enumerate(ids, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + w / (RRF_K + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores, key=lambda i: (-scores[i], best[i], -i))


def _engine_fusion() -> tuple[str, Callable[..., Any] | None]:
    import pmm.recall.recaller as engine

    for name in ("weighted_rrf", "rrf_fuse"):
        fn = getattr(engine, name, None)
        if fn is not None and "weights" in inspect.signature(fn).parameters:
            return f"pmm.recall.recaller.{name}(weights=...)", fn
    return "weighted RRF in bench/recall_offline.py (the engine's rrf_fuse takes no weights)", None


_SOURCE, _ENGINE_FN = _engine_fusion()


def fusion_source() -> str:
    return _SOURCE


def fuse(
    rankings: Mapping[str, Sequence[int]],
    weights: Mapping[str, float],
    boosts: Mapping[str, float] | None = None,
) -> list[int]:
    """Ids best first by weighted RRF of ``rankings`` (a ranker left out of ``weights``
    weighs 1; weight 0 drops it; ``boosts`` multiply weights, as the engine does for a
    temporal question). Ids are ints, a larger one newer."""
    if boosts:
        weights = {r: weights.get(r, 1.0) * boosts.get(r, 1.0) for r in rankings}
    chosen = {r: ids for r, ids in rankings.items() if weights.get(r, 1.0) > 0}
    if _ENGINE_FN is None:
        return _local_weighted_rrf(chosen, weights)
    fused = _ENGINE_FN(chosen, weights={r: weights.get(r, 1.0) for r in chosen})
    return [row[0] if isinstance(row, tuple) else row for row in fused]


def weight_grid(rankers: Sequence[str], values: Sequence[float]) -> list[dict[str, float]]:
    """Every combination of ``values`` per ranker, the first ranker fixed at 1 (RRF is
    scale-free), leaving out the all-zero and duplicate-direction ones."""
    if not rankers:
        return []
    grids = []
    for combo in itertools.product(values, repeat=len(rankers) - 1):
        grids.append({rankers[0]: 1.0, **dict(zip(rankers[1:], combo, strict=True))})
    # the first ranker alone at weight 0 is covered by the others' combinations
    for combo in itertools.product([v for v in values if v > 0], repeat=len(rankers) - 1):
        if len(rankers) > 1:
            grids.append({rankers[0]: 0.0, **dict(zip(rankers[1:], combo, strict=True))})
    return grids


def evaluate(
    questions: Sequence[Mapping[str, Any]], weights: Mapping[str, float], metric: str = "R@10"
) -> float:
    """Mean ``metric`` of fused ranker lists over ``questions`` (each with ``rankings``
    of turn ids and ``answer_ids``)."""
    if not questions:
        return 0.0
    return statistics.fmean(
        score(fuse(q["rankings"], weights, q.get("boosts"))[: max(KS)], q["answer_ids"])[metric]
        for q in questions
    )


def cross_validate(
    questions: Sequence[Mapping[str, Any]],
    rankers: Sequence[str],
    folds: int,
    values: Sequence[float] = (0.0, 0.1, 0.25, 0.5, 1.0),
    metric: str = "R@10",
) -> list[dict[str, Any]]:
    """K-fold cross-validation by conversation: for each fold, the grid point with the
    best mean ``metric`` on the other folds' questions, and its scores on the fold's own
    (held-out) questions. Returns one dict per fold."""
    conversations = sorted({q["conversation"] for q in questions})
    if folds < 2 or folds > len(conversations):
        raise SystemExit(f"--cv needs 2..{len(conversations)} folds, got {folds}")
    grid = weight_grid(rankers, values)
    out = []
    for f in range(folds):
        held = set(conversations[f::folds])
        train = [q for q in questions if q["conversation"] not in held]
        test = [q for q in questions if q["conversation"] in held]
        best = max(grid, key=lambda w: (evaluate(train, w, metric), -sum(w.values())))
        rows = [
            score(fuse(q["rankings"], best, q.get("boosts"))[: max(KS)], q["answer_ids"])
            for q in test
        ]
        out.append(
            {
                "fold": f + 1,
                "held_out": sorted(held),
                "weights": best,
                "train": evaluate(train, best, metric),
                "n_test": len(test),
                "test": mean_scores(rows),
                "test_rows": [{"type": q["type"], **r} for q, r in zip(test, rows, strict=True)],
            }
        )
    return out
