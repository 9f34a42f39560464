"""scripts/plots.py draws every plot from docs/benchmarks/data/*.json, and the transcribed
figures there are the ones the benchmark pages print."""

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
    drawn = [plots.recall_at_k(), plots.latency_against_events(), plots.bytes_per_turn()]
    for path in drawn:
        assert path.read_text("utf-8").lstrip().startswith("<?xml")
        assert (ROOT / "docs" / "images" / path.name).exists(), f"{path.name} is not committed"
    again = plots.recall_at_k().read_bytes()
    assert again == drawn[0].read_bytes()  # deterministic: a rerun changes no byte


def test_the_transcribed_recall_figures_are_the_fusion_pages() -> None:
    data = json.loads((DATA / "recall-at-k.json").read_text("utf-8"))
    page = (ROOT / "docs" / "benchmarks" / "fusion.md").read_text("utf-8")
    rows = {
        "turn BM25 (baseline)": "| turn BM25 |",
        "hybrid, the default": "| **hybrid, the default** |",
    }
    chat = data["datasets"]["chat (1,548 questions)"]
    para = data["datasets"]["paraphrase (130 questions)"]
    for name, prefix in rows.items():
        [line] = [row for row in page.splitlines() if row.startswith(prefix)]
        cells = [c.strip() for c in line.split("|")[2:-1]]
        assert [float(c) for c in cells[0:4]] == chat[name]
        assert [float(c) for c in cells[5:9]] == para[name]


def test_the_storage_figures_are_the_storage_page() -> None:
    data = json.loads((DATA / "storage-bytes.json").read_text("utf-8"))["bytes_per_turn"]
    page = (ROOT / "docs" / "benchmarks" / "storage.md").read_text("utf-8")
    assert f"| PMM, summaries off | {data['PMM, summaries off']:,} |" in page
    assert f"| PMM compacted | {data['PMM compacted']:,} |" in page
    assert f"| SQLChatMessageHistory | {data['SQLChatMessageHistory (baseline)']:,} |" in page


def test_the_memory_runs_record_where_they_were_measured() -> None:
    runs = [json.loads(p.read_text("utf-8")) for p in DATA.glob("memory-*.json")]
    assert len(runs) >= 2
    for run in runs:
        assert run["bench"] == "bench/memory.py" and run["commit"] and run["machine"]
        assert run["figures"]["PMM"]["load_memory_variables"]["p50_ms"] > 0
