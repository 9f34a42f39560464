"""Query-time signals for "should the dense ranker lead?", searched as gates on top of the
shipped hybrid policy and chosen only by k-fold cross-validation by conversation.

    python bench/fusion_signals.py --data bench/data/chat_dataset.json \\
        --data bench/data/recall_dataset.json \\
        --report bench/data/heldout_dataset.json --cache-dir bench/results

A gate is ``signal < t`` or ``signal >= t``: where it fires, the question is fused with
one of :data:`ALTERNATIVES` (more dense weight, or dense leading) instead of
:data:`pmm.recall.recaller.DEFAULT_POLICY`, which otherwise applies unchanged (its temporal and
idf-coverage rules included). Every figure is recall@10 of the exact fused ranking
(:func:`fusion.fused`, as :meth:`pmm.recall.recaller.Recaller.recall` fuses), from the rankings
``bench/fusion.py`` caches. Single gates and conjunctions of two are searched; the fold
pick maximises, on the other folds, the mean over datasets of the mean recall@10 over
kinds (as ``bench/fusion_grid.py``). ``--report`` datasets are scored, never chosen on.
The cached rankings are keyed by dataset name only: delete ``bench/results/fusion-*.pkl``
after a change to the indexes or rankers.

Printed beside the shipped default measured in the same run: every fold's pick and its
held-out figures, the best gates on all the data, and the frontier: for each paraphrase
recall@10 reachable by one gate, the best chat recall@10 that keeps the rule "on every
kind, not below the best single ranker", with the report datasets per kind.

Signals are label-free and read at query time: the dense ranker's cosines (top-1, its
margin over the 2nd/5th/10th), how many of the dense top 10 the turn or window top 10
hold, the turn-BM25 score's relative drop from 1st to 10th, the share of the question's
words that are stop words, its number of search terms and its plain (not idf) coverage.
Left out on purpose: absolute idf and BM25 scores and list lengths. They grow with the
store (the paraphrase conversations have about 50 turns, the chat ones about 550), so a
gate on them separates the two datasets rather than two kinds of question, and folds by
conversation cannot show it: every fold holds both datasets.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from fusion import fused, prepare
from fusion_grid import column_lists, kinds_mean

from pmm.recall.fusion import LOW_EVIDENCE_WEIGHTS, TEMPORAL_KEYWORD_WEIGHTS, FusionPolicy
from pmm.recall.recaller import DEFAULT_POLICY, DEFAULT_WEIGHTS
from pmm.text.words import STOPWORDS, search_terms, words

Row = dict[str, Any]

ALTERNATIVES: dict[str, FusionPolicy] = {
    "dense 0.3": FusionPolicy({**DEFAULT_WEIGHTS, "dense": 0.3}, TEMPORAL_KEYWORD_WEIGHTS),
    "dense 1": FusionPolicy({**DEFAULT_WEIGHTS, "dense": 1.0}, TEMPORAL_KEYWORD_WEIGHTS),
    "dense-led": FusionPolicy(LOW_EVIDENCE_WEIGHTS),
    "near-semantic": FusionPolicy({"turn": 0.03, "window": 0.03, "dense": 1.0}),
    "semantic": FusionPolicy({"dense": 1.0}),
}
"""The weights a firing gate switches to."""
PAIR_ALTERNATIVES = ("dense 0.3", "dense-led", "semantic")
"""Those tried by conjunctions of two gates (fewer: there are many more of them)."""
SINGLES: dict[str, FusionPolicy] = {
    "turn": FusionPolicy({"turn": 1.0}),
    "window": FusionPolicy({"window": 1.0}),
    "dense": FusionPolicy({"dense": 1.0}),
}
"""The single rankers of the rule."""


def _top(values: list[float], n: int) -> float:
    return values[min(n, len(values)) - 1] if values else 0.0


def _dense_margin(n: int) -> Callable[[Row], float]:
    return lambda row: _top(row["scores"]["dense"], 1) - _top(row["scores"]["dense"], n)


def _overlap(column: int) -> Callable[[Row], float]:
    def overlap(row: Row) -> float:
        lists = column_lists(row, False)
        return float(len(set(lists[2][:10]) & set(lists[column][:10])))

    return overlap


def _bm25_drop(row: Row) -> float:
    scores = row["scores"]["turn"]
    return (scores[0] - _top(scores, 10)) / scores[0] if scores and scores[0] > 0 else 0.0


def _stop_share(row: Row) -> float:
    found = words(row["question"].lower())
    return sum(w in STOPWORDS for w in found) / len(found) if found else 0.0


SIGNALS: dict[str, Callable[[Row], float]] = {
    "dense top-1 cosine": lambda row: _top(row["scores"]["dense"], 1),
    "dense margin 1-2": _dense_margin(2),
    "dense margin 1-5": _dense_margin(5),
    "dense margin 1-10": _dense_margin(10),
    "dense∩turn top10": _overlap(0),
    "dense∩window top10": _overlap(1),
    "bm25 drop 1-10": _bm25_drop,
    "stop-word share": _stop_share,
    "search terms": lambda row: float(len(search_terms(row["question"]))),
    "plain coverage": lambda row: float(row["coverage"]),
}
"""Label-free query-time signals (see the module docstring)."""


def recall_at_10(rows: list[Row], policy: FusionPolicy) -> np.ndarray:
    return np.array(
        [len(r["answers"].intersection(fused(r, policy)[:10])) / len(r["answers"]) for r in rows]
    )


def gates(
    rows: list[Row], choose: np.ndarray, pairs: bool = True
) -> tuple[list[str], np.ndarray, dict[str, np.ndarray]]:
    """Names and recall@10 (questions x gates; column 0 is the default) of every gate, with
    thresholds at quantiles of the ``choose`` rows (49 for single gates, 7 for pairs); and
    the single rankers' recall@10."""
    default = recall_at_10(rows, DEFAULT_POLICY)
    alternative = {name: recall_at_10(rows, p) for name, p in ALTERNATIVES.items()}
    singles_at, pairs_at = np.linspace(0.02, 0.98, 49), np.linspace(0.125, 0.875, 7)
    fires: list[tuple[str, np.ndarray, tuple[str, ...]]] = []
    conditions: list[tuple[str, str, np.ndarray]] = []
    for name, signal in SIGNALS.items():
        x = np.array([signal(r) for r in rows])
        for at, out in ((singles_at, None), (pairs_at, conditions)):
            for t in np.unique(np.quantile(x[choose], at)):
                for text, fire in ((f"{name} < {t:.3g}", x < t), (f"{name} >= {t:.3g}", x >= t)):
                    if out is None:
                        fires.append((text, fire, tuple(ALTERNATIVES)))
                    else:
                        out.append((name, text, fire))
    if pairs:
        fires += [
            (f"{a} and {b}", fa & fb, PAIR_ALTERNATIVES)
            for (na, a, fa), (nb, b, fb) in itertools.combinations(conditions, 2)
            if na != nb and (fa & fb)[choose].any()
        ]
    names, columns = ["default"], [default]
    for text, fire, alts in fires:
        for alt in alts:
            names.append(f"{text}: {alt}")
            columns.append(np.where(fire, alternative[alt], default))
    singles = {name: recall_at_10(rows, p) for name, p in SINGLES.items()}
    return names, np.stack(columns, axis=1).astype(np.float32), singles


