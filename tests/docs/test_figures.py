"""The README's headline table and the benchmarks index are drawn from the benches' JSON by
scripts/figures.py: the README holds exactly what the script prints, the index gets it at
build time, every row's file records where it was measured, and the README's comparison
with the peers prints the figures of their JSON."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from snippet_helpers import ROOT


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


FIGURES = _load("pmm_figures_test", ROOT / "scripts" / "figures.py")
README = (ROOT / "README.md").read_text("utf-8")


def test_the_readme_table_is_what_the_script_prints_from_the_json() -> None:
    assert FIGURES.readme_block(README) == FIGURES.table("docs/benchmarks/")
    assert FIGURES.main(["--check"]) == 0


def test_every_readme_figure_is_the_json_value_in_its_row() -> None:
    block = FIGURES.readme_block(README)
    for row in FIGURES.ROWS:
        data = json.loads((ROOT / row.json).read_text("utf-8"))
        pmm = row.fmt.format(FIGURES.value(data, row.key, row.json))
        base = row.fmt.format(FIGURES.value(data, row.baseline, row.json))
        [line] = [line for line in block.splitlines() if line.startswith(f"| {row.label} ")]
        assert f"**{pmm}**" in line and f": {base} |" in line, (row.label, line)


def test_a_changed_json_value_makes_the_check_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = FIGURES.ROWS[0]
    data = json.loads((ROOT / row.json).read_text("utf-8"))
    node = data
    for part in row.key[:-1]:
        node = node[part]
    node[row.key[-1]] = 0.123456
    (tmp_path / "docs" / "benchmarks").mkdir(parents=True)
    copy = tmp_path / row.json
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(json.dumps(data), encoding="utf-8")
    for other in FIGURES.ROWS[1:]:
        target = tmp_path / other.json
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_text((ROOT / other.json).read_text("utf-8"), encoding="utf-8")
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    monkeypatch.setattr(FIGURES, "ROOT", tmp_path)
    assert FIGURES.main(["--check"]) == 1
    assert FIGURES.main([]) == 0  # rewrites the README's table
    assert "**0.123**" in FIGURES.readme_block((tmp_path / "README.md").read_text("utf-8"))


def test_the_benchmarks_index_gets_the_same_table_at_build_time() -> None:
    hook = _load("pmm_docs_hook_figures", ROOT / "docs" / "hooks" / "generated.py")
    page = (ROOT / "docs" / "benchmarks" / "index.md").read_text("utf-8")
    assert hook.FIGURES_MARKER in page
    built = hook.on_page_markdown(page)
    assert hook.FIGURES_MARKER not in built
    assert FIGURES.table("") in built
    readme_rows = [r for r in FIGURES.readme_block(README).splitlines() if r.startswith("| ")]
    for row in readme_rows[2:]:  # the same cells, links relative to the page
        assert row.replace("(docs/benchmarks/", "(") in built


def test_every_row_reads_a_file_with_provenance() -> None:
    for row in FIGURES.ROWS:
        data = json.loads((ROOT / row.json).read_text("utf-8"))
        machine = data["machine"]
        commit = machine["commit"] if isinstance(machine, dict) else data["commit"]
        assert commit and "+dirty" not in commit, row.json
        assert FIGURES.provenance(data)[:4] == "2026", row.json
        assert (ROOT / "docs" / "benchmarks" / row.page).is_file(), row.page


def test_the_readme_comparison_prints_the_peers_json() -> None:
    [row] = [r for r in FIGURES.ROWS if r.page == "peers.md"]
    systems = json.loads((ROOT / row.json).read_text("utf-8"))["datasets"]["locomo"]["systems"]
    [line] = [
        line for line in README.splitlines() if line.startswith("| recall@10, LoCoMo, one run")
    ]
    cells = [c.strip() for c in line.split("|")[2:-1]]
    pmm, mem0, langmem, langgraph = cells
    assert pmm == f"{systems['pmm']['R@10']:.3f}"
    assert mem0.startswith(f"{systems['mem0']['R@10']:.3f} ") and "infer=False" in mem0
    assert "not measured" in langmem
    for store in ("langgraph-memory", "langgraph-sqlite"):
        assert langgraph == f"{systems[store]['R@10']:.3f}"


def test_the_readme_says_why_pmm_in_its_first_40_lines_and_stays_short() -> None:
    lines = README.splitlines()
    assert len(lines) <= 150
    first = "\n".join(lines[:40])
    assert "**Pick PMM when**" in first
    assert "| | PMM | mem0" in first and "LangMem" in first and "LangGraph stores" in first
    assert 'pip install ".[agents]"' in README and "not on PyPI" in README
    for lab_note in ("target", "/tmp/", "main `"):
        assert lab_note not in FIGURES.readme_block(README)
