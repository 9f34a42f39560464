"""The context never shows one turn twice: a recent turn is not repeated as a relevant
memory, and the rolling summary's bullets stand only for turns left out of it (issue 22)."""

from __future__ import annotations

from pathlib import Path

from consolidate_helpers import LONG, deferred_mind, fill

from pmm.context.assembly import Turn, assemble
from pmm.context.tokens import get_token_counter
from pmm.dream.consolidation import current_summary, summary_bullets

SHORT = [
    ("I live in Oslo.", "Nice!"),
    ("I have a dog named Bolt.", "Cute!"),
    ("I work as a nurse.", "Great!"),
]


def test_linked_turns_show_a_short_session_once(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        fill(mind, SHORT, session="ana")
        mind.dream()
        ctx = mind.context("ana", query="Oslo", linked_turns=2)
        text = ctx.text()
        assert len(ctx.history) == 6 and not ctx.memories and not ctx.summary
        for user, ai in SHORT:
            assert text.count(user) == 1 and text.count(ai) == 1
        assert "Earlier in this conversation:" not in text
        assert "Relevant memories:" not in text


def test_bullets_and_memories_are_about_turns_left_out(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        ids = fill(mind, LONG)
        mind.dream()
        stored = current_summary(mind.store, "maya")
        assert stored is not None
        cites = {b.text: set(b.turns) for b in summary_bullets(stored)}
        for budget in (120, 150, 200, 250, 300):
            ctx = mind.context("maya", "Roundhay park knee", budget_tokens=budget, linked_turns=2)
            assert ctx.tokens <= budget and mind.counter.count(ctx.text()) <= budget
            shown = [t.event_id for t in ctx.history]
            remembered = [m.event_id for m in ctx.memories]
            assert not set(shown) & set(remembered), budget
            assert len(set(remembered)) == len(remembered) <= 2
            for bullet in ctx.summary:  # each cites a turn neither shown nor a memory
                left_out = cites[bullet] - set(shown) - set(remembered)
                assert any(i < min(shown) for i in left_out), (budget, bullet)
            for turn in ctx.history:
                assert ctx.text().count(turn.text) == 1 or turn.role == "assistant"
        assert ids[4] in remembered  # Roundhay park, not shown verbatim at 300 tokens


def test_assemble_drops_a_memory_that_is_a_shown_turn_and_takes_the_next() -> None:
    counter = get_token_counter()
    history = [Turn("user", f"turn number {i}", i) for i in range(10, 0, -1)]
    memories = [history[0], history[1], Turn("user", "far older turn", 0, "2026-01-01")]
    ctx = assemble(
        session_id="s",
        history=history,
        budget=200,
        counter=counter,
        memories=memories,
        memory_limit=1,
    )
    assert [m.event_id for m in ctx.memories] == [0]
    assert [t.event_id for t in ctx.history] == list(range(1, 11))
    assert counter.count(ctx.text()) <= ctx.tokens <= 200


def test_assemble_drops_bullets_about_shown_turns() -> None:
    counter = get_token_counter()
    history = [Turn("user", f"turn number {i}", i) for i in range(10, 0, -1)]
    summary = [("about the first turns", (1, 2)), ("about turn zero", (0, 5))]
    ctx = assemble(session_id="s", history=history, budget=200, counter=counter, summary=summary)
    assert len(ctx.history) == 10 and ctx.summary == ["about turn zero"]
    small = assemble(session_id="s", history=history, budget=60, counter=counter, summary=summary)
    assert small.summary and small.tokens <= 60 and len(small.history) < 10
    assert all(t.event_id > 2 for t in small.history)


def test_printing_a_context_shows_its_text(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        fill(mind, SHORT, session="ana")
        ctx = mind.context("ana", query="Oslo")
        assert str(ctx) == ctx.text() == f"{ctx}"
        assert str(ctx).endswith("Human: I work as a nurse.\nAI: Great!")
        assert "Context(" not in str(ctx) and repr(ctx).startswith("Context(")