def rule_holds(column: np.ndarray, rows: list[Row], mask: np.ndarray, singles: Any) -> bool:
    """On every kind of the ``mask`` rows, ``column`` is not below the best single ranker."""
    for kind in {r["type"] for r, m in zip(rows, mask, strict=True) if m}:
        sel = mask & np.array([r["type"] == kind for r in rows])
        if column[sel].mean() < max(s[sel].mean() for s in singles.values()) - 1e-9:
            return False
    return True


def per_kind(column: np.ndarray, rows: list[Row], mask: np.ndarray) -> str:
    kinds = sorted({r["type"] for r, m in zip(rows, mask, strict=True) if m})
    cells = [
        f"{k} {column[mask & np.array([r['type'] == k for r in rows])].mean():.3f}" for k in kinds
    ]
    return ", ".join([*cells, f"all {column[mask].mean():.3f}"])


def cross_validate(
    names: list[str], table: np.ndarray, rows: list[Row], choose: np.ndarray, folds: int
) -> None:
    """Each fold: the gate best on the other folds of the ``choose`` rows, its held-out
    figures beside the default's (column 0), and its figures on the other (report) rows."""
    dev = [r for r, c in zip(rows, choose, strict=True) if c]
    convs: dict[str, list[str]] = {}
    for r in dev:
        convs.setdefault(r["dataset"], [])
        if r["conv"] not in convs[r["dataset"]]:
            convs[r["dataset"]].append(r["conv"])
    conv_of = np.array([f"{r['dataset']}/{r['conv']}" for r in dev])
    dataset = np.array([r["dataset"] for r in dev])
    reported = sorted({r["dataset"] for r, c in zip(rows, choose, strict=True) if not c})
    everywhere = np.array([r["dataset"] for r in rows])
    held = []
    for n in range(folds):
        test = np.isin(conv_of, [f"{d}/{c}" for d, cs in convs.items() for c in cs[n::folds]])
        best = int(np.argmax(kinds_mean(table[choose], dev, ~test)))
        score = kinds_mean(table[choose], dev, test)
        held.append((score[best], score[0]))
        parts = " | ".join(
            f"{d} {table[choose][test & (dataset == d), best].mean():.3f} (default "
            f"{table[choose][test & (dataset == d), 0].mean():.3f})"
            for d in sorted(convs)
        )
        print(f"fold {n + 1}: chose {names[best]}")
        print(f"    held-out kinds-mean {score[best]:.4f} (default {score[0]:.4f}); R@10 {parts}")
        for d in reported:
            print(f"    {d} (reported): {per_kind(table[:, best], rows, everywhere == d)}")
    chosen, default = np.mean(held, axis=0)
    print(f"held-out mean over folds: chosen {chosen:.4f}, default {default:.4f}")


