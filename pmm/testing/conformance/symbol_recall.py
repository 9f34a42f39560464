"""Emoji-only turns are found alike on every backend: search_symbols scans text and
summary for symbols the full-text indexes drop, and Mind.recall uses it for a query
without a word (issue 22)."""

from __future__ import annotations

from pmm import Mind
from pmm.storage.base import EventLog
from pmm.testing.fixtures import *  # noqa: F403


def test_search_symbols_agrees_on_every_backend(log: EventLog) -> None:
    a = log.append("prompt", "🐶", session_id="ana", role="user")
    b = log.append("prompt", "Bolt 🐶🦴", session_id="ana", role="user")
    c = log.append("response", "☕ time", session_id="bo", role="assistant")
    log.append("prompt", "just words", session_id="ana", role="user")
    assert log.search_symbols(["🐶"]) == [(b.id, 1.0), (a.id, 1.0)]
    assert log.search_symbols(["🐶", "🦴"]) == [(b.id, 2.0), (a.id, 1.0)]
    assert log.search_symbols(["☕"], session_id="ana") == []
    assert log.search_symbols(["☕"], kinds=["prompt"]) == []
    assert log.search_symbols(["☕"], kinds=["response"]) == [(c.id, 1.0)]
    assert log.search_symbols(["🐶"], limit=1) == [(b.id, 1.0)]
    assert log.search_symbols([]) == [] and log.search_symbols(["🐈"]) == []
    log.forget(event_ids=[a.id], reason="asked")
    assert log.search_symbols(["🐶"]) == [(b.id, 1.0)]


def test_mind_recall_of_an_emoji(log_target: str) -> None:
    with Mind(log_target) as mind:
        dog = mind.remember("🐶", role="user", session_id="ana").id
        mind.remember("words only", role="user", session_id="ana")
        assert [h.event.id for h in mind.recall("🐶", 3)] == [dog]
        assert [h.event.id for h in mind.recall("🐶", 3, session_id="ana")] == [dog]
        assert mind.recall("🐶", 3, session_id="bo") == []
