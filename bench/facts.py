"""Key facts: precision and recall per slot, rules alone against rules + spaCy, and the cost
per turn of each.

    python bench/facts.py                 # every split of tests/facts/data/facts_cases.jsonl
    python bench/facts.py --split external --errors
    python bench/facts.py --quick         # the dev split only
    python bench/facts.py --score docs/benchmarks/data/key-facts-labels.json   # real dialog

Splits: ``dev`` (written with the rules, tuned on), ``holdout`` (written before the rules,
never tuned on), ``external`` (the user turns of bench/data/recall_dataset.json, written by
someone else, labelled by hand). Per-turn cost is the median over the cases, measured after a
warm-up (the one-off spaCy load is printed on its own).

Key facts on real dialog (docs/benchmarks/key-facts.md): a blind, labelled sample of the facts
two builds emit on LoCoMo, with ``--build``, ``--shuffle``, ``--show`` and ``--score``:

    # 1. each build's facts and a seeded sample of 100 (pmm imported from --pmm)
    git worktree add /tmp/facts-old a200e3d
    python bench/facts.py --build old --pmm /tmp/facts-old --out /tmp/kf-old.json
    python bench/facts.py --build new --out /tmp/kf-new.json
    # 2. one blind file (no build named; shuffled) and the key that unblinds it (do not read)
    python bench/facts.py --shuffle /tmp/kf-old.json /tmp/kf-new.json \\
        --out /tmp/kf-blind.json --key /tmp/kf-key.json
    # 3. each fact with its source turn, for the labeller; labels go in /tmp/kf-marks.json
    python bench/facts.py --show /tmp/kf-blind.json
    # 4. precision per build; --labels writes the committed labels (ids, no text)
    python bench/facts.py --score /tmp/kf-marks.json --blind /tmp/kf-blind.json \\
        --key /tmp/kf-key.json --labels docs/benchmarks/data/key-facts-labels.json
    python bench/facts.py --score docs/benchmarks/data/key-facts-labels.json

A fact is one value a user turn adds to the user's key facts (``extract_facts`` over the turn,
as :class:`pmm.context.users.UserFacts` feeds its book, rules only: the default). Each of
LoCoMo's two speakers is in turn the user (speaker_a alone gives 61 facts today: too few for a
sample of 100). A fact is named by conversation, speaker (a/b), turn (dia_id), attribute and
the first 12 hex digits of the SHA-256 of its value: LoCoMo's licence (CC BY-NC) keeps its
text out of the repository, so the committed labels hold ids only and the text is read from
``../shared/data/locomo/`` at labelling time. The rubric: docs/benchmarks/key-facts.md.
With ``--build``, ``--quick`` samples 10 per build from the first two conversations.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from harness import Bench, stamp  # noqa: E402

CASES = ROOT / "tests" / "facts" / "data" / "facts_cases.jsonl"
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"


def per_turn_ms(cases: list[Any], *, nlp: bool, rounds: int = 3) -> float:
    from pmm.facts import extract_facts

    times = []
    for _ in range(rounds):
        for case in cases:
            start = time.perf_counter()
            extract_facts(case.text, nlp=nlp)
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def table(reports: dict[str, Any]) -> str:
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


def rules(args: Any) -> dict[str, Any]:
    """Precision and recall per slot on the labelled sentences, rules beside rules + spaCy."""
    from pmm.facts.evaluate import evaluate, load_cases
    from pmm.facts.nlp import pipeline

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
    return {"overall": figures}


def turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The turns of one conversation in session order (sessions from the ``session_N`` lists)."""
    conv = sample["conversation"]
    keys = [k for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)]
    keys.sort(key=lambda k: int(k.split("_")[1]))
    return [turn for key in keys for turn in conv[key]]


def fact_id(conv: str, side: str, dia_id: str, attribute: str, value: str) -> str:
    digest = hashlib.sha256(value.lower().encode("utf-8")).hexdigest()[:12]
    return f"{conv}|{side}|{dia_id}|{attribute}|{digest}"


