"""PMMMiddleware in real create_agent graphs driven by fake chat models."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_helpers import assert_tool_pairs_intact, get_weather, thread, user, weather_round
from fake_models import fake_model, system_text
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from pmm import Mind
from pmm.integrations import PMMMiddleware
from pmm.integrations.agents import CONTEXT_HEADER


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "pmm.db")


def test_tool_round_is_stored_with_roles_and_links(db: str) -> None:
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(weather_round(), [get_weather], middleware=[memory])
    result = agent.invoke(user("I live in Lisbon. How is the weather?"), thread("t1"))
    human, call, tool_result, answer = result["messages"]
    events = memory.mind.history("t1")
    assert [(e.role, e.kind) for e in events] == [
        ("user", "prompt"),
        ("assistant", "response"),
        ("tool", "response"),
        ("assistant", "response"),
    ]
    assert [e.meta["message_id"] for e in events] == [
        m.id for m in (human, call, tool_result, answer)
    ]
    assert events[1].meta["tool_calls"] == [{"id": "call_1", "name": "get_weather"}]
    assert events[1].content == '[called get_weather({"city": "Lisbon"})]'
    assert events[2].meta["tool_call_id"] == "call_1"
    assert events[2].meta["ai_message_id"] == call.id
    assert events[2].content == "[get_weather] Sunny, 22C in Lisbon"
    assert memory.mind.verify().ok
    memory.close()


def test_tool_results_come_back_as_text_without_breaking_pairs(db: str) -> None:
    """A later run of the thread (no checkpointer: the state starts empty) sees the earlier
    tool round in the system message, and the message list keeps valid tool pairs."""
    model = weather_round("You said you live in Lisbon; it was sunny.")
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(model, [get_weather], middleware=[memory])
    agent.invoke(user("I live in Lisbon. How is the weather?"), thread("t1"))
    agent.invoke(user("What did the weather tool say?"), thread("t1"))
    last = model.prompts[-1]
    assert sum(isinstance(m, SystemMessage) for m in last) == 1
    text = system_text(last)
    assert text.startswith(CONTEXT_HEADER)
    assert "Tool: [get_weather] Sunny, 22C in Lisbon" in text
    assert 'AI: [called get_weather({"city": "Lisbon"})]' in text
    assert "- Lives in: Lisbon" in text  # a key fact
    for prompt in model.prompts:
        assert_tool_pairs_intact(prompt)
    memory.close()


def test_context_is_not_written_into_state_or_duplicated(db: str) -> None:
    model = weather_round("Second answer.", "Third answer.")
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(
        model,
        [get_weather],
        middleware=[memory],
        checkpointer=InMemorySaver(),
        system_prompt="You are terse.",
    )
    agent.invoke(user("My name is Ana. Weather?"), thread("t"))
    agent.invoke(user("Anything new?"), thread("t"))
    state = agent.invoke(user("And now?"), thread("t"))
    assert not any(isinstance(m, SystemMessage) for m in state["messages"])
    last = model.prompts[-1]
    assert [m.type for m in last].count("system") == 1
    text = system_text(last)
    assert text.startswith("You are terse.") and text.count(CONTEXT_HEADER) == 1
    # The turns are in the thread's messages: they are not repeated in the context.
    assert "Second answer." not in text
    assert "Name: Ana" in text or "My name is Ana" in text
    memory.close()


def test_exactly_once_with_a_checkpointer_and_repeated_ids(db: str) -> None:
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(
        weather_round("ok", "ok again"),
        [get_weather],
        middleware=[memory],
        checkpointer=InMemorySaver(),
    )
    agent.invoke(user("Weather?"), thread("t"))
    assert memory.mind.store.count(session_id="t") == 4
    agent.invoke(user("Thanks"), thread("t"))  # the state holds all 6 messages now
    assert memory.mind.store.count(session_id="t") == 6
    # Re-sending a message with an id already stored adds only the new AI reply.
    again = {
        "messages": [HumanMessage("Thanks", id=memory.mind.history("t")[4].meta["message_id"])]
    }
    agent.invoke(again, thread("t"))
    assert memory.mind.store.count(session_id="t") == 7
    ids = [e.meta["message_id"] for e in memory.mind.history("t")]
    assert len(ids) == len(set(ids))
    memory.close()


def test_interrupt_and_resume_store_each_message_once(db: str) -> None:
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(
        weather_round(),
        [get_weather],
        middleware=[memory],
        checkpointer=InMemorySaver(),
        interrupt_before=["tools"],
    )
    agent.invoke(user("Weather?"), thread("t"))
    assert memory.mind.store.count(session_id="t") == 0  # paused before the tool
    result = agent.invoke(None, thread("t"))
    assert result["messages"][-1].text == "It is sunny in Lisbon."
    assert [e.role for e in memory.mind.history("t")] == ["user", "assistant", "tool", "assistant"]
    agent.invoke(None, thread("t"))  # resuming a finished run stores nothing new
    assert memory.mind.store.count(session_id="t") == 4
    memory.close()


def test_two_threads_are_two_sessions_unless_mapped_to_a_user(db: str) -> None:
    model = fake_model("a", "b", "c", "d")
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(model, [], middleware=[memory])
    agent.invoke(user("My name is Ana."), thread("t1"))
    agent.invoke(user("Who am I?"), thread("t2"))
    assert CONTEXT_HEADER not in system_text(model.prompts[-1])
    per_user = PMMMiddleware(
        mind=memory.mind, session_id=lambda config: config["configurable"]["user_id"]
    )
    agent = create_agent(model, [], middleware=[per_user])
    cfg = {"configurable": {"thread_id": "t3", "user_id": "ana"}}
    agent.invoke(user("My name is Ana."), cfg)
    agent.invoke(user("Who am I?"), {"configurable": {"thread_id": "t4", "user_id": "ana"}})
    assert "My name is Ana." in system_text(model.prompts[-1])
    assert memory.mind.store.count(session_id="ana") == 4
    memory.close()


def test_fixed_session_id_and_token_limit(db: str) -> None:
    model = fake_model(*["fine"] * 4)
    memory = PMMMiddleware(db_path=db, session_id="pinned", max_token_limit=40)
    agent = create_agent(model, [], middleware=[memory])
    for text in ["I work at the harbour office near the river " * 3, "I like tea", "Hello"]:
        agent.invoke(user(text), thread("ignored"))
    assert memory.mind.store.count(session_id="pinned") == 6
    assert memory.mind.store.count(session_id="ignored") == 0
    text = system_text(model.prompts[-1])
    assert text and memory.mind.counter.count(text) <= 40
    memory.close()


def test_sqlite_checkpointer_and_a_restart_in_another_process(db: str, tmp_path: Path) -> None:
    checkpoints = str(tmp_path / "checkpoints.db")
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from agent_helpers import get_weather, thread, user, weather_round
        from langchain.agents import create_agent
        from langgraph.checkpoint.sqlite import SqliteSaver
        from pmm.integrations import PMMMiddleware

        memory = PMMMiddleware(db_path={db!r})
        with SqliteSaver.from_conn_string({checkpoints!r}) as saver:
            agent = create_agent(weather_round(), [get_weather], middleware=[memory],
                                 checkpointer=saver)
            agent.invoke(user("I live in Lisbon. Weather?"), thread("t"))
        memory.close()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    model = fake_model("Lisbon.", "Still Lisbon.")
    memory = PMMMiddleware(db_path=db)
    with SqliteSaver.from_conn_string(checkpoints) as saver:
        agent = create_agent(model, [get_weather], middleware=[memory], checkpointer=saver)
        state = agent.invoke(user("Where do I live?"), thread("t"))
        assert len(state["messages"]) == 6  # the checkpoint survived the restart
        assert memory.mind.store.count(session_id="t") == 6  # and nothing was stored twice
        assert "Lives in: Lisbon" in system_text(model.prompts[-1])  # key fact
        for prompt in model.prompts:
            assert_tool_pairs_intact(prompt)
    # A new thread of the same user, no checkpoint: everything comes from PMM.
    fresh = fake_model("You live in Lisbon.")
    agent = create_agent(
        fresh, [get_weather], middleware=[PMMMiddleware(mind=memory.mind, session_id="t")]
    )
    agent.invoke(user("Where do I live?"), thread("other"))
    text = system_text(fresh.prompts[-1])
    assert "Tool: [get_weather] Sunny, 22C in Lisbon" in text and "Human: Where do I live?" in text
    memory.close()


def test_async_invoke_and_astream(db: str) -> None:
    model = weather_round("Async answer.")
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(model, [get_weather], middleware=[memory], checkpointer=InMemorySaver())

    async def main() -> list[str]:
        await agent.ainvoke(user("I live in Lisbon. Weather?"), thread("a"))
        chunks = [
            chunk
            async for chunk, _ in agent.astream(
                user("Thanks!"), thread("a"), stream_mode="messages"
            )
        ]
        return [c.text for c in chunks]

    streamed = asyncio.run(main())
    assert "Async answer." in "".join(streamed)
    assert [e.role for e in memory.mind.history("a")] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert "Lives in: Lisbon" in system_text(model.prompts[-1])
    memory.close()


def test_sync_stream_stores_once(db: str) -> None:
    model = weather_round()
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(model, [get_weather], middleware=[memory])
    updates = list(agent.stream(user("Weather?"), thread("s"), stream_mode="updates"))
    assert any("PMMMiddleware.after_agent" in u for u in updates)
    assert [e.role for e in memory.mind.history("s")] == ["user", "assistant", "tool", "assistant"]
    memory.close()


def test_trimming_keeps_recent_messages_and_loses_nothing(db: str) -> None:
    model = weather_round("second", "third", "fourth")
    memory = PMMMiddleware(db_path=db, trim_to=2)
    agent = create_agent(model, [get_weather], middleware=[memory], checkpointer=InMemorySaver())
    agent.invoke(user("I live in Lisbon. Weather?"), thread("t"))
    state = agent.invoke(user("Second question"), thread("t"))
    assert [m.type for m in state["messages"]] == ["human", "ai"]
    assert state["messages"][0].text == "Second question"
    agent.invoke(user("Third question"), thread("t"))
    text = system_text(model.prompts[-1])
    assert "Tool: [get_weather] Sunny, 22C in Lisbon" in text  # trimmed, still remembered
    assert "Human: Second question" not in text  # still in the state: not repeated
    assert memory.mind.store.count(session_id="t") == 8
    for prompt in model.prompts:
        assert_tool_pairs_intact(prompt)
    memory.close()


def test_bad_arguments_raise_pmm_errors(db: str) -> None:
    from pmm.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="trim_to"):
        PMMMiddleware(db_path=db, trim_to=0)
    with Mind(db) as mind:
        bad = PMMMiddleware(mind=mind, session_id=lambda config: "")
        with pytest.raises(InvalidInputError, match="session_id callable"):
            bad.session_for({})


@pytest.mark.filterwarnings("error")
def test_no_deprecation_warnings_on_the_v1_path(db: str) -> None:
    model = weather_round("again")
    memory = PMMMiddleware(db_path=db)
    agent = create_agent(model, [get_weather], middleware=[memory], checkpointer=InMemorySaver())
    agent.invoke(user("Weather?"), thread("w"))
    list(agent.stream(user("And?"), thread("w"), stream_mode="messages"))
    memory.close()


def test_the_stored_session_summary_stands_in_for_turns_that_no_longer_fit(db: str) -> None:
    """Consolidation's rolling summary reaches the agent: when the thread's older turns do
    not fit the budget, the injected context carries the session summary's bullets."""
    from pmm.context.assembly import SUMMARY_HEADER

    mind = Mind(db, enable_summary=True, summary_mode="deferred", summarizer="heuristic")
    for n in range(8):
        mind.remember_turn(
            f"Day {n}: I trained for the Leeds half marathon along the canal, {5 + n} km at an "
            "easy pace after my night shift at the hospital, and my knee held up fine.",
            f"Great progress on day {n}; keep the long runs slow.",
            session_id="t1",
        )
    mind.dream()
    assert mind.store.latest_summary("t1") is not None
    model = fake_model("Keep going!")
    memory = PMMMiddleware(mind=mind, max_token_limit=220)
    agent = create_agent(model, [], middleware=[memory])
    agent.invoke(user("What should I cook tonight?"), thread("t1"))  # recalls no turn
    injected = system_text(model.prompts[0])
    assert SUMMARY_HEADER in injected and "Leeds" in injected
    assert injected.count("Day 0: I trained") == 1  # no turn shown twice
    assert memory.mind.counter.count(injected) <= 220
    mind.close()
