"""Mind over every backend: the published suite (:mod:`pmm.testing.conformance.mind`),
and how Mind picks one of PMM's backends: ``Mind("postgresql://...")`` and ``PMM_DB_URL``
pick PostgreSQL, a file path stays SQLite; PostgreSQL skips compression."""

from __future__ import annotations

import pytest

from pmm import Mind
from pmm.storage.postgres import PostgresEventStore
from pmm.storage.sqlite import EventStore
from pmm.testing.conformance.mind import *  # noqa: F403


def test_the_target_picks_the_backend(log_target: str, backend: str) -> None:
    with Mind(log_target, enable_summary=False) as mind:
        expected = EventStore if backend == "sqlite" else PostgresEventStore
        assert isinstance(mind.store, expected)


def test_pmm_db_url_wins_over_the_path(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMM_DB_URL", pg_url)
    with Mind("ignored.db") as mind:
        assert isinstance(mind.store, PostgresEventStore)


def test_compress_after_is_skipped_on_postgresql_without_raising(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL does not compress text: the passes of PMM_COMPRESS_AFTER that run without
    a dream (the idle worker, close) skip it; an explicit compress() still refuses."""
    from datetime import UTC, datetime, timedelta

    from pmm.errors import UnsupportedOperationError

    old = datetime.now(UTC) - timedelta(days=40)
    settings = {"enable_summary": True, "summary_mode": "background", "summarizer": "heuristic"}
    caplog.set_level("DEBUG", logger="pmm.dream.upkeep")
    mind = Mind(pg_url, compress_after="30d", **settings)
    for n in range(20):
        mind.remember(f"an old note about the garden, number {n}", role="user", ts=old)
    assert mind.flush(30.0) and mind.stats()["worker"]["failures"] == 0
    assert mind.process_pending() == 0
    with pytest.raises(UnsupportedOperationError):
        mind.compress()
    mind.close()
    skipped = [r for r in caplog.records if r.name == "pmm.dream.upkeep"]
    assert [r.levelname for r in skipped] == ["DEBUG"]  # noted once, no warning
    assert "does not compress text" in skipped[0].getMessage()
    with Mind(pg_url) as again:
        assert again.store.get(1).content == "an old note about the garden, number 0"