def extract_all(
    data: list[dict[str, Any]], pmm_root: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every fact each speaker's turns give, with the build's book size per conversation."""
    sys.path.insert(0, str(pmm_root))
    from pmm.facts import FactBook, extract_facts

    facts: list[dict[str, Any]] = []
    per_conv: dict[str, Any] = {}
    for sample in data:
        conv = sample["sample_id"]
        for side in ("a", "b"):
            speaker = sample["conversation"][f"speaker_{side}"]
            book = FactBook()
            count = 0
            for turn in turns(sample):
                if turn["speaker"] != speaker:
                    continue
                book.add(turn["text"], source=(conv, turn["dia_id"]))
                for fact in extract_facts(turn["text"]):
                    count += 1
                    facts.append(
                        {
                            "id": fact_id(conv, side, turn["dia_id"], fact.attribute, fact.value),
                            "attribute": fact.attribute,
                            "value": fact.value,
                        }
                    )
            shown = sum(len(book.values(a)) for a in {f["attribute"] for f in facts})
            per_conv[f"{conv}/{side}"] = {"extracted": count, "in_book_at_end": shown}
    import pmm.facts

    per_conv["_pmm"] = str(Path(pmm.facts.__file__).resolve().parent)
    return facts, per_conv


def locate(data: list[dict[str, Any]], fid: str) -> tuple[str, str]:
    """(speaker, text) of the turn a fact id names."""
    conv, side, dia_id = fid.split("|")[:3]
    sample = next(s for s in data if s["sample_id"] == conv)
    turn = next(t for t in turns(sample) if t["dia_id"] == dia_id)
    return sample["conversation"][f"speaker_{side}"], turn["text"]


def labelled(args: Any, argv: list[str] | None, bench: Bench) -> dict[str, Any]:
    """The blind, labelled sample of key facts on LoCoMo (``--build`` ... ``--score``)."""
    figures: dict[str, Any] = {}
    if args.build:
        data = json.loads(args.data.read_text(encoding="utf-8"))
        if args.quick:
            data, args.size = data[:2], 10
        facts, per_conv = extract_all(data, args.pmm)
        ids = sorted({f["id"] for f in facts})
        sample = random.Random(args.seed).sample(ids, min(args.size, len(ids)))
        chosen = {f["id"]: f for f in facts if f["id"] in set(sample)}
        kinds = Counter(f["attribute"].split("'")[0] for f in facts)
        bench.table(
            ["conversation/speaker", "facts extracted", "values in the book at the end"],
            [[k, v["extracted"], v["in_book_at_end"]] for k, v in per_conv.items() if k[0] != "_"],
            title=f"build {args.build} ({per_conv['_pmm']}): {len(facts)} facts, "
            f"{len(ids)} distinct; {dict(kinds.most_common(6))}",
        )
        record = {
            "build": args.build,
            "per_conversation": per_conv,
            "facts": len(facts),
            "sample": [chosen[i] for i in sample],
        }
        if args.out:
            args.out.write_text(json.dumps(record, indent=1), encoding="utf-8")
        figures = {k: v for k, v in record.items() if k != "sample"}
    elif args.shuffle:
        old, new = (json.loads(p.read_text(encoding="utf-8")) for p in args.shuffle)
        items: dict[str, dict[str, Any]] = {}
        key: dict[str, list[str]] = {}
        for build in (old, new):
            for fact in build["sample"]:
                items[fact["id"]] = fact
                key.setdefault(fact["id"], []).append(build["build"])
        order = sorted(items)
        random.Random(args.seed).shuffle(order)
        blind = [{"n": n, **items[fid]} for n, fid in enumerate(order, 1)]
        args.out.write_text(json.dumps(blind, indent=1), encoding="utf-8")
        args.key.write_text(json.dumps(key, indent=1), encoding="utf-8")
        print(f"{len(blind)} distinct facts in {args.out}; key (do not read) in {args.key}")
    elif args.show:
        data = json.loads(args.data.read_text(encoding="utf-8"))
        for item in json.loads(args.show.read_text(encoding="utf-8")):
            speaker, text = locate(data, item["id"])
            label = item["attribute"]
            print(
                f"#{item['n']} [{item['id'].split('|')[2]}] {speaker}: {text}\n"
                f"    -> {label}: {item['value']}\n"
            )
    elif args.score:
        marks = json.loads(args.score.read_text(encoding="utf-8"))
        if args.blind is not None and args.key is not None:
            blind = {str(i["n"]): i["id"] for i in json.loads(args.blind.read_text("utf-8"))}
            key = json.loads(args.key.read_text(encoding="utf-8"))
            rows = []
            for n, mark in sorted(marks["labels"].items(), key=lambda kv: int(kv[0])):
                conv, side, dia_id, attribute, sha = blind[n].split("|")
                rows.append(
                    {
                        "conversation": conv,
                        "speaker": side,
                        "dia_id": dia_id,
                        "attribute": attribute,
                        "value_sha256_12": sha,
                        "builds": key[blind[n]],
                        "correct": mark[0],
                        "why": mark[1],
                    }
                )
            if len(rows) != len(blind):
                raise SystemExit(f"{len(blind) - len(rows)} facts of the blind file have no label")
            command = " ".join(["python bench/facts.py", *(argv or sys.argv[1:])])
            marks = {
                "bench": "bench/facts.py",
                **stamp(command),
                "rubric": "docs/benchmarks/key-facts.md",
                "labeller": marks.get("labeller"),
                "facts": rows,
            }
            if args.labels:
                args.labels.write_text(json.dumps(marks, indent=1) + "\n", encoding="utf-8")
        table = []
        for build in ("old", "new"):
            got = [r for r in marks["facts"] if build in r["builds"]]
            ok = sum(1 for r in got if r["correct"])
            why = Counter(r["why"] for r in got if not r["correct"])
            table.append(
                [
                    build,
                    len(got),
                    ok,
                    ok / len(got) if got else 0.0,
                    ", ".join(f"{w} {c}" for w, c in why.most_common()),
                ]
            )
            figures[build] = {"labelled": len(got), "correct": ok}
        bench.table(["build", "labelled", "correct", "precision", "wrong, by reason"], table)
    return figures


def main(argv: list[str] | None = None) -> None:
    bench = Bench("facts", __doc__)
    p = bench.parser
    p.add_argument("--cases", type=Path, default=CASES)
    p.add_argument("--split", action="append", help="only these splits (repeatable)")
    p.add_argument("--errors", action="store_true", help="print every wrong case")
    p.add_argument("--data", type=Path, default=DATA, help="locomo10.json")
    p.add_argument("--build", choices=["old", "new"], help="sample this build's facts")
    p.add_argument("--pmm", type=Path, default=ROOT, help="checkout whose pmm is imported")
    p.add_argument("--size", type=int, default=100, help="facts sampled per build (100)")
    p.add_argument("--shuffle", nargs=2, type=Path, metavar=("OLD", "NEW"))
    p.add_argument("--show", type=Path, metavar="BLIND", help="print each fact and its turn")
    p.add_argument("--score", type=Path, metavar="LABELS", help="precision per build")
    p.add_argument("--blind", type=Path)
    p.add_argument("--key", type=Path)
    p.add_argument("--labels", type=Path, help="with --score: write the committed labels here")
    p.add_argument("--out", type=Path)
    args = bench.parse(argv)
    if args.build or args.shuffle or args.show or args.score:
        bench.finish(labelled(args, argv, bench))
    else:
        sys.path.insert(0, str(ROOT))
        bench.finish(rules(args))


if __name__ == "__main__":
    main()
