"""Optional extras that are not installed fail early with one clear line.

The [embeddings] extra is made missing for real, in a child process whose import system
refuses ``sentence_transformers`` (a meta-path blocker), not by mocking PMM's checks.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pmm.dream.worker import BackgroundWorker
from pmm.errors import MissingDependencyError

ROOT = Path(__file__).resolve().parents[1]

BLOCKER = """
import sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
"""


def run_blocked(blocked: set[str], code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = f"BLOCKED = {sorted(blocked)!r}\n{BLOCKER}\n{textwrap.dedent(code)}"
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=120,
    )


@pytest.mark.parametrize("blocked", ["sentence_transformers", "torch"])
def test_mind_with_embeddings_but_no_extra_fails_at_construction(
    blocked: str, tmp_path: Path
) -> None:
    code = """
        import time
        from pmm import Mind
        from pmm.errors import MissingDependencyError
        started = time.perf_counter()
        try:
            Mind("m.db", enable_embeddings=True, enable_summary=True, summarizer="heuristic")
        except MissingDependencyError as exc:
            print("ERROR:", exc)
        else:
            print("constructed")
        print("seconds:", round(time.perf_counter() - started, 2))
    """
    run = run_blocked({blocked}, code, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "ERROR:" in run.stdout, run.stdout
    assert "pip install 'pmm-memory[embeddings]'" in run.stdout
    assert "Traceback" not in run.stderr and "did not finish" not in run.stderr
    assert run.stderr.strip() == ""


def test_cli_search_semantic_without_the_extra_is_exit_2_with_one_line(tmp_path: Path) -> None:
    code = """
        import sys
        from pmm.cli import main
        main(["init", "--db", "m.db"])
        sys.exit(main(["search", "lisbon", "--mode", "semantic", "--db", "m.db"]))
    """
    run = run_blocked({"sentence_transformers"}, code, tmp_path)
    assert run.returncode == 2
    errors = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "pmm-memory[embeddings]" in errors[0], run.stderr


def test_worker_error_is_one_line_and_the_flush_message_tells_the_truth(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def work() -> int:
        raise MissingDependencyError("Semantic recall", "sentence-transformers", "embeddings")

    with caplog.at_level(logging.WARNING, logger="pmm"):
        worker = BackgroundWorker(work, flush_timeout=10.0)
        worker.wake()
        started = time.perf_counter()
        assert worker.close() is False
        elapsed = time.perf_counter() - started
    assert elapsed < 5.0
    messages = [r.getMessage() for r in caplog.records]
    assert not any("did not finish within" in m for m in messages), messages
    assert any("stopped on an error" in m and "pmm-memory[embeddings]" in m for m in messages)
    assert all(r.exc_info is None for r in caplog.records if r.levelno >= logging.WARNING)


def test_a_slow_worker_still_says_it_did_not_finish(caplog: pytest.LogCaptureFixture) -> None:
    def work() -> int:
        time.sleep(0.5)
        return 0

    with caplog.at_level(logging.WARNING, logger="pmm"):
        worker = BackgroundWorker(work, flush_timeout=0.05)
        worker.wake()
        assert worker.close() is False
    assert any("did not finish within 0.1s" in r.getMessage() for r in caplog.records)
