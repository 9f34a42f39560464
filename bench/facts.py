"""Key facts: precision and recall per slot, rules alone against rules + spaCy, and the cost
per turn of each.

    python bench/facts.py                 # every split of tests/facts/data/facts_cases.jsonl
    python bench/facts.py --split external --errors
    python bench/facts.py --quick         # the dev split only

Splits: ``dev`` (written with the rules, tuned on), ``holdout`` (written before the rules,
never tuned on), ``external`` (the user turns of bench/data/recall_dataset.json, written by
someone else, labelled by hand). Per-turn cost is the median over the cases, measured after a
warm-up (the one-off spaCy load is printed on its own).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import Bench  # noqa: E402

from pmm.facts import extract_facts  # noqa: E402
from pmm.facts.evaluate import Case, Report, evaluate, load_cases  # noqa: E402
from pmm.facts.nlp import pipeline  # noqa: E402

CASES = ROOT / "tests" / "facts" / "data" / "facts_cases.jsonl"


def per_turn_ms(cases: list[Case], *, nlp: bool, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        for case in cases:
            start = time.perf_counter()
            extract_facts(case.text, nlp=nlp)
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def table(reports: dict[str, Report]) -> str:
    slots = sorted({slot for r in reports.values() for slot in r.by_slot})
    names = list(reports)
    head = "| slot | " + " | ".join(f"{n} P | {n} R" for n in names) + " |"
    rule = "|---|" + "---:|---:|" * len(names)
    rows = [head, rule]
    for slot in [*slots, "overall"]:
        cells = []
        for name in names:
            score = reports[name].overall if slot == "overall" else reports[name].by_slot.get(slot)
            if score is None:
                cells += ["–", "–"]
            else:
                support = score.tp + score.fn
                cells += [f"{score.precision:.2f}", f"{score.recall:.2f} ({support})"]
        label = f"**{slot}**" if slot == "overall" else slot
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    bench = Bench("facts", __doc__)
    parser = bench.parser
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--split", action="append", help="only these splits (repeatable)")
    parser.add_argument("--errors", action="store_true", help="print every wrong case")
    args = bench.parse(argv)
    if args.quick:
        args.split = args.split or ["dev"]

    cases = [c for c in load_cases(args.cases) if not args.split or c.split in args.split]
    splits = sorted({c.split for c in cases})
    print(
        f"{len(cases)} sentences ({', '.join(splits)}), "
        f"{sum(1 for c in cases if not c.facts)} of them traps with no fact\n"
    )

    start = time.perf_counter()
    nlp = pipeline()
    load_s = time.perf_counter() - start
    modes = {"rules": False} | ({"rules+spaCy": True} if nlp is not None else {})
    if nlp is None:
        print("spaCy or its model is not installed: rules only\n")
    else:
        print(
            f"spaCy pipeline {nlp.meta.get('name')} {nlp.meta.get('version')}: "
            f"loaded in {load_s:.2f} s (once per process)\n"
        )

    figures: dict[str, dict[str, dict[str, float]]] = {}
    for split in [*splits, "all"]:
        chosen = [c for c in cases if split in {"all", c.split}]
        reports = {name: evaluate(chosen, nlp=flag) for name, flag in modes.items()}
        figures[split] = {
            n: {"precision": r.overall.precision, "recall": r.overall.recall}
            for n, r in reports.items()
        }
        print(f"### {split} ({len(chosen)} sentences)\n")
        print(table(reports) + "\n")
        if args.errors:
            for name, report in reports.items():
                for case, got in report.errors:
                    want = [(f.attribute, f.value) for f in case.facts]
                    print(
                        f"  [{name}] {case.text!r}\n      want {want}\n      got  "
                        f"{[(f.attribute, f.value) for f in got]}"
                    )

    print("### cost per turn (median over all sentences, ms)\n")
    for name, flag in modes.items():
        print(f"- {name}: {per_turn_ms(cases, nlp=flag):.3f} ms")
    bench.finish({"overall": figures})


if __name__ == "__main__":
    main()
