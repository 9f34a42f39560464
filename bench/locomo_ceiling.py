"""The ceiling of the learned fusion on LoCoMo: how much of the evidence no ranker's
candidate list holds at all, and at what depth each ranker finds it.

    python bench/locomo.py --depth 300 --lists L300.json       # the lists, 300 deep (minutes)
    python bench/locomo_ceiling.py --lists L300.json

The learned fusion (``pmm.recall.rerank``) can only order the candidates its rankers list,
each cut at recall's depth (50): an evidence turn in none of those lists is lost to any
reordering. Printed, as recall (the share of each question's evidence turns, averaged over
the questions, as R@k is):

- each ranker alone at depths 10, 25, 50, 100, 200, 300, and the union of the rankers' lists
  (what the fusion sees) at the same depths, overall and per category;
- where the shipped fusion loses (held out by conversation, as ``bench/locomo_cv.py``): the
  evidence it puts in its top 25, the evidence it has as a candidate but ranks lower, and
  the evidence no list holds at depth 50;
- for the evidence no list holds at depth 50, the depth at which the best ranker finds it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from locomo import DEFAULT_DATA  # noqa: E402
from locomo_cv import GROUPS, SHIPPED_WITHOUT, Question, cross_validate, learned, load  # noqa: E402
from locomo_data import CATEGORIES  # noqa: E402

DEPTHS = (10, 25, 50, 100, 200, 300)
RANKERS = ("turn", "window", "dense", "digest")


def first_ranks(q: Question) -> dict[int, dict[str, int]]:
    """Each evidence turn's rank in each ranker's list (absent: not found at the depth)."""
    out: dict[int, dict[str, int]] = {e: {} for e in q.evidence}
    for ranker, ids in q.lists.items():
        for rank, i in enumerate(ids, start=1):
            if i in out and ranker not in out[i]:
                out[i][ranker] = rank
    return out


def share(q: Question, found: set[int]) -> float:
    return len(found.intersection(q.evidence)) / len(set(q.evidence))


def by_category(qs: Sequence[Question], values: Sequence[float]) -> dict[str, float]:
    out = {"all": statistics.fmean(values)}
    for cat, name in CATEGORIES.items():
        mine = [v for q, v in zip(qs, values, strict=True) if q.category == cat]
        if mine:
            out[name] = statistics.fmean(mine)
    return out


def line(label: str, cells: dict[str, float]) -> str:
    return f"  {label:<22}" + "".join(f"{v:>13.3f}" for v in cells.values())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lists", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA / "locomo10.json")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"LoCoMo is not here ({args.data}): skipped.")
        return 0
    deep = load(args.lists, args.data, depth=max(DEPTHS))
    rankers = [r for r in RANKERS if any(q.lists.get(r) for q in deep)]
    ranks = [first_ranks(q) for q in deep]
    recorded = max(len(ids) for q in deep for ids in q.lists.values())
    print(f"{len(deep)} questions; lists recorded up to {recorded} deep; rankers {rankers}")
    head = "".join(f"{c:>13}" for c in ("all", *CATEGORIES.values()))
    print(f"\nrecall of each ranker's list, and of their union, by depth:\n  {'':<22}{head}")
    for d in DEPTHS:
        for r in [*rankers, "union"]:
            values = []
            for q, rk in zip(deep, ranks, strict=True):
                found = {
                    e for e, at in rk.items() if (min(at.values(), default=10**9) if r == "union"
                                                  else at.get(r, 10**9)) <= d
                }  # fmt: skip
                values.append(share(q, found))
            print(line(f"{r}@{d}", by_category(deep, values)))

    shallow = load(args.lists, args.data)  # recall's depth: what the fusion ranks
    shipped = [f for g in GROUPS.values() for f in g if f not in SHIPPED_WITHOUT]
    for mode, cols in (("hybrid", shipped), ("keyword", [f for f in shipped if "dense" not in f])):
        _, fits = cross_validate(shallow, learned(cols))
        convs = list(dict.fromkeys(q.conv for q in shallow))
        fit_of = {c: fits[n // 2] for n, c in enumerate(convs)}
        top, candidate, missing = [], [], []
        for q in shallow:
            order = fit_of[q.conv](q)
            pool = set(q.ids) if mode == "hybrid" else {
                i for r, ids in q.lists.items() if r != "dense" for i in ids
            }  # fmt: skip
            top.append(share(q, set(order[:25])))
            candidate.append(share(q, pool) - top[-1])
            missing.append(1.0 - share(q, pool))
        print(f"\nheld-out shipped fusion, {mode} (candidates: the lists at depth 50):\n  "
              f"{'':<22}{head}")  # fmt: skip
        print(line("in its top 25 (R@25)", by_category(shallow, top)))
        print(line("candidate, ranked >25", by_category(shallow, candidate)))
        print(line("in no list", by_category(shallow, missing)))

    print("\nevidence turns in no list at depth 50: where the best ranker finds them")
    bins = {"51-100": 0, "101-200": 0, "201-300": 0, "in no list at 300": 0}
    best_of: dict[str, int] = {}
    total = 0
    for rk in ranks:
        for at in rk.values():
            best = min(at.values(), default=10**9)
            if best <= 50:
                continue
            total += 1
            key = next((b for b, hi in (("51-100", 100), ("101-200", 200), ("201-300", 300))
                        if best <= hi), "in no list at 300")  # fmt: skip
            bins[key] += 1
            if at:
                leader = min(at, key=lambda r: at[r])
                best_of[leader] = best_of.get(leader, 0) + 1
    turns = sum(len(rk) for rk in ranks)
    print(f"  {total} of {turns} evidence turns ({total / turns:.1%}): "
          + ", ".join(f"{b} {n}" for b, n in bins.items()))  # fmt: skip
    print("  the ranker that finds them first: "
          + ", ".join(f"{r} {n}" for r, n in sorted(best_of.items())))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
