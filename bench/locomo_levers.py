"""One lever at a time on LoCoMo, held out by conversation as ``bench/locomo_cv.py`` folds:
the shipped learned fusion with and without a feature, or with another window list.

    python bench/locomo.py --lists L.json [--prf 5]          # the lists, once (minutes)
    python bench/locomo_levers.py --lists L.json --lever question_answered
    python bench/locomo_levers.py --lists L.json --window prf-rrf    # PRF on the window key

``--lever F`` (repeatable): the shipped features (``locomo_cv.SHIPPED_WITHOUT`` left out)
without and with ``F``, each fitted per fold on the eight training conversations, printed
per fold and per category (R@10 / R@25 / H@10) with every cell that lost. Without a lever:
the shipped fusion alone, per fold and per category, with the window list ``--window``
names (compare runs with ``--window window``). Hybrid and keyword mode both.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from locomo import DEFAULT_DATA  # noqa: E402
from locomo_cv import (  # noqa: E402
    FOLDS,
    GROUPS,
    SHIPPED_WITHOUT,
    WINDOW_LISTS,
    Question,
    cross_validate,
    fold_table,
    learned,
    load,
    metric_rows,
)
from locomo_data import CATEGORIES  # noqa: E402


def lever_report(
    qs: list[Question], lever: Sequence[str], shipped: Sequence[str]
) -> dict[str, Any]:
    """The shipped fusion with and without the features ``lever``, held out, per fold and
    per category (R@10 / R@25 / H@10), in hybrid and keyword mode: what adopting it buys."""
    out: dict[str, Any] = {}
    metrics = ("R@10", "R@25", "H@10")
    for mode, cols in (
        ("hybrid", list(shipped)),
        ("keyword", [f for f in shipped if "dense" not in f]),
    ):
        after = learned([*dict.fromkeys([*cols, *lever])])
        before = learned([f for f in cols if f not in lever])
        folds = [fold_table(qs, fit) for fit in (before, after)]
        tables = [cross_validate(qs, fit)[0] for fit in (before, after)]
        print(f"\nlever {'+'.join(lever)}, {mode}: held out, without -> with")
        for b, a in zip(*folds, strict=True):
            line = "  ".join(f"{m} {b[m]:.3f} -> {a[m]:.3f}" for m in metrics)
            print(f"  fold {','.join(b['held_out']):<16} {line}")
        losses = []
        for cat in ("all", *CATEGORIES.values()):
            if cat not in tables[0]:
                continue
            pair = [(m, tables[0][cat][m], tables[1][cat][m]) for m in metrics]
            line = "  ".join(f"{m} {x:.3f} -> {y:.3f}" for m, x, y in pair)
            print(f"  {cat:<16}       {line}")
            losses += [f"{cat} {m}" for m, x, y in pair if y < x - 1e-9]
        losses += [
            f"fold {','.join(b['held_out'])} {m}"
            for b, a in zip(*folds, strict=True)
            for m in metrics
            if a[m] < b[m] - 1e-9
        ]
        print(f"  losses: {', '.join(losses) if losses else 'none'}")
        out[mode] = {"folds": folds, "tables": tables, "losses": losses}
    return out


def shipped_report(qs: list[Question], shipped: Sequence[str]) -> dict[str, Any]:
    """The shipped fusion (hybrid and keyword) held out: pooled per category and per fold
    (R@10 / R@25 / H@10), one fit per fold (``--shipped-only``, e.g. with ``--window``)."""
    convs = list(dict.fromkeys(q.conv for q in qs))
    out: dict[str, Any] = {}
    metrics = ("R@10", "R@25", "H@10")
    modes = (("hybrid", list(shipped)), ("keyword", [f for f in shipped if "dense" not in f]))
    for mode, cols in modes:
        fit = learned(cols)
        held: list[tuple[Question, list[int]]] = []
        folds = []
        for f in range(FOLDS):
            test = convs[2 * f : 2 * f + 2]
            ranker = fit([q for q in qs if q.conv not in test])
            mine = [(q, ranker(q)) for q in qs if q.conv in test]
            held += mine
            m = metric_rows([q for q, _ in mine], [ids for _, ids in mine])["all"]
            folds.append({"held_out": test, **{k: m[k] for k in metrics}})
        table = metric_rows([q for q, _ in held], [ids for _, ids in held])
        print(f"\nshipped {mode}, held out:")
        for f in folds:
            line = "  ".join(f"{m} {f[m]:.3f}" for m in metrics)
            print(f"  fold {','.join(f['held_out']):<16} {line}")
        for cat in ("all", *CATEGORIES.values()):
            if cat in table:
                line = "  ".join(f"{m} {table[cat][m]:.3f}" for m in metrics)
                print(f"  {cat:<16}      {line}")
        out[mode] = {"folds": folds, "table": table}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lists", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA / "locomo10.json")
    parser.add_argument(
        "--lever",
        action="append",
        default=[],
        metavar="FEATURE",
        help="compare the shipped fusion with and without these features",
    )
    parser.add_argument(
        "--window",
        choices=WINDOW_LISTS,
        default="window",
        help="the window ranker's list (pseudo-relevance feedback)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)  # fmt: skip
    qs = load(args.lists, args.data, args.window)
    print(f"{len(qs)} questions, window list: {args.window}")
    shipped = [f for g in GROUPS.values() for f in g if f not in SHIPPED_WITHOUT]
    results = lever_report(qs, args.lever, shipped) if args.lever else shipped_report(qs, shipped)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
