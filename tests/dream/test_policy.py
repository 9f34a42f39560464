"""The dream policy: remember/save_context never consolidates, should_dream thresholds,
dreaming on a clean `with` exit (a no-op while summaries are off), and the context's
rolling summary read from the log."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from consolidate_helpers import LONG, TURNS, deferred_mind, fill, summaries

from pmm import Mind, PersistentMindMemory
from pmm.dream.consolidation import SUMMARY_KIND


def test_remember_and_save_context_never_consolidate(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    memory = PersistentMindMemory(
        db_path=path, enable_summary=True, summary_mode="inline", summarizer="heuristic"
    )
    for user, ai in TURNS * 3:
        memory.save_context({"input": user}, {"output": ai})
    memory.load_memory_variables({"input": "canal"})
    with Mind(path, enable_summary=True, summary_mode="inline", summarizer="heuristic") as mind:
        fill(mind)
        assert mind.pending_count() == 0  # digested inline ...
        assert mind.store.count(kinds=(SUMMARY_KIND, "summary_created", "superseded")) == 0
        mind.settings = mind.settings.with_(dream_on_close=False)


def test_should_dream_follows_the_thresholds(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db", dream_threshold=10, dream_max_pending=8) as mind:
        assert not mind.should_dream
        fill(mind, TURNS[:3])  # 6 turns waiting for a digest
        assert not mind.should_dream
        fill(mind, TURNS[3:4])  # 8: dream_max_pending
        assert mind.should_dream
        mind.dream()
        assert not mind.should_dream  # digested and summarized
        fill(mind, TURNS * 2)  # 20 turns waiting: over dream_max_pending ...
        mind.settings = mind.settings.with_(dream_max_pending=1000)
        assert mind.should_dream  # ... and over dream_threshold
        mind.dream()
        assert not mind.should_dream


def test_should_dream_counts_turns_past_the_summary(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db", dream_threshold=4, dream_max_pending=1000) as mind:
        fill(mind)
        mind.dream()
        fill(mind, TURNS[:1])
        mind.dream()  # 2 new turns: a new version anyway (dream was called)
        mind.settings = mind.settings.with_(session_summaries=False)
        fill(mind, TURNS[:2])
        mind.dream()  # digests, no summary: 4 turns past it
        mind.settings = mind.settings.with_(session_summaries=True)
        assert mind.should_dream
        mind.settings = mind.settings.with_(dream_threshold=5)
        assert not mind.should_dream


def test_should_dream_is_false_while_summaries_and_embeddings_are_off(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "m.db"), dream_threshold=1, dream_max_pending=1) as mind:
        fill(mind)
        assert not mind.should_dream


def test_with_block_dreams_on_a_clean_exit(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with deferred_mind(path, dream_on_close=True) as mind:
        fill(mind)
        assert summaries(mind) == []
    with deferred_mind(path) as mind:
        assert mind.pending_count() == 0
        assert len(summaries(mind)) == 1


def test_no_dream_when_the_block_raises_or_dream_on_close_is_off(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    try:
        with deferred_mind(path, dream_on_close=True) as mind:
            fill(mind)
            raise KeyError("boom")
    except KeyError:
        pass
    with deferred_mind(path, dream_on_close=False) as mind:
        assert mind.pending_count() == 10
    with deferred_mind(path) as mind:
        assert mind.pending_count() == 10


def test_dream_on_close_is_a_no_op_with_summaries_off(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Mind(str(path)) as mind:  # the defaults: summaries and embeddings off
        fill(mind)
        head = mind.store.head()
    with Mind(str(path)) as mind:
        assert mind.store.head() == head
        assert mind.store.count() == 10


def test_a_failing_dream_on_close_warns_once_and_loses_nothing(tmp_path: Path, caplog: Any) -> None:
    from mind_helpers import BrokenDigester

    with deferred_mind(tmp_path / "m.db", dream_on_close=True, digester=BrokenDigester()) as m:
        fill(m)
    assert [r.getMessage() for r in caplog.records if "dream on close" in r.getMessage()]
    with deferred_mind(tmp_path / "m.db") as mind:
        assert mind.pending_count() == 10


# -- the rolling summary in the context ------------------------------------------------


def test_context_shows_the_stored_summary_for_turns_that_do_not_fit(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with deferred_mind(path) as mind:
        fill(mind, LONG)
        mind.dream()
    with deferred_mind(path) as mind:  # a new process: read from the log, not recomputed
        for budget in (60, 120, 200):
            ctx = mind.context("maya", budget_tokens=budget)
            assert mind.counter.count(ctx.text()) <= budget
            if budget >= 120:
                assert ctx.summary and "Earlier in this conversation:" in ctx.text()
                shown = " ".join(t.text for t in ctx.history)
                first_shown = min(int(w) for w in re.findall(r"Week (\d+)", shown))
                in_summary = [int(w) for w in re.findall(r"Week (\d+)", " ".join(ctx.summary))]
                assert 0 in in_summary and max(in_summary) < first_shown
        ctx = mind.context("maya", budget_tokens=200, as_messages=True)
        assert "Earlier in this conversation" in str(ctx.messages()[0].content)
        assert ctx.tokens <= 200
        everything = mind.context("maya", budget_tokens=5000)
        assert everything.summary == [] and len(everything.history) == 16


def test_load_memory_variables_uses_the_rolling_summary(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with deferred_mind(tmp_path / "m.db") as mind:
        fill(mind, LONG)
        mind.dream()
    memory = PersistentMindMemory(
        db_path=path,
        session_id="maya",
        enable_summary=True,
        summary_mode="deferred",
        max_tokens=150,
    )
    text = memory.load_memory_variables({"input": "hello"})["history"]
    assert "Earlier in this conversation:" in text and "Week 0" in text


def test_linked_turns_give_the_summary_and_its_best_turns(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        ids = fill(mind, LONG)
        mind.dream()
        first = mind.context("maya", "Roundhay park knee", budget_tokens=250, linked_turns=2)
        again = mind.context("maya", "Roundhay park knee", budget_tokens=250, linked_turns=2)
        assert first == again
        assert first.memories[0].event_id == ids[4]  # Week 2: Roundhay park
        assert 1 <= len(first.memories) <= 2 and first.summary  # the others are recent turns
        # everything fits: no summary, no memory (the turns are all shown as they are)
        whole = mind.context("maya", "Roundhay park knee", budget_tokens=2000, linked_turns=2)
        assert len(whole.history) == 16 and not whole.memories and not whole.summary


def test_pmm_dream_reports_summaries_and_contradictions(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    import json

    from pmm.cli import main

    monkeypatch.setenv("PMM_SUMMARIZER", "heuristic")
    path = tmp_path / "m.db"
    with Mind(str(path), dream_on_close=False) as mind:  # summaries off: nothing derived
        fill(mind)
        mind.remember("I live in Oslo.", role="user", session_id="maya")
        mind.remember("I moved to Bergen.", role="user", session_id="maya")
    assert main(["dream", "--db", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["digested"] == 12 and data["summaries"] == 1 and data["contradictions"] == 1
    assert data["llm_calls"] == 0 and data["dropped_bullets"] == 0
    assert main(["dream", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "wrote 0 session summaries" in out and "marked 0 statements superseded" in out
