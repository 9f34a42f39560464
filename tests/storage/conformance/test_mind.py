"""Mind over either backend: the same calls, the same memory. ``Mind("postgresql://...")``
and ``PMM_DB_URL`` pick PostgreSQL; a file path stays SQLite."""

from __future__ import annotations

import pytest

from pmm import Mind
from pmm.storage.postgres import PostgresEventStore
from pmm.storage.sqlite import EventStore


def test_the_target_picks_the_backend(log_target: str, backend: str) -> None:
    with Mind(log_target, enable_summary=False) as mind:
        expected = EventStore if backend == "sqlite" else PostgresEventStore
        assert isinstance(mind.store, expected)


def test_pmm_db_url_wins_over_the_path(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMM_DB_URL", pg_url)
    with Mind("ignored.db") as mind:
        assert isinstance(mind.store, PostgresEventStore)


def test_remember_dream_recall_and_context_alike(log_target: str) -> None:
    with Mind(
        log_target, enable_summary=True, summary_mode="deferred", summarizer="heuristic"
    ) as mind:
        mind.remember_turn(
            "Hi, my name is Alice and I moved to Lisbon in 2021.",
            "Welcome to Lisbon, Alice!",
            session_id="alice",
        )
        for n in range(12):
            mind.remember_turn(f"small talk {n}", f"sure {n}", session_id="alice")
        mind.remember_turn("My dog Rex hates the rain.", "Poor Rex!", session_id="bob")
        report = mind.dream()
        assert report.digested == 28
        hits = mind.recall("where did Alice move?", k=3, session_id="alice", mode="keyword")
        assert hits and "Lisbon" in (hits[0].event.content or "")
        text = mind.context("alice", query="Lisbon", budget_tokens=400).text()
        assert "Lisbon" in text and "Rex" not in text
        # 28 turns, then alice's session summary and its chained summary_created audit
        # (bob's session is too short to summarise)
        assert mind.verify().ok and mind.verify().rows == 30
        summary = mind.store.latest_summary("alice")
        assert summary is not None and len(mind.store.edges_from(summary.id, "SUMMARIZES")) == 26
        assert mind.store.latest_summary("bob") is None
    with Mind(log_target) as again:  # a restart sees the same memory
        assert again.store.count(session_id="alice", kinds=["prompt", "response"]) == 26


def test_semantic_and_hybrid_recall_with_vectors_in_the_log(log_target: str) -> None:
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "embed_conftest", Path(__file__).parents[2] / "embed" / "conftest.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("embed_conftest", module)
    spec.loader.exec_module(module)
    embedder = module.WordHashEmbedder()
    with Mind(
        log_target,
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        enable_embeddings=True,
        embedder=embedder,
    ) as mind:
        mind.remember("The violin lesson is on Thursday evening", role="user", session_id="s")
        mind.remember("I bought sourdough flour today", role="user", session_id="s")
        report = mind.dream()
        assert report.embedded == 2
        for mode in ("semantic", "hybrid"):
            hits = mind.recall("violin lesson Thursday", k=2, session_id="s", mode=mode)
            assert "violin" in (hits[0].event.content or ""), mode
        mind.store.redact(hits[0].event.id, reason="test")
        hits = mind.recall("violin lesson Thursday", k=2, session_id="s", mode="semantic")
        assert all("violin" not in (h.event.content or "") for h in hits)


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
