"""Draw the documentation's benchmark plots as SVG, from the JSON the benches write into
docs/benchmarks/data/ (each file records its command, commit, time, machine and load).

    python scripts/plots.py            # rewrites docs/images/*.svg (needs the [docs] extra)

The files, and the command that writes each:

- ``recall-locomo.json``: ``python bench/locomo.py --json docs/benchmarks/data/recall-locomo.json``
  (needs ../shared/data/locomo/; the file holds figures only, never LoCoMo's text);
- ``recall-chat.json`` and ``recall-paraphrase.json``: ``python bench/recall.py --data chat
  --digests without --json docs/benchmarks/data/recall-chat.json`` (and ``paraphrase``);
- ``memory-N.json``: ``python bench/memory.py --events N --sessions N/100 --rounds 100
  --json docs/benchmarks/data/memory-N.json`` (100 events per session, so only the size of
  the file changes);
- ``users-EVENTS.json``: ``python bench/users.py [--users N] --json
  docs/benchmarks/data/users-EVENTS.json`` (EVENTS: the big file's events);
- ``chains.json``: ``python bench/chains.py --seconds 8 --events 5000 --users 500 --json
  docs/benchmarks/data/chains.json``;
- ``storage-bytes.json``: ``python bench/storage.py --recall-conversations 0 --json
  docs/benchmarks/data/storage-bytes.json``.

Nothing here is computed or invented: the script only draws what those files hold. The SVGs
are deterministic (no dates, fixed ids), so a rerun on the same data changes no byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

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


RECALL_FILES = {
    "LoCoMo (real dialog)": "recall-locomo.json",
    "chat (generated)": "recall-chat.json",
    "paraphrase (generated)": "recall-paraphrase.json",
}
"""One panel per dataset; the LoCoMo one is left out where its file is absent."""

SYSTEMS = {
    "bm25": "plain BM25 (baseline)",
    "ranker:window": "window ranker alone",
    "keyword": "keyword mode",
    "semantic": "semantic mode (dense MiniLM alone)",
    "hybrid": "hybrid, the default",
}
"""The systems drawn, by their names in the benches' JSON (recall.py adds ``|digests``)."""


