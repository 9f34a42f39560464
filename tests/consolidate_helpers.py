"""Helpers of the consolidation tests (importable by the subprocesses they start)."""

from __future__ import annotations

from typing import Any


def dream_worker(path: str, barrier: Any, results: Any) -> None:
    """Open a Mind on ``path``, wait for the others, dream, and report what it wrote."""
    from pmm import Mind

    with Mind(
        path,
        enable_summary=True,
        summarizer="heuristic",
        summary_mode="deferred",
        dream_on_close=False,
    ) as mind:
        barrier.wait(timeout=60)
        report = mind.dream()
        results.put(report.summaries)
