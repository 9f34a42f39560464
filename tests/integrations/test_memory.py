"""PersistentMindMemory in real LangChain chains (fake chat models and a local OpenAI server)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from pmm import PersistentMindMemory
from pmm.errors import InvalidInputError

warnings.filterwarnings("ignore", category=DeprecationWarning)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def conversation_chain(memory: PersistentMindMemory, replies: list[str]) -> Any:
    from langchain_classic.chains import ConversationChain

    return ConversationChain(llm=FakeListChatModel(responses=replies), memory=memory)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "pmm.db")


def test_conversation_chain_saves_roles_and_loads_history(db: str) -> None:
    memory = PersistentMindMemory(db_path=db, session_id="alice")
    chain = conversation_chain(memory, ["Nice to meet you, Ana!", "You live in Lisbon."])
    chain.invoke({"input": "Hi, my name is Ana and I live in Lisbon."})
    result = chain.invoke({"input": "Where do I live?"})
    assert result["response"] == "You live in Lisbon."
    events = memory.pmm.store.events(session_id="alice")
    assert [(e.kind, e.role) for e in events] == [
        ("prompt", "user"),
        ("response", "assistant"),
        ("prompt", "user"),
        ("response", "assistant"),
    ]
    assert events[0].content == "Hi, my name is Ana and I live in Lisbon."
    history = memory.load_memory_variables({"input": "next"})["history"]
    assert history.startswith("Key information:\n- Name: Ana\n- Lives in: Lisbon")
    assert history.endswith("Human: Where do I live?\nAI: You live in Lisbon.")
    assert memory.pmm.verify().ok
    memory.close()


def test_the_prompt_the_model_sees_contains_the_memory(db: str) -> None:
    memory = PersistentMindMemory(db_path=db, session_id="s")
    model = FakeListChatModel(responses=["first", "second"])
    from langchain_classic.chains import ConversationChain

    seen: list[str] = []

    class Recording(FakeListChatModel):
        def _call(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> str:
            seen.append("\n".join(m.text for m in messages))
            return super()._call(messages, stop, run_manager, **kwargs)

    model = Recording(responses=["first", "second"])
    chain = ConversationChain(llm=model, memory=memory)
    chain.invoke({"input": "My favourite colour is teal."})
    chain.invoke({"input": "What colour do I like?"})
    assert "Human: My favourite colour is teal." in seen[1]
    assert "AI: first" in seen[1]
    memory.close()


def test_return_messages_and_budget(db: str) -> None:
    memory = PersistentMindMemory(
        db_path=db, session_id="s", return_messages=True, max_token_limit=60
    )
    for i in range(20):
        memory.save_context({"input": f"message {i} " + "x " * 10}, {"output": f"reply {i}"})
    messages = memory.load_memory_variables({"input": "hi"})["history"]
    assert isinstance(messages[-1], AIMessage) and messages[-1].text == "reply 19"
    assert all(isinstance(m, (HumanMessage, AIMessage, SystemMessage)) for m in messages)
    count = memory.pmm.counter.count
    assert sum(count(m.text) + 4 for m in messages) <= 60
    memory.close()


def test_two_sessions_in_one_file_never_mix(db: str) -> None:
    a = PersistentMindMemory(db_path=db, session_id="a")
    b = PersistentMindMemory(db_path=db, session_id="b")
    a.save_context({"input": "secret of a"}, {"output": "ok a"})
    b.save_context({"input": "secret of b"}, {"output": "ok b"})
    assert "secret of b" not in a.load_memory_variables({"input": "secret"})["history"]
    assert "secret of a" not in b.load_memory_variables({"input": "secret"})["history"]
    a.close()
    b.close()


def test_clear_records_a_marker(db: str) -> None:
    memory = PersistentMindMemory(db_path=db, session_id="s")
    memory.save_context({"input": "My name is Zed."}, {"output": "Hi Zed"})
    memory.clear()
    assert memory.load_memory_variables({"input": "?"}) == {"history": ""}
    assert memory.pmm.store.count() == 3
    memory.close()


def test_input_and_output_key_detection(db: str) -> None:
    memory = PersistentMindMemory(db_path=db, session_id="s")
    memory.save_context({"question": "q1", "history": "ignored"}, {"answer": "a1"})
    assert memory.load_memory_variables({})["history"] == "Human: q1\nAI: a1"
    with pytest.raises(InvalidInputError, match="set input_key"):
        memory.save_context({"a": "1", "b": "2"}, {"output": "x"})
    with pytest.raises(InvalidInputError, match="set output_key"):
        memory.save_context({"input": "1"}, {"x": "1", "y": "2"})
    keyed = PersistentMindMemory(db_path=db, session_id="t", input_key="b", output_key="y")
    keyed.save_context({"a": "1", "b": "2"}, {"x": "1", "y": "2"})
    assert keyed.load_memory_variables({})["history"] == "Human: 2\nAI: 2"
    assert memory.pmm.store.count() == 4
    memory.close()
    keyed.close()


def test_settings_pass_through_as_keywords(db: str) -> None:
    memory = PersistentMindMemory(
        db_path=db, enable_summary=True, summary_mode="deferred", summarizer="heuristic"
    )
    assert memory.settings == {
        "enable_summary": True,
        "summary_mode": "deferred",
        "summarizer": "heuristic",
    }
    assert memory.pmm.settings.summary_mode == "deferred"
    memory.close()


def test_async_variants(db: str) -> None:
    memory = PersistentMindMemory(db_path=db, session_id="s")

    async def run() -> dict[str, Any]:
        await memory.asave_context({"input": "async hello"}, {"output": "async hi"})
        loaded = await memory.aload_memory_variables({"input": "x"})
        await memory.aclear()
        return loaded

    loaded = asyncio.run(run())
    assert loaded["history"] == "Human: async hello\nAI: async hi"
    assert memory.load_memory_variables({"input": "x"})["history"] == ""
    memory.close()


def test_restart_in_a_new_process_recalls_the_name(db: str) -> None:
    script = textwrap.dedent(
        """
        import sys, warnings
        warnings.simplefilter("ignore")
        from langchain_classic.chains import ConversationChain
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from pmm import PersistentMindMemory
        memory = PersistentMindMemory(db_path=sys.argv[1], session_id="alice")
        chain = ConversationChain(llm=FakeListChatModel(responses=[sys.argv[3]]), memory=memory)
        chain.invoke({"input": sys.argv[2]})
        print(memory.load_memory_variables({"input": "who am I?"})["history"])
        memory.close()
        """
    )
    first = subprocess.run(
        [sys.executable, "-c", script, db, "Hi, my name is Priya.", "Hello!"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Priya" in first.stdout
    second = subprocess.run(
        [sys.executable, "-c", script, db, "What's my name?", "Priya."],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Name: Priya" in second.stdout
    assert "Human: Hi, my name is Priya." in second.stdout


def test_chat_openai_against_a_local_server(db: str) -> None:
    from langchain_classic.chains import ConversationChain
    from langchain_openai import ChatOpenAI

    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        server.reply_text("Nice to meet you, Mei.").reply_text("You are Mei.")
        llm = ChatOpenAI(
            base_url=server.base_url + "/v1", api_key="test", model="gpt-4o-mini", max_retries=0
        )
        memory = PersistentMindMemory(db_path=db, session_id="mei")
        chain = ConversationChain(llm=llm, memory=memory)
        chain.invoke({"input": "Hi, my name is Mei."})
        result = chain.invoke({"input": "What is my name?"})
        assert result["response"] == "You are Mei."
        assert len(server.requests) == 2
        prompt = server.requests[1].text
        assert "Human: Hi, my name is Mei." in prompt
        assert "AI: Nice to meet you, Mei." in prompt
        assert "Name: Mei" in prompt
        memory.close()


def test_misspelt_or_bad_settings_fail_at_construction(db: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="enable_sumary"):
        PersistentMindMemory(db_path=db, enable_sumary=True)
    with pytest.raises(ValidationError, match="summary_mode='bogus' is not valid"):
        PersistentMindMemory(db_path=db, summary_mode="bogus")