def _recall_rows(data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``system -> {"R@1": .., ...}`` from bench/locomo.py's or bench/recall.py's JSON."""
    if "tables" in data:  # bench/locomo.py: system -> category -> figures
        return {name: groups["all"] for name, groups in data["tables"].items()}
    rows = {}  # bench/recall.py: "system|digests" -> figures
    for key, figures in data["summary"].items():
        name, _, digests = key.partition("|")
        if digests in ("-", "no"):
            rows[name] = figures
    return rows


def recall_at_k() -> Path:
    panels = {title: _load(name) for title, name in RECALL_FILES.items() if (DATA / name).is_file()}
    if not panels:
        raise SystemExit("no docs/benchmarks/data/recall-*.json: run bench/recall.py --json")
    ks = [1, 5, 10, 25]
    figure, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.6), sharey=True)
    for ax, (title, data) in zip(axes, panels.items(), strict=True):
        rows = _recall_rows(data)
        for name, shown in SYSTEMS.items():
            if name not in rows:
                continue
            style = "--" if name == "bm25" else "-"
            ax.plot(ks, [rows[name][f"R@{k}"] for k in ks], style, marker="o", label=shown)
        ax.set_title(f"{title}\n{data['measured'][:10]}, {data['commit']}", fontsize=8)
        ax.set_xlabel("k")
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("recall@k (share of answer turns in the top k)")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(
        handles, labels, loc="lower center", ncol=5, fontsize=7, bbox_to_anchor=(0.5, -0.1)
    )
    machine = next(iter(panels.values()))["machine"]
    figure.suptitle(f"Recall@k per ranker and mode ({machine})", fontsize=9, y=1.06)
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
    ax.set_title(
        f"Bytes per turn by storage mode ({data['measured'][:10]}, commit {data['commit']})\n"
        f"{data['corpus']}",
        fontsize=7,
    )
    ax.set_xlim(0, max(modes.values()) * 1.18)
    return _save(figure, "bytes-per-turn.svg")


def _figures() -> Any:
    """scripts/figures.py: the headline rows and how to read them."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("pmm_figures", ROOT / "scripts" / "figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def headline_recall() -> Path:
    """The headline recall@k rows of scripts/figures.py, PMM beside its baseline."""
    figures = _figures()
    rows = [row for row in figures.ROWS if row.key[-1].startswith("R@")]
    labels, pmm, base = [], [], []
    for row in rows:
        data = figures.load(row)
        labels.append(row.label.replace("recall@10, ", "").replace(", beside", "\nbeside"))
        pmm.append(figures.value(data, row.key, row.json))
        base.append(figures.value(data, row.baseline, row.json))
    figure, ax = plt.subplots(figsize=(6.4, 0.75 * len(rows) + 1.2))
    ys = list(range(len(rows)))
    bars = ax.barh([y - 0.2 for y in ys], pmm, height=0.4, color="tab:blue", label="PMM")
    other = ax.barh(
        [y + 0.2 for y in ys], base, height=0.4, color="tab:gray", label="baseline, same run"
    )
    ax.bar_label(bars, [f"{v:.3f}" for v in pmm], padding=3, fontsize=7)
    ax.bar_label(other, [f"{v:.3f}" for v in base], padding=3, fontsize=7)
    ax.set_yticks(ys, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("recall@10 (share of the evidence turns in the top 10)")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("Recall@10: baselines are BM25, or mem0 for the peers row", fontsize=8)
    return _save(figure, "headline-recall.svg")


PEERS = DATA / "peers.json"
"""bench/peers.py's run: ``python bench/peers.py --json docs/benchmarks/data/peers.json``."""


def peers() -> Path:
    """R@10 of PMM and its peers on each dataset, from bench/peers.py's JSON."""
    data = json.loads(PEERS.read_text("utf-8"))
    datasets = list(data["datasets"])
    systems = list(data["datasets"][datasets[0]]["systems"])
    figure, axes = plt.subplots(1, len(datasets), figsize=(3.4 * len(datasets), 3.2), sharey=True)
    for ax, name in zip(axes, datasets, strict=True):
        rows = data["datasets"][name]["systems"]
        shown = [s for s in systems if s in rows]
        values = [rows[s]["R@10"] for s in shown]
        colors = ["tab:blue" if s.startswith("pmm") else "tab:gray" for s in shown]
        bars = ax.barh(shown, values, color=colors)
        ax.bar_label(bars, [f"{v:.3f}" for v in values], padding=3, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(f"{name}: {data['datasets'][name]['questions']:,} questions", fontsize=8)
        ax.set_xlabel("R@10")
    figure.suptitle(
        f"Recall@10 beside the peers, one run, the same MiniLM vectors "
        f"({data['measured'][:10]}, {data['machine']}); mem0 with infer=False",
        fontsize=8,
        y=1.03,
    )
    return _save(figure, "peers-recall.svg")


CONTEXT_SYSTEMS = {
    "pmm": ("PMM context", "tab:blue", "-"),
    "recall": ("PMM recall to the budget", "tab:cyan", "--"),
    "half": ("half buffer, then PMM recall", "tab:purple", "--"),
    "bm25": ("BM25 turns to the budget", "tab:olive", ":"),
    "mem0": ("mem0 search (infer=False)", "tab:red", ":"),
    "langgraph": ("LangGraph store search", "tab:orange", ":"),
    "buffer": ("buffer (newest turns)", "tab:gray", ":"),
}
"""The systems of bench/context.py, as the plot names them."""


def context() -> Path:
    """Evidence in the context against the budget, PMM beside the baselines and the peers,
    one panel per mode (``python bench/context.py --json docs/benchmarks/data/context.json``)."""
    data = _load("context.json")
    table = data["table"]
    modes = [m for m in ("thread", "new") if m in table]
    titles = {"thread": "asked in the thread that holds it", "new": "asked in a new thread"}
    figure, axes = plt.subplots(1, len(modes), figsize=(4.2 * len(modes), 3.4), sharey=True)
    for ax, mode in zip(list(axes) if len(modes) > 1 else [axes], modes, strict=True):
        for system, (label, color, style) in CONTEXT_SYSTEMS.items():
            rows = table[mode].get(system)
            if not rows:
                continue
            budgets = sorted(rows, key=int)
            values = [rows[b]["evidence"] for b in budgets]
            width = 2.2 if system == "pmm" else 1.2
            ax.plot(
                [int(b) for b in budgets],
                values,
                style,
                color=color,
                lw=width,
                label=label,
                marker="o",
                ms=3,
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks([500, 1000, 2000, 4000], ["500", "1,000", "2,000", "4,000"])
        ax.set_ylim(0, 1)
        ax.set_xlabel("token budget")
        ax.set_title(titles[mode], fontsize=8)
        ax.grid(alpha=0.3)
    (axes[0] if len(modes) > 1 else axes).set_ylabel("share of evidence turns in the context")
    (axes[-1] if len(modes) > 1 else axes).legend(fontsize=7, loc="lower right")
    figure.suptitle(
        f"LoCoMo, {data['questions']} questions: what the model sees ({data['measured'][:10]}, "
        f"{data['machine']})",
        fontsize=8,
        y=1.02,
    )
    return _save(figure, "context-evidence.svg")


USERS_MEASURES = ("load_memory_variables", "keyword recall", "hybrid recall")
"""The steady-state calls bench/users.py times (a user's first recall is left out)."""


def users() -> Path:
    """One user's p50 in a file and in one ten times larger, from each ``users-*.json``
    (``python bench/users.py [--users N] --json docs/benchmarks/data/users-EVENTS.json``)."""
    runs = sorted(
        (_load(p.name) for p in DATA.glob("users-*.json")), key=lambda r: r["events"]["big"]
    )
    figure, axes = plt.subplots(1, len(runs), figsize=(3.6 * len(runs), 3.0), sharey=True)
    for ax, run in zip(list(axes) if len(runs) > 1 else [axes], runs, strict=True):
        small, big = run["p50_ms"]["small"], run["p50_ms"]["big"]
        x = range(len(USERS_MEASURES))
        for offset, (rows, n, color) in enumerate(
            ((small, run["events"]["small"], "tab:gray"), (big, run["events"]["big"], "tab:blue"))
        ):
            values = [rows[m] for m in USERS_MEASURES]
            bars = ax.bar(
                [i + (offset - 0.5) * 0.38 for i in x], values, 0.38, color=color,
                label=f"{n:,} events",
            )  # fmt: skip
            ax.bar_label(bars, [f"{v:.1f}" for v in values], padding=2, fontsize=7)
        ratios = [big[m] / small[m] for m in USERS_MEASURES]
        names = ("load_memory_\nvariables", "keyword\nrecall", "hybrid\nrecall")
        ax.set_xticks(list(x), [f"{n}\n{r:.2f}x" for n, r in zip(names, ratios, strict=True)])
        ax.set_title(f"{run['measured'][:10]}, load {run['load_average']:.1f}", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(axis="y", alpha=0.3)
    (axes[0] if len(runs) > 1 else axes).set_ylabel("one user's p50, ms")
    figure.suptitle(
        f"The same 200 users in a file and in one ten times larger ({runs[0]['machine']})",
        fontsize=8,
        y=1.02,
    )
    return _save(figure, "users-scale.svg")


POSTGRES_APPENDS = {
    "per-user": ("PMM append (one chain per user)", "tab:blue", "-"),
    "global": ("PMM under one global chain (before)", "tab:red", "--"),
    "chained": ("floor: PMM's row on its chain", "tab:cyan", ":"),
    "row": ("floor: PMM's row, bare", "tab:purple", ":"),
    "bare": ("baseline: one-row INSERT", "tab:gray", ":"),
}
"""The append paths of bench/chains.py, as the plot names them."""


def postgres_appends() -> Path:
    """Appends/s on PostgreSQL by writer processes, PMM beside its floors and the bare
    insert of the same run (``python bench/chains.py --json docs/benchmarks/data/chains.json``)."""
    data = _load("chains.json")
    rates: dict[str, dict[int, float]] = {}
    for key, rate in data["appends_per_s"].items():
        how, writers = key.rsplit(" x", 1)
        rates.setdefault(how, {})[int(writers)] = rate
    figure, ax = plt.subplots(figsize=(5.2, 3.4))
    for how, (label, color, style) in POSTGRES_APPENDS.items():
        if how not in rates:
            continue
        writers = sorted(rates[how])
        width = 2.2 if how == "per-user" else 1.2
        ax.plot(writers, [rates[how][w] for w in writers], style, color=color, lw=width,
                marker="o", ms=3, label=label)  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(rates["per-user"]), [str(w) for w in sorted(rates["per-user"])])
    ax.set_yscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel("writer processes (distinct users)")
    ax.set_ylabel("appends per second, all writers")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    pg = data["postgres"]
    ax.set_title(
        f"PostgreSQL {pg['server_version'].split()[0]}, fsync and synchronous commit on\n"
        f"{data['measured'][:10]}, {data['machine']}, load {data['load_average']:.1f}",
        fontsize=8,
    )
    return _save(figure, "postgres-appends.svg")


def main() -> None:
    draws = (recall_at_k, latency_against_events, bytes_per_turn, headline_recall, peers)
    for draw in (*draws, context, users, postgres_appends):
        print(f"wrote {draw().relative_to(ROOT)}")


if __name__ == "__main__":
    main()
