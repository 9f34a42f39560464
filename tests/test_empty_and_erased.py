"""Empty turns are refused, erased turns are shown nowhere, and a message stored as linked
parts reads back whole (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmm import Mind, PMMChatMessageHistory
from pmm.errors import InvalidInputError
from pmm.records import NewEvent


@pytest.fixture
def mind(tmp_path: Path) -> Mind:
    with Mind(str(tmp_path / "pmm.db")) as mind:
        yield mind


def _erase_a_turn(mind: Mind) -> None:
    mind.remember_turn("I have a dog named Bolt", "Nice!", session_id="s")
    mind.remember_turn("My secret code is 4242", "Got it.", session_id="s")
    mind.remember_turn("What is my dog called?", "Bolt.", session_id="s")
    mind.forget(match="secret code", reason="asked")


def test_empty_and_blank_turns_are_refused_and_store_nothing(mind: Mind) -> None:
    for blank in ("", " ", "\n\t "):
        with pytest.raises(InvalidInputError, match="empty turn"):
            mind.remember(blank, role="assistant", session_id="s")
        with pytest.raises(InvalidInputError, match="entry 2 is an empty turn"):
            mind.remember_many(
                [
                    NewEvent("prompt", "hello", "s", "user"),
                    NewEvent("response", blank, "s", "assistant"),
                ]
            )
    assert mind.store.count() == 0
    mind.remember("a note", role="system", session_id="s")  # not a turn: any text goes


def test_an_erased_turn_leaves_no_empty_line_in_the_context(mind: Mind) -> None:
    _erase_a_turn(mind)
    text = mind.context("s").text()
    lines = text.splitlines()
    assert "Human: " not in lines and "Human:" not in lines
    assert "Human: What is my dog called?" in lines
    messages = mind.context("s", as_messages=True).messages()
    assert all(m.text.strip() for m in messages)
    assert len(messages) == 6  # the key facts, then the five turns left


def test_history_leaves_erased_turns_out_unless_asked(mind: Mind) -> None:
    _erase_a_turn(mind)
    lowered = [e.content.lower() for e in mind.history("s")]  # a caller's pattern
    assert lowered == [
        "i have a dog named bolt",
        "nice!",
        "got it.",
        "what is my dog called?",
        "bolt.",
    ]
    with_erased = mind.history("s", include_erased=True)
    assert [e.content is None for e in with_erased] == [False, False, True, False, False, False]
    history = PMMChatMessageHistory("s", mind=mind)
    assert [m.text for m in history.messages] == [
        "I have a dog named Bolt",
        "Nice!",
        "Got it.",
        "What is my dog called?",
        "Bolt.",
    ]


def test_linked_parts_read_back_whole_even_when_a_limit_cuts_them(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db"), max_content_bytes=1024) as mind:
        text = "é" * 1500 + "end"  # 3,003 bytes: three parts
        mind.remember_safely([NewEvent("prompt", text, "s", "user")], where="test")
        mind.remember("short reply", role="assistant", session_id="s")
        assert [e.content for e in mind.history("s")] == [text, "short reply"]
        cut = mind.history("s", limit=2)  # the newest part and the reply
        assert [e.content for e in cut] == [text, "short reply"]
        raw = mind.store.events(session_id="s")
        assert [e.meta.get("part") for e in raw] == [1, 2, 3, None]
        assert "".join(e.content or "" for e in raw[:3]) == text
        assert mind.verify().ok
        with pytest.raises(InvalidInputError, match="over the 1,024-byte"):
            mind.remember(text, role="user", session_id="s")  # the strict API refuses it


def test_context_over_a_linked_message_fits_the_budget(mind: Mind) -> None:
    """The newest part of a 2 MB message is cut to fit (counting only a prefix of it), and
    the next message shows whole."""
    big = "pasted log line\n" * 125_000
    mind.remember_safely([NewEvent("prompt", big, "s", "user")], where="test")
    context = mind.context("s", budget_tokens=300)
    assert context.tokens <= 300 and context.history[-1].text.endswith("…")
    assert big.endswith(context.history[-1].text[:-1][-200:]) or big.startswith(
        context.history[-1].text[:-1]
    )
    assert mind.counter.count(context.text()) <= 300
    mind.remember("I live in Porto.", role="user", session_id="s")
    after = mind.context("s", budget_tokens=300)
    assert after.facts == ["Lives in: Porto"] and after.history[-1].text == "I live in Porto."
