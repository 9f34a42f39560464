"""What a message holds never breaks an agent thread (issue 22): an oversized message, a
huge tool result, NUL and lone surrogates are stored as well as they can be, with one
warning, and the thread keeps working. Real create_agent graphs with checkpointers."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from pathlib import Path

import pytest
from agent_helpers import thread, user
from fake_models import fake_model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import PutOp

from pmm import Mind, PersistentMindMemory, PMMChatMessageHistory
from pmm.errors import InvalidInputError
from pmm.integrations import PMMMiddleware, PMMStore

LIMIT = 1_048_576
BIG = "x" * 2_000_000  # the 2 MB paste


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "pmm.db")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "pmm"]


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_a_2mb_message_does_not_poison_the_thread(
    db: str, tmp_path: Path, saver: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory = PMMMiddleware(db_path=db)
    checkpointer = (
        InMemorySaver()
        if saver == "memory"
        else SqliteSaver(sqlite3.connect(tmp_path / "ck.db", check_same_thread=False))
    )
    model = fake_model("That is a big file.", "Porto is lovely.")
    agent = create_agent(model, [], middleware=[memory], checkpointer=checkpointer)
    with caplog.at_level(logging.WARNING, logger="pmm"):
        agent.invoke(user(BIG), thread("t"))
    [warning] = _warnings(caplog)
    assert "2,000,000 bytes" in warning.getMessage() and "2 linked parts" in warning.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pmm"):
        agent.invoke(user("I live in Porto."), thread("t"))
    assert _warnings(caplog) == []  # the big message is stored: nothing to say again
    history = memory.mind.history("t")
    assert [e.content for e in history] == [
        BIG,
        "That is a big file.",
        "I live in Porto.",
        "Porto is lovely.",
    ]
    assert history[0].content_sha256 == hashlib.sha256(BIG.encode()).hexdigest()
    parts = memory.mind.store.events(session_id="t", kinds=["prompt"])[:2]
    assert [(p.meta["part"], p.meta["parts"]) for p in parts] == [(1, 2), (2, 2)]
    assert parts[1].id == parts[0].id + 1
    assert all(len((p.content or "").encode()) <= LIMIT for p in parts)
    assert "Porto" in memory.mind.context("t", query="where do I live?").text()
    assert memory.mind.verify().ok
    memory.close()


def test_a_huge_tool_result_is_stored_with_the_rest_of_the_run(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    dump = "row;" * 900_000  # 3.6 MB

    @tool
    def read_table(name: str) -> str:
        """Read a whole table."""
        return dump

    call = {"name": "read_table", "args": {"name": "sales"}, "id": "call_1"}
    model = fake_model(
        AIMessage(content="", tool_calls=[call]), "The table is long.", "You are in Porto."
    )
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(model, [read_table], middleware=[memory], checkpointer=InMemorySaver())
    with caplog.at_level(logging.WARNING, logger="pmm"):
        agent.invoke(user("Read the sales table"), thread("t"))
        agent.invoke(user("I live in Porto."), thread("t"))
    assert len(_warnings(caplog)) == 1
    history = memory.mind.history("t")
    roles = ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert [e.role for e in history] == roles
    assert history[2].content == f"[read_table] {dump}"
    assert history[2].meta["tool_call_id"] == "call_1"
    assert history[4].content == "I live in Porto."
    memory.close()


def test_nul_and_lone_surrogates_are_stored_as_replacement_characters(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory = PMMMiddleware(db_path=db)
    model = fake_model("ok", "ok again")
    agent = create_agent(model, [], middleware=[memory], checkpointer=InMemorySaver())
    with caplog.at_level(logging.WARNING, logger="pmm"):
        agent.invoke(user("a\x00b \ud83d end"), thread("t"))
    assert len(_warnings(caplog)) == 1
    agent.invoke(user("I live in Porto."), thread("t"))
    history = memory.mind.history("t")
    assert history[0].content == "a\ufffdb \ufffd end" and history[0].meta["replaced"] == 2
    assert history[2].content == "I live in Porto."
    # the public Mind API refuses them clearly instead
    with pytest.raises(InvalidInputError, match="NUL"):
        memory.mind.remember("a\x00b", role="user", session_id="t")
    with pytest.raises(InvalidInputError, match="not valid Unicode"):
        memory.mind.remember("\ud83d", role="user", session_id="t")
    memory.close()


def test_an_empty_message_is_left_out_and_reported_once(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory = PMMMiddleware(db_path=db)
    model = fake_model("?", "Noted.")
    agent = create_agent(model, [], middleware=[memory], checkpointer=InMemorySaver())
    with caplog.at_level(logging.WARNING, logger="pmm"):
        agent.invoke(user("   "), thread("t"))
        agent.invoke(user("I live in Porto."), thread("t"))
    [warning] = _warnings(caplog)
    assert "empty" in warning.getMessage()
    assert [e.content for e in memory.mind.history("t")] == ["?", "I live in Porto.", "Noted."]
    memory.close()


def test_one_bad_message_in_a_batch_does_not_drop_the_others(db: str) -> None:
    memory = PMMMiddleware(db_path=db)
    messages = [
        HumanMessage("first", id="h1"),
        AIMessage("reply", id="a1"),
        HumanMessage("y" * (LIMIT + 10), id="h2"),
        HumanMessage("", id="h3"),
        ToolMessage("z\x00", tool_call_id="c1", id="t1"),
        HumanMessage("last", id="h4"),
    ]
    memory.remember_messages("s", messages)
    history = memory.mind.history("s", kinds=("prompt", "response"))
    assert [e.meta["message_id"] for e in history] == ["h1", "a1", "h2", "t1", "h4"]
    assert memory.mind.stored_message_ids("s", ["h1", "h2", "h3", "h4"]) == {"h1", "h2", "h4"}
    memory.remember_messages("s", messages)  # a re-run stores nothing twice
    assert len(memory.mind.store.events(session_id="s")) == 6  # h2 is two parts
    memory.close()


def test_save_context_stores_an_oversized_turn_and_skips_an_empty_reply(db: str) -> None:
    memory = PersistentMindMemory(db_path=db, session_id="s")
    memory.save_context({"input": BIG}, {"output": "got it"})
    memory.save_context({"input": "I live in Porto."}, {"output": "   "})
    assert [e.content for e in memory.pmm.history("s")] == [BIG, "got it", "I live in Porto."]
    memory.close()


def test_add_messages_keeps_the_good_messages_beside_a_bad_one(db: str) -> None:
    history = PMMChatMessageHistory("s", db)
    history.add_messages(
        [HumanMessage("hi"), AIMessage("\ud800"), HumanMessage(BIG), HumanMessage("")]
    )
    assert [m.text for m in history.messages] == ["hi", "\ufffd", BIG]
    history.close()


def test_store_batch_runs_every_good_put_beside_a_refused_one(db: str) -> None:
    store = PMMStore(db)
    with pytest.raises(InvalidInputError, match="1 put"):
        store.batch(
            [
                PutOp(("u",), "a", {"city": "Lisbon"}),
                PutOp(("u",), "big", {"blob": "b" * (LIMIT + 1)}),
                PutOp(("u",), "c", {"city": "Porto"}),
            ]
        )
    assert store.get(("u",), "a").value == {"city": "Lisbon"}  # type: ignore[union-attr]
    assert store.get(("u",), "c").value == {"city": "Porto"}  # type: ignore[union-attr]
    assert store.get(("u",), "big") is None
    store.close()


def test_mind_refuses_empty_turns(db: str) -> None:
    with Mind(db) as mind:
        for bad in ("", "  \n\t"):
            with pytest.raises(InvalidInputError, match="empty turn"):
                mind.remember(bad, role="user", session_id="s")
            with pytest.raises(InvalidInputError, match="empty turn"):
                mind.remember_turn("hello", bad, session_id="s")
        assert mind.store.count(session_id="s") == 0  # remember_turn stored neither half
