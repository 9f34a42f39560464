"""A change to the rankers' lists on LoCoMo, held out by conversation as ``bench/locomo_cv.py``
folds, with and without refitting the learned fusion: did the change itself move recall, or
only the coefficients fitted to it?

    python bench/locomo.py --lists BEFORE.json        # at the commit before the change
    python bench/locomo.py --lists AFTER.json         # at the change
    python bench/locomo_refit.py --before BEFORE.json --after AFTER.json

For the shipped features of each mode (hybrid, keyword), fitted per fold on the eight
training conversations and scored on the two held out, three rows: ``before/before`` (today),
``before-fit/after`` (the coefficients fitted on the lists before the change, scored on the
lists after it: the change at recall time, coefficients as shipped) and ``after/after`` (both
refitted). Printed per category and per fold as R@10 / R@25 / H@10, then every held-out
question whose R@25 differs from ``before/before``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from locomo import DEFAULT_DATA  # noqa: E402
from locomo_cv import FOLDS, GROUPS, SHIPPED_WITHOUT, Question, learned, load, metric_rows  # noqa: E402
from locomo_data import scores  # noqa: E402

Held = list[tuple[Question, list[int]]]


def held_out(
    fit_on: list[Question], score_on: list[Question], cols: list[str]
) -> tuple[Held, list[str]]:
    """Each question of ``score_on`` ranked by coefficients fitted on the folds of ``fit_on``
    that hold it out; and each fold's R@10 / R@25 / H@10."""
    fit = learned(cols)
    convs = list(dict.fromkeys(q.conv for q in fit_on))
    held: Held = []
    folds = []
    for f in range(FOLDS):
        test = set(convs[2 * f : 2 * f + 2])
        ranker = fit([q for q in fit_on if q.conv not in test])
        tq = [q for q in score_on if q.conv in test]
        lists = [ranker(q) for q in tq]
        held += list(zip(tq, lists, strict=True))
        m = metric_rows(tq, lists)["all"]
        folds.append(f"{m['R@10']:.3f}/{m['R@25']:.3f}/{m['H@10']:.3f}")
    return held, folds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA / "locomo10.json")
    parser.add_argument("--vectors", type=Path, default=None,
                        help="bench/locomo.py's vector cache (session_dense)")  # fmt: skip
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"LoCoMo is not here ({args.data}): skipped.")
        return 0
    before = load(args.before, args.data, vectors=args.vectors)
    after = load(args.after, args.data, vectors=args.vectors)
    if [q.rec["question"] for q in before] != [q.rec["question"] for q in after]:
        raise SystemExit("the two files hold different questions")
    full = [f for g in GROUPS.values() for f in g]
    shipped = [f for f in full if f not in SHIPPED_WITHOUT]
    for mode, cols in (("hybrid", shipped), ("keyword", [f for f in shipped if "dense" not in f])):
        print(f"\n{mode} (R@10/R@25/H@10, held out)")
        runs = {
            "before/before": held_out(before, before, cols),
            "before-fit/after": held_out(before, after, cols),
            "after/after": held_out(after, after, cols),
        }
        for name, (held, folds) in runs.items():
            table = metric_rows([q for q, _ in held], [ids for _, ids in held])
            cells = "  ".join(
                f"{cat} {t['R@10']:.3f}/{t['R@25']:.3f}/{t['H@10']:.3f}" for cat, t in table.items()
            )
            print(f"  {name:<17} {cells}\n  {'':<17} folds {'  '.join(folds)}")
        today = runs["before/before"][0]
        for name in ("before-fit/after", "after/after"):
            for (q, was), (_, now) in zip(today, runs[name][0], strict=True):
                old, new = scores(was, q.evidence)["R@25"], scores(now, q.evidence)["R@25"]
                if old != new:
                    print(f"  {name}: {q.conv} category {q.category} R@25 {old:.2f} -> {new:.2f}"
                          f"  {q.rec['question'][:70]}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
