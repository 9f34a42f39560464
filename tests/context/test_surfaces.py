"""One assembly behind every surface a model reads: ``Mind.context``, the v1 middleware's
system message, ``load_memory_variables`` and the REPL's ``/memory``. Each shows the turn
that answers the question, said in an older thread of the same user, where a plain buffer
of the same budget (her newest turns) does not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from pmm import Mind, PersistentMindMemory
from pmm.chat.offline import OfflineResponder
from pmm.chat.repl import Chat
from pmm.integrations import PMMMiddleware

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations"))
from fake_models import fake_model, system_text

EVIDENCE = "My gym locker code is 7391, on the second floor."
QUESTION = "What is my gym locker code?"
FILLER = "We talked about the weather, the news and what to cook for dinner tonight."
BUDGET = 400


def stored(path: Path) -> None:
    """Alice's old thread holds the evidence; her current thread is long filler."""
    with Mind(str(path)) as mind:
        mind.remember_turn(EVIDENCE, "Noted.", session_id="gym", user_id="alice")
        for i in range(40):
            mind.remember_turn(
                f"{i}. {FILLER}", f"Sure. {FILLER}", session_id="now", user_id="alice"
            )


def buffer_text(path: Path) -> str:
    """A naive buffer: the current thread's newest turns that fit the budget."""
    with Mind(str(path)) as mind:
        lines: list[str] = []
        for event in reversed(mind.history("now", user_id="alice")):
            line = f"{event.role}: {event.content}"
            if mind.counter.count("\n".join([line, *lines])) > BUDGET:
                break
            lines.insert(0, line)
        return "\n".join(lines)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "pmm.db"
    stored(path)
    assert "7391" not in buffer_text(path)
    return path


def test_mind_context_shows_the_evidence(db: Path) -> None:
    with Mind(str(db)) as mind:
        ctx = mind.context("now", query=QUESTION, budget_tokens=BUDGET, user_id="alice")
    assert "7391" in ctx.text() and ctx.tokens <= BUDGET


def test_the_middleware_system_message_shows_the_evidence(db: Path) -> None:
    model = fake_model("It is 7391.")
    memory = PMMMiddleware(db_path=str(db), max_token_limit=BUDGET)
    agent = create_agent(model, [], middleware=[memory], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "now", "user_id": "alice"}}
    agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config)
    assert "7391" in system_text(model.prompts[-1])
    memory.close()


def test_the_middleware_spends_the_state_turns_budget_on_memories(db: Path) -> None:
    """With a checkpointer the thread's turns are in the state: the context leaves them
    out and its budget goes to the rest, up to the limit."""
    model = fake_model("Noted.", "Fine.", "It is 7391.")
    memory = PMMMiddleware(db_path=str(db), max_token_limit=BUDGET)
    agent = create_agent(model, [], middleware=[memory], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "later", "user_id": "alice"}}
    for text in (f"Hello. {FILLER}", f"Again. {FILLER}", QUESTION):
        agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
    text = system_text(model.prompts[-1])
    assert "7391" in text
    assert "Hello." not in text  # in the state: not repeated
    assert memory.mind.counter.count(text) <= BUDGET
    memory.close()


def test_load_memory_variables_shows_the_evidence(db: Path) -> None:
    memory = PersistentMindMemory(
        db_path=str(db), session_id="now", user_id="alice", max_token_limit=BUDGET
    )
    history = memory.load_memory_variables({"input": QUESTION})["history"]
    assert "7391" in history
    memory.close()


def test_the_repl_memory_command_shows_the_evidence(db: Path) -> None:
    out: list[str] = []
    with Mind(str(db), max_tokens=BUDGET) as mind:
        chat = Chat(mind, "now", OfflineResponder(), write=out.append, user="alice")
        chat.handle(f"/memory {QUESTION}")
        chat.handle("/memory")
    with_query, without = out
    assert "7391" in with_query
    assert "7391" not in without  # no question: no memories, the recent turns
