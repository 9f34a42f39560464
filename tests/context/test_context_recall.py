"""Relevant memories in the context: older turns matching the input, in budget, no repeats."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmm import Mind, PersistentMindMemory
from pmm.errors import InvalidInputError

FILLER = "We chatted about the weather, the news and what to cook for dinner tonight. " * 3


def fill(mind: Mind, session: str, n: int) -> None:
    for i in range(n):
        mind.remember_turn(f"Small talk {i}. {FILLER}", f"Sure {i}. {FILLER}", session_id=session)


def test_older_relevant_turns_come_back(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db"), max_tokens=600) as mind:
        mind.remember_turn(
            "My passport number ends in 4471 and expires in March 2027.", "Noted.", session_id="s"
        )
        fill(mind, "s", 30)
        without = mind.context("s")
        assert "4471" not in without.text()  # too old for the recent window
        ctx = mind.context("s", query="when does my passport expire?")
        assert [m.text for m in ctx.memories][:1] == [
            "My passport number ends in 4471 and expires in March 2027."
        ]
        assert "Relevant memories:\n[" in ctx.text()  # under a header of its day and thread
        assert mind.counter.count(ctx.text()) <= 600
        shown = {t.event_id for t in ctx.history}
        assert not shown & {m.event_id for m in ctx.memories}  # no turn twice


def test_turns_in_the_window_are_not_repeated(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db")) as mind:
        mind.remember_turn("I love sailing in Croatia.", "Nice!", session_id="s")
        ctx = mind.context("s", query="sailing")
        assert ctx.memories == []
        assert ctx.text().count("Human: I love sailing in Croatia.") == 1


def test_scope_all_brings_other_sessions(tmp_path: Path) -> None:
    path = str(tmp_path / "pmm.db")
    with Mind(path, max_tokens=600) as mind:
        mind.remember_turn(
            "The wifi password at the cabin is larch-42.", "Saved.", session_id="old-chat"
        )
        fill(mind, "s", 3)
        assert mind.context("s", query="cabin wifi password").memories == []
    with Mind(path, max_tokens=600, recall_scope="all") as mind:
        ctx = mind.context("s", query="cabin wifi password")
        assert ctx.memories[0].session_id == "old-chat"
        assert "thread 1]\nHuman: The wifi password at the cabin is larch-42." in ctx.text()
        assert "old-chat" not in ctx.text()  # a thread is labelled, its id stays out


def test_turns_before_a_clear_are_not_recalled(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db"), max_tokens=400) as mind:
        mind.remember_turn("My locker code is 9912.", "Got it.", session_id="s")
        mind.clear("s")
        fill(mind, "s", 20)
        assert mind.context("s", query="locker code").memories == []


def test_memory_variables_include_memories(tmp_path: Path) -> None:
    memory = PersistentMindMemory(
        db_path=str(tmp_path / "pmm.db"), session_id="s", max_token_limit=500
    )
    memory.save_context({"input": "My sister Joana lives in Porto."}, {"output": "Nice."})
    for i in range(25):
        memory.save_context({"input": f"Q{i}. {FILLER}"}, {"output": f"A{i}. {FILLER}"})
    history = memory.load_memory_variables({"input": "Where does Joana live?"})["history"]
    assert "Relevant memories:" in history and "Joana lives in Porto" in history
    memory.close()


def test_recall_k_zero_turns_memories_off(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db"), max_tokens=400, recall_k=0) as mind:
        mind.remember_turn("My locker code is 9912.", "Got it.", session_id="s")
        fill(mind, "s", 20)
        assert mind.context("s", query="locker code").memories == []


@pytest.mark.parametrize("budget", ["100", 1.5, True])
def test_a_budget_that_is_no_whole_number_is_refused(tmp_path: Path, budget: object) -> None:
    with Mind(str(tmp_path / "pmm.db")) as mind:
        mind.remember_turn("hello", "hi", session_id="s")
        with pytest.raises(InvalidInputError, match="budget_tokens must be a whole number"):
            mind.context("s", budget_tokens=budget)  # type: ignore[arg-type]


def test_a_long_thread_id_costs_no_memory(tmp_path: Path) -> None:
    """Memories are labelled by a short thread label: a 5,000-character thread id neither
    reaches the prompt nor crowds memories out."""
    long_id = "t" * 5000
    with Mind(str(tmp_path / "pmm.db")) as mind:
        mind.remember_turn("My locker code is 9912.", "Got it.", session_id=long_id, user_id="u")
        mind.remember_turn("Hello again.", "Hi.", session_id="now", user_id="u")
        ctx = mind.context("now", query="locker code", budget_tokens=200, user_id="u")
    assert "9912" in ctx.text() and long_id not in ctx.text()


def test_a_long_user_id_keeps_her_cross_thread_memories(tmp_path: Path) -> None:
    """A 5,000-character user id (and threads named after it) neither reaches the prompt
    nor crowds her memories out of it."""
    user = "u" * 5000
    with Mind(str(tmp_path / "pmm.db")) as mind:
        mind.remember_turn(
            "My locker code is 9912.", "Got it.", session_id=user + "-gym", user_id=user
        )
        mind.remember_turn("Hello again.", "Hi.", session_id=user + "-now", user_id=user)
        ctx = mind.context(user + "-now", query="locker code", budget_tokens=200, user_id=user)
    assert "9912" in ctx.text() and user not in ctx.text() and ctx.tokens <= 200
