"""The offline side of ``bench/fusion.py``: fusion policies on a grid, scored from cached
ranker lists (numpy, all policies at once), and k-fold cross-validation by conversation.

    from fusion_grid import hybrid_grid, recall_table, cross_validate
    table = recall_table(rows, hybrid_grid())   # questions x policies, recall@10

A row is one question: ``type``, ``conv``, ``dataset``, ``answers``, ``temporal``,
``coverage`` and ``coverage_idf`` (see :func:`pmm.recall.fusion.lexical_coverage`; ``_d``: with
digests) and ``lists`` (each ranker's turn ids, best first). Scores are weighted
``1 / (RRF_K + rank)`` as in :func:`pmm.recall.recaller.rrf_fuse`; ties are not broken the way it
breaks them, so the shipped policy's figures are recomputed exactly by ``bench/fusion.py``.
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any

import numpy as np

from pmm.recall.fusion import FusionPolicy
from pmm.recall.recaller import RRF_K
from pmm.text.window_keys import DEFAULT_WINDOW_RADIUS

COLUMNS = ("turn", "window", "dense", "digest")
NORMAL = {"turn": (0.25, 0.5, 1.0), "window": (1.0, 1.5, 2.0), "dense": (0.1, 0.2, 0.3, 0.5)}
TEMPORAL = (None, (1.0, 0.5), (2.0, 0.5), (1.0, 1.0), (2.0, 1.0))
"""Temporal overrides tried: none, or (turn, window) weights for temporal questions."""
GATES = (
    None,
    *itertools.product(
        (0.2, 0.3, 0.4, 0.5, 0.6, 0.7), (0.05, 0.1, 0.25), (False, True), (0.0, 0.15)
    ),
)
"""Low-evidence switches tried: none, or (coverage threshold, keyword weight with dense 1,
coverage weighted by idf, blend half-width: 0 for a step)."""


def hybrid_grid(idf: bool | None = None) -> list[FusionPolicy]:
    """Every hybrid policy; ``idf`` True/False: only those whose low-evidence switch reads
    the idf-weighted / the plain coverage (and those without a switch)."""
    out = []
    gates = [g for g in GATES if g is None or idf is None or g[2] == idf]
    for t, w, d in itertools.product(*NORMAL.values()):
        for temporal, gate in itertools.product(TEMPORAL, gates):
            out.append(
                FusionPolicy(
                    {"turn": t, "window": w, "dense": d, "digest": 0.0},
                    None
                    if temporal is None
                    else dict(zip(("turn", "window"), temporal, strict=True)),
                    None if gate is None else {"turn": gate[1], "window": gate[1], "dense": 1.0},
                    0.0 if gate is None else gate[0],
                    False if gate is None else gate[2],
                    0.0 if gate is None else gate[3],
                )
            )
    return out


def keyword_grid() -> list[FusionPolicy]:
    return [
        FusionPolicy(
            {"turn": t, "window": w, "digest": 0.0},
            None if temporal is None else dict(zip(("turn", "window"), temporal, strict=True)),
        )
        for t, w, temporal in itertools.product(NORMAL["turn"], NORMAL["window"], TEMPORAL)
    ]


def label(policy: FusionPolicy) -> str:
    def short(weights: Any) -> str:
        return ",".join(f"{k}={v:g}" for k, v in weights.items() if v)

    text = short(policy.weights)
    if policy.temporal:
        text += f"; temporal {short(policy.temporal)}"
    if policy.low_evidence:
        cover = "idf-coverage" if policy.idf else "coverage"
        blend = f"±{policy.blend:g}" if policy.blend else ""
        text += f"; {cover}<{policy.threshold:g}{blend}: {short(policy.low_evidence)}"
    return text


def coverage_key(policy: FusionPolicy, digests: bool) -> str:
    """The row field holding the coverage ``policy`` reads."""
    return "coverage" + ("_idf" if policy.idf else "") + ("_d" if digests else "")


def column_lists(row: dict[str, Any], digests: bool) -> list[list[Any]]:
    """The row's list for each of :data:`COLUMNS` (with or without digests)."""
    dw = "3" if row["temporal"] else "1"
    return [
        row["lists"]["turn+d" if digests else "turn"],
        row["lists"][f"window{DEFAULT_WINDOW_RADIUS}@{dw}"],
        row["lists"]["dense"],
        row["lists"]["digest"] if digests else [],
    ]


