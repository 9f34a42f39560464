"""The LangChain v1 pieces over either backend: PMMStore's key/value view and the
middleware's exactly-once message ids read the log through the same protocol calls."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")

from pmm import Mind
from pmm.integrations import PMMStore
from pmm.testing.fixtures import *  # noqa: F403


def test_pmmstore_put_get_search_delete_alike(log_target: str) -> None:
    store = PMMStore(log_target)
    try:
        store.put(("users", "alice"), "home", {"city": "Lisbon"})
        store.put(("users", "alice"), "home", {"city": "Porto"})
        store.put(("users", "alice"), "pet", {"text": "a grey cat called Pixel"})
        store.put(("users", "bob"), "home", {"city": "Oslo"})
        item = store.get(("users", "alice"), "home")
        assert item is not None and item.value == {"city": "Porto"}
        hits = store.search(("users", "alice"), query="Pixel cat", limit=5)
        assert [h.key for h in hits][:1] == ["pet"]
        assert {tuple(ns) for ns in store.list_namespaces(prefix=("users",))} == {
            ("users", "alice"),
            ("users", "bob"),
        }
        store.delete(("users", "alice"), "home")
        assert store.get(("users", "alice"), "home") is None
    finally:
        store.close()
    with Mind(log_target) as mind:  # every put and delete is a chained event
        report = mind.verify()
        assert report.ok and report.rows == 5


def test_stored_message_ids_alike(log_target: str) -> None:
    with Mind(log_target) as mind:
        mind.remember("hi", role="user", session_id="t1", meta={"message_id": "m1"})
        mind.remember("hello", role="assistant", session_id="t1", meta={"message_id": "m2"})
        mind.remember("other", role="user", session_id="t2", meta={"message_id": "m3"})
        assert mind.stored_message_ids("t1", ["m1", "m2", "m3", "m4"]) == {"m1", "m2"}


def test_bad_messages_in_an_agent_thread_alike(log_target: str) -> None:
    """Issue 22 on both backends: a 2 MB message and a NUL are stored (linked parts,
    U+FFFD), the empty one is left out, and a later message on the thread is remembered."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from pmm.integrations import PMMMiddleware

    big = "y" * 2_000_000
    model = GenericFakeChatModel(messages=iter([AIMessage("a"), AIMessage("b"), AIMessage("c")]))
    memory = PMMMiddleware(log_target)
    agent = create_agent(model, [], middleware=[memory], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    try:
        for text in (big, "nul\x00here", "I live in Porto."):
            agent.invoke({"messages": [{"role": "user", "content": text}]}, config)  # type: ignore[call-overload]
        texts = [e.content for e in memory.mind.history("t")]
        assert texts == [big, "a", "nul\ufffdhere", "b", "I live in Porto.", "c"]
        parts = memory.mind.store.events(session_id="t", kinds=["prompt"])[:2]
        assert [p.meta["part"] for p in parts] == [1, 2] and parts[1].id == parts[0].id + 1
        assert memory.mind.verify().ok
    finally:
        memory.close()


def test_erased_turns_leave_history_and_context_alike(log_target: str) -> None:
    with Mind(log_target) as mind:
        mind.remember_turn("I have a dog named Bolt", "Nice!", session_id="s")
        mind.remember_turn("My secret code is 4242", "Got it.", session_id="s")
        mind.forget(match="secret code", reason="asked")
        assert [e.content.lower() for e in mind.history("s")] == [  # type: ignore[union-attr]
            "i have a dog named bolt",
            "nice!",
            "got it.",
        ]
        assert "Human: \n" not in mind.context("s").text() + "\n"
