"""Mind over every backend: the same calls, the same memory, after a restart too."""

from __future__ import annotations

from pmm import Mind
from pmm.testing.doubles import WordHashEmbedder
from pmm.testing.fixtures import *  # noqa: F403


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
    embedder = WordHashEmbedder()
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
