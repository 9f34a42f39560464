"""When to dream, and what dream's consolidation step runs ("learn fast, dream deep").

    from pmm.dream.policy import consolidate, should_dream, summary_backlog

    should_dream(store, settings, pending_digests=3, pending_vectors=0)   # -> bool
    summaries, contradictions, vectors = consolidate(store, settings, chat, embedder)

``remember``/``save_context`` never consolidate: only :meth:`pmm.Mind.dream` (and a clean
exit of ``with Mind(...)`` when ``dream_on_close`` is on) calls :func:`consolidate`. Nothing
here runs while summaries are off (``PMM_ENABLE_SUMMARY=0``), so dreaming on close is a no-op
for a default Mind.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from pmm.dream.consolidation import (
    Consolidator,
    SummaryReport,
    current_summary,
    redact_derived,
)
from pmm.dream.contradictions import ContradictionReport, find_contradictions

if TYPE_CHECKING:
    from pmm.embed.base import Embedder
    from pmm.settings import Settings
    from pmm.storage.base import EventLog

log = logging.getLogger(__name__)

TURN_KINDS = ("prompt", "response")


def summary_backlog(store: EventLog, settings: Settings) -> int:
    """Digested turns not yet covered by their session's summary (sessions that have at
    least ``session_summary_min_turns`` of them)."""
    if not (settings.enable_summary and settings.session_summaries):
        return 0
    waiting = 0
    for session, count, newest in store.summary_candidates(kinds=TURN_KINDS):
        if count < settings.session_summary_min_turns:
            continue
        current = current_summary(store, session)
        if current is None:
            waiting += count
        elif int(current.meta.get("covers_upto", 0)) < newest:
            covered = int(current.meta.get("turns", 0))
            waiting += count - covered if count > covered else count
    return waiting


def should_dream(
    store: EventLog, settings: Settings, *, pending_digests: int, pending_vectors: int
) -> bool:
    """``dream_max_pending`` turns wait for a digest or a vector, or ``dream_threshold``
    turns wait for a digest or their session summary."""
    if pending_digests + pending_vectors >= max(settings.dream_max_pending, 1):
        return True
    work = pending_digests + summary_backlog(store, settings)
    return work >= max(settings.dream_threshold, 1)


def consolidate(
    store: EventLog, settings: Settings, chat_model: Any, embedder: Embedder | None
) -> tuple[SummaryReport, ContradictionReport, int]:
    """Dream's consolidation step: erase what was derived from redacted turns, write
    session summaries (and embed them when they are recalled), mark contradictions.
    Returns the two reports and how many summary vectors were written."""
    summaries, contradictions, vectors = SummaryReport(), ContradictionReport(), 0
    if not settings.enable_summary:
        return summaries, contradictions, 0
    redact_derived(store)  # nothing derived outlives a redacted turn
    if settings.session_summaries:
        summaries = Consolidator(store, settings, chat_model).summarize_sessions()
        if embedder is not None and settings.recall_summaries:
            from pmm.embed.backfill import embed_pending

            vectors = embed_pending(store, embedder, kinds=("summary",))
    if settings.detect_contradictions:
        contradictions = find_contradictions(
            store, chat_model, embedder, similarity=settings.contradiction_similarity
        )
    return summaries, contradictions, vectors


def default_chat_model(settings: Settings) -> Any:
    """ChatOpenAI for consolidation when the summarizer is llm or auto and
    ``OPENAI_API_KEY`` is set, else None (heuristics). Raises PMMError when it cannot be
    built (e.g. langchain-openai missing)."""
    if settings.summarizer not in ("llm", "auto") or not os.environ.get("OPENAI_API_KEY"):
        return None
    from pmm.digest.llm import default_chat_model as chat_openai

    return chat_openai(settings.llm_model)
