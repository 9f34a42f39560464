"""PMMStore: a LangGraph BaseStore over the PMM log."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import thread, user
from fake_models import fake_model
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from pmm.errors import InvalidInputError
from pmm.integrations import PMMStore
from pmm.integrations.langgraph import DELETE_KIND, PUT_KIND, namespace_session


def word_hash_embed(texts: list[str]) -> list[list[float]]:
    """A deterministic bag-of-words embedding (CRC-32 buckets) for offline tests."""
    vectors = []
    for text in texts:
        vector = [0.0] * 64
        for word in text.lower().replace(".", " ").replace(",", " ").split():
            vector[zlib.crc32(word.encode()) % 64] += 1.0
        vectors.append(vector)
    return vectors


@pytest.fixture
def store(tmp_path: Path) -> PMMStore:
    s = PMMStore(str(tmp_path / "pmm.db"))
    yield s
    s.close()


def test_put_get_update_delete_are_chained_events(store: PMMStore) -> None:
    store.put(("users", "ana"), "home", {"city": "Lisbon"})
    first = store.get(("users", "ana"), "home")
    assert first is not None and first.value == {"city": "Lisbon"}
    assert first.namespace == ("users", "ana") and first.key == "home"
    store.put(("users", "ana"), "home", {"city": "Porto"})
    second = store.get(("users", "ana"), "home")
    assert second is not None and second.value == {"city": "Porto"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    store.delete(("users", "ana"), "home")
    assert store.get(("users", "ana"), "home") is None
    store.delete(("users", "ana"), "home")  # deleting nothing appends nothing
    events = store.mind.store.events(session_id=namespace_session(("users", "ana")))
    assert [e.kind for e in events] == [PUT_KIND, PUT_KIND, DELETE_KIND]
    assert store.mind.verify().ok
    assert store.get(("users",), "home") is None  # namespaces are exact for get


def test_values_survive_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "pmm.db")
    with_slash = ("team/a", "notes")
    first = PMMStore(path)
    first.put(with_slash, "k", {"text": "kept"})
    first.close()
    again = PMMStore(path)
    item = again.get(with_slash, "k")
    assert item is not None and item.value == {"text": "kept"} and item.namespace == with_slash
    again.close()


def test_keyword_search_filter_limit_offset(store: PMMStore) -> None:
    store.put(("docs", "a"), "1", {"text": "the harbour opens at nine", "type": "fact"})
    store.put(("docs", "a"), "2", {"text": "Ana likes green tea", "type": "pref"})
    store.put(("docs", "b"), "3", {"text": "the harbour closes at six", "type": "fact"})
    store.put(("other",), "4", {"text": "harbour elsewhere", "type": "fact"})
    found = store.search(("docs",), query="harbour")
    assert {i.key for i in found} == {"1", "3"} and all(i.score is not None for i in found)
    assert [i.key for i in store.search(("docs",), query="green tea")] == ["2"]
    assert {i.key for i in store.search(("docs",), filter={"type": "fact"})} == {"1", "3"}
    assert [i.key for i in store.search(("docs", "a"), filter={"type": {"$ne": "fact"}})] == ["2"]
    assert len(store.search(("docs",), limit=1)) == 1
    assert [i.key for i in store.search(("docs",), limit=2, offset=1)] == ["2", "1"]
    store.delete(("docs", "a"), "1")
    assert [i.key for i in store.search(("docs",), query="harbour")] == ["3"]
    with pytest.raises(InvalidInputError, match="operator"):
        store.search(("docs",), filter={"type": {"$regex": "f"}})


def test_list_namespaces(store: PMMStore) -> None:
    for ns in [("a", "x", "1"), ("a", "y"), ("b", "x"), ("a", "xy")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "x", "1"), ("a", "xy"), ("a", "y"), ("b", "x")]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [
        ("a", "x"),
        ("a", "xy"),
        ("a", "y"),
    ]
    assert store.list_namespaces(suffix=("x",)) == [("b", "x")]
    assert store.list_namespaces(prefix=("a", "*")) == [("a", "x", "1"), ("a", "xy"), ("a", "y")]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "xy")]
    store.delete(("b", "x"), "k")
    assert ("b", "x") not in store.list_namespaces()


def test_semantic_and_hybrid_search_honour_the_index_config(tmp_path: Path) -> None:
    index: Any = {"embed": word_hash_embed, "dims": 64, "fields": ["text"]}
    store = PMMStore(str(tmp_path / "pmm.db"), index=index, mode="semantic")
    store.put(("m",), "tea", {"text": "Ana drinks green tea", "tag": "harbour"})
    store.put(("m",), "boat", {"text": "the boat leaves the harbour", "tag": "tea"})
    store.put(("m",), "quiet", {"text": "nothing relevant here"}, index=False)
    ranked = store.search(("m",), query="green tea")
    assert [i.key for i in ranked] == ["tea", "boat"]  # `tag` is not an indexed field
    assert ranked[0].score is not None and ranked[0].score > ranked[1].score  # cosine
    assert [i.key for i in store.search(("m",), query="harbour boat")][:1] == ["boat"]
    hybrid = PMMStore(mind=store.mind, index=index)
    assert hybrid.mode == "hybrid"
    assert hybrid.search(("m",), query="green tea")[0].key == "tea"
    with pytest.raises(InvalidInputError, match="index"):
        PMMStore(mind=store.mind, mode="semantic")
    store.close()


def test_async_forms(store: PMMStore) -> None:
    async def main() -> list[str]:
        await store.aput(("a",), "k", {"text": "async value"})
        item = await store.aget(("a",), "k")
        assert item is not None and item.value == {"text": "async value"}
        found = await store.asearch(("a",), query="async")
        await store.adelete(("a",), "k")
        assert await store.aget(("a",), "k") is None
        return [i.key for i in found]

    assert asyncio.run(main()) == ["k"]


def test_store_of_a_create_agent(store: PMMStore) -> None:
    @tool
    def save_fact(fact: str, runtime: ToolRuntime) -> str:
        """Save a fact about the user."""
        assert runtime.store is not None
        runtime.store.put(("facts",), "f1", {"text": fact})
        return "saved"

    @tool
    def find_fact(query: str, runtime: ToolRuntime) -> str:
        """Find facts about the user."""
        assert runtime.store is not None
        return "; ".join(i.value["text"] for i in runtime.store.search(("facts",), query=query))

    model = fake_model(
        AIMessage(
            "", tool_calls=[{"name": "save_fact", "args": {"fact": "Ana likes tea"}, "id": "c1"}]
        ),
        "Saved.",
        AIMessage("", tool_calls=[{"name": "find_fact", "args": {"query": "tea"}, "id": "c2"}]),
        "You like tea.",
    )
    agent = create_agent(model, [save_fact, find_fact], store=store)
    agent.invoke(user("Remember I like tea"), thread("1"))
    result = agent.invoke(user("What do I like?"), thread("2"))
    assert result["messages"][2].text == "Ana likes tea"
    assert store.get(("facts",), "f1") is not None


def test_store_of_a_compiled_state_graph(store: PMMStore) -> None:
    def remember(state: MessagesState, *, store: BaseStore) -> dict[str, Any]:
        last = state["messages"][-1].text
        count = len(store.search(("seen",)))
        store.put(("seen",), str(count), {"text": last})
        return {"messages": [AIMessage(f"seen {count + 1}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("remember", remember)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", END)
    app = graph.compile(store=store)
    app.invoke(user("one"))
    out = app.invoke(user("two"))
    assert out["messages"][-1].text == "seen 2"
    assert {i.value["text"] for i in store.search(("seen",))} == {"one", "two"}


def test_langmem_memory_tools(store: PMMStore) -> None:
    langmem = pytest.importorskip("langmem")
    manage = langmem.create_manage_memory_tool(namespace=("memories", "{user_id}"))
    search = langmem.create_search_memory_tool(namespace=("memories", "{user_id}"))
    model = fake_model(
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "manage_memory",
                    "id": "m1",
                    "args": {"content": "Ana prefers green tea", "action": "create"},
                }
            ],
        ),
        "Noted.",
        AIMessage("", tool_calls=[{"name": "search_memory", "id": "s1", "args": {"query": "tea"}}]),
        "You prefer green tea.",
    )
    agent = create_agent(model, [manage, search], store=store)
    config = {"configurable": {"thread_id": "1", "user_id": "ana"}}
    agent.invoke(user("I prefer green tea"), config)
    result = agent.invoke(
        user("What do I drink?"), {**config, "configurable": {"thread_id": "2", "user_id": "ana"}}
    )
    assert "Ana prefers green tea" in result["messages"][2].text
    [item] = store.search(("memories", "ana"))
    assert item.value["content"] == "Ana prefers green tea"
