"""scripts/plots.py draws every plot from the benches' JSON in docs/benchmarks/data/, and
the figures there are the ones the benchmark pages print."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from snippet_helpers import ROOT

pytest.importorskip("matplotlib")
DATA = ROOT / "docs" / "benchmarks" / "data"


def _plots() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pmm_plots", ROOT / "scripts" / "plots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_plot_is_drawn_from_the_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plots = _plots()
    monkeypatch.setattr(plots, "IMAGES", tmp_path)
    drawn = [
        plots.recall_at_k(),
        plots.latency_against_events(),
        plots.bytes_per_turn(),
        plots.headline_recall(),
        plots.peers(),
        plots.users(),
        plots.postgres_appends(),
    ]
    for path in drawn:
        assert path.read_text("utf-8").lstrip().startswith("<?xml")
        assert (ROOT / "docs" / "images" / path.name).exists(), f"{path.name} is not committed"
    again = plots.recall_at_k().read_bytes()
    assert again == drawn[0].read_bytes()  # deterministic: a rerun changes no byte


def test_the_recall_page_prints_the_plotted_figures() -> None:
    page = (ROOT / "docs" / "benchmarks" / "recall.md").read_text("utf-8")
    for dataset, row in (
        ("chat", "| chat, 1,548 questions |"),
        ("paraphrase", "| paraphrase, 130"),
    ):
        summary = json.loads((DATA / f"recall-{dataset}.json").read_text("utf-8"))["summary"]
        [line] = [r for r in page.splitlines() if r.startswith(row)]
        cells = line.split("|")[2:-1]
        for cell, key in zip(
            cells, ("bm25|-", "hybrid|no", "keyword|no", "semantic|no"), strict=False
        ):
            r10, r25 = summary[key]["R@10"], summary[key]["R@25"]
            assert f"{r10:.3f}" in cell and f"({r25:.3f})" in cell, (dataset, key, cell)


def test_the_storage_page_prints_the_plotted_figures() -> None:
    data = json.loads((DATA / "storage-bytes.json").read_text("utf-8"))
    page = " ".join((ROOT / "docs" / "benchmarks" / "storage.md").read_text("utf-8").split())
    per_turn = data["bytes_per_turn"]
    pmm = ("PMM, summaries off", "PMM compressed", "PMM with digests", "PMM compacted")
    assert " / ".join(f"{per_turn[k]:,}" for k in pmm) + " B per turn" in page
    assert f"{per_turn['SQLChatMessageHistory (baseline)']:,} for `SQLChatMessageHistory`" in page
    assert f"at commit `{data['commit']}`" in page


def test_every_plotted_file_records_where_it_was_measured() -> None:
    for path in DATA.glob("*.json"):
        record = json.loads(path.read_text("utf-8"))
        assert record["bench"].startswith("bench/"), path.name
        assert record["commit"] and "+dirty" not in record["commit"], path.name
        assert record["machine"] and record["measured"][:4] == "2026", path.name
        if "command" in record:  # memory-*.json predate the recorded command
            assert record["command"].startswith("python " + record["bench"]), path.name


def test_the_memory_runs_record_where_they_were_measured() -> None:
    runs = [json.loads(p.read_text("utf-8")) for p in DATA.glob("memory-*.json")]
    assert len(runs) >= 2
    for run in runs:
        assert run["bench"] == "bench/memory.py" and run["commit"] and run["machine"]
        assert run["figures"]["PMM"]["load_memory_variables"]["p50_ms"] > 0


def test_the_users_page_prints_the_plotted_figures() -> None:
    page = (ROOT / "docs" / "benchmarks" / "users.md").read_text("utf-8")
    runs = [json.loads(p.read_text("utf-8")) for p in DATA.glob("users-*.json")]
    assert len(runs) >= 2
    for run in runs:
        small, big = run["p50_ms"]["small"], run["p50_ms"]["big"]
        [line] = [r for r in page.splitlines() if r.startswith(f"| {run['events']['big']:,} ")]
        for measure in ("load_memory_variables", "keyword recall", "hybrid recall"):
            cell = f"{small[measure]:.2f} / {big[measure]:.2f}"
            assert cell in line, (measure, cell, line)
        assert f"load {run['load_average']:.1f}" in line and run["measured"][:10] in line


def test_the_postgres_page_prints_the_plotted_figures() -> None:
    data = json.loads((DATA / "chains.json").read_text("utf-8"))
    page = " ".join((ROOT / "docs" / "benchmarks" / "postgres.md").read_text("utf-8").split())
    rates = data["appends_per_s"]
    for how in ("per-user", "chained", "row", "bare", "global"):
        cells = " | ".join(f"{rates[f'{how} x{n}']:,.0f}" for n in (1, 2, 4, 8))
        assert cells in page, (how, cells)
    assert f"{data['verify']['user_ms']:.2f} ms" in page
    assert f"{data['erase_stall']['other_ms']:.0f} ms" in page
    assert f"at commit `{data['commit']}`" in page
