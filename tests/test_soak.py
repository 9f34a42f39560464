"""A short soak (bench/soak.py): 2 processes x 2 threads on one SQLite file for ~5 s.

Every acknowledged save_context is a row afterwards, no call failed, the chain verifies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_short_soak_keeps_every_acknowledged_turn(tmp_path: Path):
    command = [sys.executable, str(REPO_ROOT / "bench" / "soak.py"), "--seconds", "5"]
    command += ["--processes", "2", "--threads", "2", "--dream-every", "5", "--json"]
    command += ["--db", str(tmp_path / "soak.db")]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    result = json.loads(done.stdout)
    assert result["errors"] == [] and result["process_exit_codes"] == [0, 0]
    assert result["ops"]["save_context"] > 0 and result["ops"]["dream"] > 0
    assert result["ops"]["recall"] > 0 and result["ops"]["load_memory_variables"] > 0
    assert result["turn_rows"] == result["acknowledged_turns"] > 0
    assert result["chain_ok"] and result["ok"] and done.returncode == 0, done.stderr
