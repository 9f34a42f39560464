"""PMM_COMPRESS_AFTER without a dream: Mind.close() and the background worker's idle pass
compress old text in short bounded passes (pmm/dream/upkeep.py), and nothing happens when the
setting is unset. Every check reads the real SQLite file."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_helpers import raw

from pmm import Mind
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

OLD = datetime.now(UTC) - timedelta(days=40)


def reply(i: int) -> str:
    return (
        f"Reply {i}: for the garden irrigation, first write down the goal, then split the "
        f"next step into something you can finish in one afternoon (note {i * 7 % 101})."
    )


def shapes(db: Path) -> dict[int, str]:
    """``typeof(content)`` of every row, read by a connection of its own."""
    with raw(db) as conn:
        return dict(conn.execute("SELECT id, typeof(content) FROM events").fetchall())


def remember_old_and_new(mind: Mind, old: int = 40) -> tuple[list[int], int]:
    ids = [mind.remember(reply(i), role="user", session_id="s", ts=OLD).id for i in range(old)]
    return ids, mind.remember(reply(999), role="user", session_id="s").id


@pytest.fixture(autouse=True)
def _no_env_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PMM_COMPRESS_AFTER", raising=False)


def test_close_compresses_old_text_with_summaries_and_embeddings_off(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(db, compress_after="30d") as mind:
        assert mind._worker is None  # nothing in the background: close is the only pass
        old, recent = remember_old_and_new(mind)
        assert set(shapes(db).values()) == {"text"}  # an append never compresses
    seen = shapes(db)
    assert [seen[i] for i in old] == ["blob"] * len(old) and seen[recent] == "text"
    with EventStore(db) as store:
        assert store.get(old[5]).content == reply(5) and store.verify().ok


def test_nothing_is_compressed_when_the_setting_is_unset(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(db) as mind:
        assert not mind.settings.compress_after
        remember_old_and_new(mind)
        assert mind.process_pending() == 0
    assert set(shapes(db).values()) == {"text"}
    with raw(db) as conn:
        assert conn.execute("SELECT count(*) FROM text_dictionaries").fetchone()[0] == 0


def test_idle_pass_compresses_then_waits_and_close_catches_up(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(db, compress_after="0") as mind:  # "0": every text is old
        remember_old_and_new(mind, old=30)
        # the worker's work function, idle: compresses, but does not count it as work done
        # (the worker would loop on it, and a flush would wait for the whole backlog)
        assert mind.process_pending() == 0
        assert set(shapes(db).values()) == {"blob"}
        later = mind.remember(reply(500), role="user", session_id="s").id
        assert mind.process_pending() == 0  # the next idle pass waits its interval
        assert shapes(db)[later] == "text"
    assert shapes(db)[later] == "blob"  # close does not wait for the interval


def test_background_worker_compresses_when_idle(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    settings = {"enable_summary": True, "summary_mode": "background", "summarizer": "heuristic"}
    with Mind(db, compress_after="30d", **settings) as mind:
        # one transaction: the worker's first idle pass sees every old text (an idle pass
        # that caught up waits a minute before the next, so turns appended one by one
        # while it runs could wait for that)
        events = mind.remember_many(
            [NewEvent("prompt", reply(i), "s", "user", ts=OLD) for i in range(40)]
            + [NewEvent("prompt", reply(999), "s", "user")]
        )
        old, recent = [e.id for e in events[:-1]], events[-1].id
        assert mind.flush(30.0)
        seen = shapes(db)  # before close: the worker did it
        assert [seen[i] for i in old] == ["blob"] * len(old) and seen[recent] == "text"
        assert mind.pending_count() == 0 and mind.stats()["worker"]["failures"] == 0


def test_a_pass_stops_after_its_time_and_the_next_goes_on(tmp_path: Path) -> None:
    with EventStore(tmp_path / "pmm.db") as store:
        for i in range(50):
            store.append("prompt", reply(i), session_id="s", role="user")
        assert store.compress("0", batch=16, seconds=0).compressed == 16  # one batch, no more
        assert store.compress("0", batch=16).compressed == 34
        assert store.verify().ok and store.get(20).content == reply(19)


def test_passing_compression_never_waits_for_a_digest_in_flight(tmp_path: Path) -> None:
    """A digest in flight (an LLM call) holds the processing lock: close and the idle pass
    skip compressing rather than wait for it."""
    db = tmp_path / "pmm.db"
    with Mind(db, compress_after="0") as mind:
        remember_old_and_new(mind, old=30)
        with mind._processor.lock:  # as a digest in flight holds it
            assert mind._upkeep.compress_in_passing(seconds=1.0, idle=False) == 0
        assert set(shapes(db).values()) == {"text"}
    assert set(shapes(db).values()) == {"blob"}  # close compresses once the lock is free


def test_a_failing_idle_compression_is_reported_once_as_what_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "pmm.db"
    with Mind(db, compress_after="0") as mind:
        remember_old_and_new(mind, old=30)

        def broken(*args: object, **kwargs: object) -> object:
            raise OSError("disk I/O error")

        mind.store.compress = broken  # type: ignore[method-assign]
        with caplog.at_level(logging.WARNING, logger="pmm"):
            for _ in range(3):
                assert mind.process_pending() == 0
                mind._upkeep._next_idle_compress = 0.0
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert (
            "compressing old texts in the background failed (OSError: disk I/O error)"
            in (warnings[0])
        )
        assert "digest" not in warnings[0]