def frontier(
    names: list[str], table: np.ndarray, rows: list[Row], singles: Any, paraphrase: str
) -> None:
    """For each paraphrase recall@10 reached: the gate with the best chat recall@10 that
    keeps the rule on chat, its figures per kind on every dataset, and how many questions
    it ranks better or worse than the default."""
    dataset = np.array([r["dataset"] for r in rows])
    best: dict[float, int] = {}
    others = sorted(set(dataset) - {paraphrase, "chat"})
    chat = dataset == "chat"
    for j in range(table.shape[1]):
        level = round(float(table[dataset == paraphrase, j].mean()), 3)
        if not rule_holds(table[:, j], rows, chat, singles):
            continue
        if level not in best or table[chat, j].mean() > table[chat, best[level]].mean():
            best[level] = j
    floor = table[dataset == paraphrase, 0].mean() - 1e-9
    for level in sorted(x for x in best if x >= floor):
        j = best[level]
        print(f"{paraphrase} {level:.3f}: {names[j]}")
        for d in [paraphrase, "chat", *others]:
            diff = table[dataset == d, j] - table[dataset == d, 0]
            print(f"    {d}: {per_kind(table[:, j], rows, dataset == d)}; against the default "
                  f"{(diff > 0).sum()} questions up, {(diff < 0).sum()} down")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, action="append", required=True)
    parser.add_argument("--report", type=Path, action="append", default=[],
                        help="datasets scored, never chosen on")  # fmt: skip
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--paraphrase", default="recall", help="the paraphrase dataset's name")
    parser.add_argument("--no-pairs", action="store_true", help="single gates only")
    parser.add_argument("--cache-dir", type=Path, help="where rankings are cached (reused)")
    args = parser.parse_args()
    chosen_on = [row for path in args.data for row in prepare(path, args.cache_dir)]
    reported = [row for path in args.report for row in prepare(path, args.cache_dir)]
    rows = chosen_on + reported
    choose = np.arange(len(rows)) < len(chosen_on)
    names, table, singles = gates(rows, choose, pairs=not args.no_pairs)
    print(f"{len(names) - 1} gates on {len(chosen_on)} questions ({len(reported)} reported)")
    dataset = np.array([r["dataset"] for r in rows])
    print("\nbaselines measured in this run, recall@10 per kind:")
    for name, column in [("default", table[:, 0]), *singles.items()]:
        for d in sorted(set(dataset)):
            print(f"  {name:<8} {d}: {per_kind(column, rows, dataset == d)}")
    print(f"\n{args.folds}-fold cross-validation by conversation:")
    cross_validate(names, table, rows, choose, args.folds)
    dev = [r for r, c in zip(rows, choose, strict=True) if c]
    score = kinds_mean(table[choose], dev, np.ones(len(dev), dtype=bool))
    print(f"\nbest gates on all chosen-on data (default {score[0]:.4f}):")
    for j in np.argsort(-score)[:8]:
        marks = " ".join(f"{d} {table[dataset == d, j].mean():.3f}" for d in sorted(set(dataset)))
        print(f"  {score[j]:.4f} {names[j]}: {marks}")
    print("\nfrontier (the rule kept on chat):")
    frontier(names, table, rows, singles, args.paraphrase)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
