"""Every maintained bench runs on its small input (``--quick``, as bench/quick.py runs it)
and writes its figures with their provenance through bench/harness.py."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _quick() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_quick", ROOT / "bench" / "quick.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


QUICK = _quick()


def test_the_quick_set_holds_every_maintained_bench() -> None:
    """A bench script under bench/ is in the quick set, or is a module the benches share."""
    shared = {"harness", "quick"}
    scripts = {p.stem for p in (ROOT / "bench").glob("*.py")} - shared
    assert scripts <= {script.removesuffix(".py") for script, *_ in QUICK.QUICK.values()}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", list(QUICK.QUICK))
def test_bench_runs_on_its_small_input(name: str, tmp_path: Path) -> None:
    why = QUICK.skip_reason(name)
    if why:
        pytest.skip(why)
    out = tmp_path / f"{name}.json"
    done = subprocess.run(
        QUICK.command(name, out), capture_output=True, text=True, timeout=590, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    if name == "locomo" and not out.exists():
        assert "LoCoMo is not here" in done.stdout  # the data is never in the repository
        pytest.skip("no LoCoMo data on this machine")
    record = json.loads(out.read_text(encoding="utf-8"))
    script = QUICK.QUICK[name][0].removesuffix(".py")
    assert record["bench"] == f"bench/{script}.py" and record["args"]["quick"] is True
    assert record["commit"] and record["machine"] and record["seconds"] > 0
    assert record["command"].startswith(f"python bench/{script}.py")
