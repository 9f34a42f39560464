"""A few seconds of bench/agent_soak.py (create_agent + PMMMiddleware, bad messages and
cancellations, one SQLite file): every message of every thread stored exactly once, no
thread left failing, the chain verifies; and the long-thread figure is produced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def test_short_agent_soak_stores_every_message_once(tmp_path: Path) -> None:
    command = [sys.executable, str(REPO_ROOT / "bench" / "agent_soak.py"), "--seconds", "4"]
    out = tmp_path / "soak.json"
    command += ["--processes", "1", "--threads", "2", "--backend", "sqlite", "--json", str(out)]
    command += ["--bad", "0.4", "--cancel", "0.2", "--long-thread", "40", "--long-rounds", "2"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(tmp_path)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 or out.exists(), done.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    soak = result["sqlite"]
    assert soak["errors"] == [] and soak["threads_left_failing"] == []
    assert soak["expected_messages"] > 0 and soak["missing"] == 0 and soak["stored_twice"] == 0
    assert soak["chain_ok"] and soak["process_exit_codes"] == [0]
    bad = sum(soak["rounds"].get(kind, 0) for kind in ("oversized", "empty", "nul", "surrogate"))
    assert bad + soak["rounds"].get("huge_tool", 0) > 0
    assert soak["step_ms_with_pmm"]["n"] > 0 and soak["step_ms_without"]["n"] > 0
    assert result["long_thread"]["stored_events"] >= 40
    assert result["ok"] and done.returncode == 0, done.stderr