def _weights(grid: list[FusionPolicy], which: str) -> np.ndarray:
    out = np.zeros((len(COLUMNS), len(grid)))
    for j, policy in enumerate(grid):
        weights = {
            "normal": policy.weights,
            "temporal": {**policy.weights, **(policy.temporal or {})},
            "low": policy.low_evidence or policy.weights,
        }[which]
        for i, column in enumerate(COLUMNS):
            out[i, j] = weights.get(column, 0.0)
    return out


def recall_table(
    rows: list[dict[str, Any]], grid: list[FusionPolicy], digests: bool = False
) -> np.ndarray:
    """recall@10 of every question (rows) under every policy (columns)."""
    normal, temporal, low = (_weights(grid, w) for w in ("normal", "temporal", "low"))
    thresholds = np.array([p.threshold if p.low_evidence else 0.0 for p in grid])
    blends = np.array([p.blend if p.low_evidence else 0.0 for p in grid])
    idf = np.array([p.idf for p in grid])
    out = np.zeros((len(rows), len(grid)))
    for i, row in enumerate(rows):
        lists = column_lists(row, digests)
        cands = sorted({t for ids in lists for t in ids})
        if not cands:
            continue
        where = {t: n for n, t in enumerate(cands)}
        m = np.zeros((len(cands), len(COLUMNS)))
        for j, ids in enumerate(lists):
            for rank, tid in enumerate(ids, 1):
                m[where[tid], j] = 1.0 / (RRF_K + rank)
        w = (temporal if row["temporal"] else normal).copy()
        suffix = "_d" if digests else ""
        coverage = np.where(idf, row["coverage_idf" + suffix], row["coverage" + suffix])
        # the share of the normal weights (see FusionPolicy.weights_for): a step at the
        # threshold, or linear over threshold +- blend
        step = (coverage >= thresholds).astype(float)
        smooth = np.clip((coverage - thresholds + blends) / np.maximum(2 * blends, 1e-12), 0, 1)
        share = np.where(blends > 0, smooth, step)
        w = low * (1 - share) + w * share
        scores = m @ w
        kth = -np.partition(-scores, min(9, len(cands) - 1), axis=0)[min(9, len(cands) - 1)]
        hit = np.array([t in row["answers"] for t in cands])[:, None]
        out[i] = ((scores >= kth) & (scores > 0) & hit).sum(axis=0) / len(row["answers"])
    return out


def kinds_mean(table: np.ndarray, rows: list[dict[str, Any]], mask: np.ndarray) -> np.ndarray:
    """Per policy: the mean over datasets of the mean recall@10 over question kinds."""
    per_dataset = []
    for dataset in sorted({r["dataset"] for r in rows}):
        kinds = sorted({r["type"] for r in rows if r["dataset"] == dataset})
        means = []
        for kind in kinds:
            sel = mask & np.array([r["dataset"] == dataset and r["type"] == kind for r in rows])
            if sel.any():
                means.append(table[sel].mean(axis=0))
        if means:
            per_dataset.append(np.mean(means, axis=0))
    return np.mean(per_dataset, axis=0)


def cross_validate(
    table: np.ndarray,
    rows: list[dict[str, Any]],
    grid: list[FusionPolicy],
    folds: int,
    baselines: dict[str, int],
) -> list[int]:
    """Print each fold: the policy chosen on the other folds and its held-out figures
    beside the baselines' (by their grid index); returns the chosen indices."""
    convs: dict[str, list[str]] = {}
    for r in rows:
        convs.setdefault(r["dataset"], [])
        if r["conv"] not in convs[r["dataset"]]:
            convs[r["dataset"]].append(r["conv"])
    conv_of = np.array([f"{r['dataset']}/{r['conv']}" for r in rows])
    chosen, held = [], []
    for n in range(folds):
        test = [f"{d}/{c}" for d, cs in convs.items() for c in cs[n::folds]]
        test_mask = np.isin(conv_of, test)
        best = int(np.argmax(kinds_mean(table, rows, ~test_mask)))
        chosen.append(best)
        parts = []
        for dataset in sorted(convs):
            sel = test_mask & np.array([r["dataset"] == dataset for r in rows])
            if not sel.any():
                continue
            figs = {"chosen": best, **baselines}
            parts.append(
                f"{dataset}: "
                + ", ".join(f"{name} {table[sel][:, j].mean():.3f}" for name, j in figs.items())
            )
        held.append(kinds_mean(table, rows, test_mask)[best])
        names = ",".join(c.split("/")[1] for c in test)
        print(f"fold {n + 1} (held out {names}): chose {label(grid[best])}")
        print("    held-out R@10 " + " | ".join(parts))
    print(f"held-out mean R@10 (mean over datasets of the mean over kinds): "
          f"{statistics.fmean(held):.3f}")  # fmt: skip
    return chosen
