"""Draw the documentation's benchmark plots as SVG, from the benches' figures in
docs/benchmarks/data/*.json.

    python scripts/plots.py            # rewrites docs/images/*.svg (needs the [docs] extra)

Where each number comes from (every JSON file also says so in its "source" field):

- ``recall-at-k.json``: recall@1/5/10/25 per ranker and mode on the chat and paraphrase
  datasets, transcribed from the README's table "All questions, recall@k and MRR" at commit
  749a3cd, as printed by ``bench/fusion.py`` (which writes no JSON; rerunning it embeds
  both datasets, too slow on the 2 shared cores the docs were built on).
- ``memory-N.json``: written by ``python bench/memory.py --events N --sessions N/100
  --rounds 100 --json docs/benchmarks/data/memory-N.json`` (100 events per session, so only
  the size of the file changes); each file holds its commit, date, machine and load.
- ``storage-bytes.json``: bytes per turn in each storage mode, transcribed from the README's
  table at commit 7b3d8ec, as printed by ``python bench/storage.py --dbstat``.

Nothing here is computed or invented: the script only draws what those files hold. The SVGs
are deterministic (no dates, fixed ids), so a rerun on the same data changes no byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "benchmarks" / "data"
IMAGES = ROOT / "docs" / "images"

plt.rcParams.update({"svg.hashsalt": "pmm", "font.size": 9, "svg.fonttype": "path"})


def _load(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / name).read_text("utf-8")))


def _save(figure: Any, name: str) -> Path:
    IMAGES.mkdir(parents=True, exist_ok=True)
    path = IMAGES / name
    figure.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(figure)
    return path


def recall_at_k() -> Path:
    data = _load("recall-at-k.json")
    ks = data["k"]
    datasets = data["datasets"]
    figure, axes = plt.subplots(1, len(datasets), figsize=(9, 3.4), sharey=True)
    for ax, (dataset, rankers) in zip(axes, datasets.items(), strict=True):
        for ranker, values in rankers.items():
            style = "--" if "baseline" in ranker else "-"
            ax.plot(ks, values, style, marker="o", label=ranker)
        ax.set_title(dataset)
        ax.set_xlabel("k")
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("recall@k")
    axes[-1].legend(loc="lower right", fontsize=7)
    figure.suptitle(f"Recall@k per ranker and mode ({data['measured']})", fontsize=9)
    return _save(figure, "recall-at-k.svg")


def latency_against_events() -> Path:
    runs = sorted(
        (_load(p.name) for p in DATA.glob("memory-*.json")), key=lambda run: run["events"]
    )
    if not runs:
        raise SystemExit("no docs/benchmarks/data/memory-*.json: run bench/memory.py --json")
    events = [run["events"] for run in runs]
    figure, ax = plt.subplots(figsize=(6, 3.4))
    for label, shown in (
        ("PMM", "PMM (relevant memories on)"),
        ("PMM, PMM_RECALL_K=0", "PMM, PMM_RECALL_K=0"),
        ("ConversationBufferMemory", "ConversationBufferMemory over SQLChatMessageHistory"),
    ):
        p50 = [run["figures"][label]["load_memory_variables"]["p50_ms"] for run in runs]
        ax.plot(events, p50, marker="o", label=shown)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("events in the file (100 per session)")
    ax.set_ylabel("load_memory_variables p50 (ms)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    commits = sorted({run["commit"] for run in runs})
    dates = sorted({run["measured"][:10] for run in runs})
    loads = [run["load_average"] for run in runs]
    ax.set_title(
        f"Latency against events in the file ({', '.join(dates)}, commits {', '.join(commits)})"
        f"\nload average {min(loads):.0f}–{max(loads):.0f}; {runs[0]['machine']}",
        fontsize=7,
    )
    return _save(figure, "recall-latency.svg")


def bytes_per_turn() -> Path:
    data = _load("storage-bytes.json")
    modes = data["bytes_per_turn"]
    figure, ax = plt.subplots(figsize=(6, 3))
    labels = list(modes)
    colors = ["tab:gray" if "baseline" in label else "tab:blue" for label in labels]
    bars = ax.barh(labels, [modes[label] for label in labels], color=colors)
    ax.bar_label(bars, [f"{modes[label]:,}" for label in labels], padding=3, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bytes per turn (vacuumed file)")
    ax.set_title(f"Bytes per turn by storage mode ({data['measured']})", fontsize=9)
    ax.set_xlim(0, max(modes.values()) * 1.18)
    return _save(figure, "bytes-per-turn.svg")


def main() -> None:
    for draw in (recall_at_k, latency_against_events, bytes_per_turn):
        print(f"wrote {draw().relative_to(ROOT)}")


if __name__ == "__main__":
    main()
