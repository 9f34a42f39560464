"""A background worker whose digest step raises is reported, restarted, and loses nothing."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

from pmm import Mind
from pmm.digest import Digest
from tests.mind_helpers import RecordingDigester


class ExplodingDigester:
    """Raises an unexpected exception type, or kills the thread outright with SystemExit."""

    name = "exploding"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.calls = 0

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        self.calls += 1
        raise self.exc


def _wait(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_unexpected_exception_is_reported_and_turns_stay_pending(tmp_path: Path, caplog):
    db = tmp_path / "pmm.db"
    digester = ExplodingDigester(KeyError("vocab"))
    with caplog.at_level(logging.WARNING, logger="pmm.dream.worker"):
        mind = Mind(str(db), enable_summary=True, digester=digester, dream_on_close=False)
        try:
            mind.remember_turn("first question " * 30, "first answer " * 30, session_id="s")
            assert not mind.flush(5.0)  # the round failed: flush says so
            worker = mind.stats()["worker"]
            assert worker["alive"] and worker["failures"] >= 1
            assert worker["last_error"] == "KeyError: 'vocab'"
            assert mind.stats()["pending_digests"] == 2
        finally:
            mind.close()
    assert any("KeyError" in r.getMessage() for r in caplog.records)
    # Nothing was lost: the next process with a working digester digests both turns.
    with Mind(str(db), enable_summary=True, digester=RecordingDigester()) as again:
        assert again.flush(10.0)
        stats = again.stats()
        assert stats["pending_digests"] == 0 and stats["turns"] == 2
        assert stats["worker"]["failures"] == 0 and stats["worker"]["last_error"] is None
        assert again.verify().ok


def test_dead_thread_is_reported_and_restarted(tmp_path: Path, caplog):
    digester = ExplodingDigester(SystemExit(3))  # not an Exception: it ends the thread
    mind = Mind(str(tmp_path / "pmm.db"), enable_summary=True, digester=digester)
    try:
        mind.remember("a turn long enough to digest " * 20, role="user", session_id="s")
        worker = mind._worker
        assert worker is not None
        assert _wait(lambda: not worker.alive)
        assert worker.status()["alive"] is False and worker.status()["stopped"] is False
        with caplog.at_level(logging.WARNING, logger="pmm.dream.worker"):
            reported = mind.stats()["worker"]  # stats restarts the dead thread
        assert reported["restarts"] == 1 and reported["failures"] >= 1
        assert reported["last_error"] == "SystemExit: 3"
        assert any("restarted" in r.getMessage() for r in caplog.records)
        # The restarted thread works again once the digester does.
        mind._processor._digester = RecordingDigester()
        mind._worker.wake()
        assert mind.flush(10.0)
        assert mind.stats()["pending_digests"] == 0
    finally:
        mind.close()


def test_pmm_stats_shows_the_worker_line(tmp_path: Path):
    from pmm.cli.log import worker_lines

    assert worker_lines(None) == []
    [line] = worker_lines(
        {"alive": False, "stopped": False, "failures": 2, "restarts": 0, "last_error": "E: x"}
    )
    assert line == "background worker: DEAD, 2 failed rounds, 0 restarts; last error: E: x"
