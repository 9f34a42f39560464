"""PMMChatMessageHistory with RunnableWithMessageHistory (LCEL)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from pmm import Mind, PMMChatMessageHistory


def test_lcel_chain_with_message_history(tmp_path: Path) -> None:
    db = str(tmp_path / "pmm.db")
    seen: list[list[Any]] = []

    class Recording(FakeListChatModel):
        def _call(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> str:
            seen.append(list(messages))
            return super()._call(messages, stop, run_manager, **kwargs)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are helpful."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    chain = prompt | Recording(responses=["Hi Ana!", "You are Ana.", "Hello Bob"])
    histories: dict[str, PMMChatMessageHistory] = {}

    def get_history(session_id: str) -> PMMChatMessageHistory:
        if session_id not in histories:
            histories[session_id] = PMMChatMessageHistory(session_id, db_path=db)
        return histories[session_id]

    with_memory = RunnableWithMessageHistory(
        chain, get_history, input_messages_key="input", history_messages_key="history"
    )
    with_memory.invoke({"input": "I'm Ana."}, config={"configurable": {"session_id": "a"}})
    out = with_memory.invoke({"input": "Who am I?"}, config={"configurable": {"session_id": "a"}})
    assert out.content == "You are Ana."
    assert [m.text for m in seen[1]] == ["You are helpful.", "I'm Ana.", "Hi Ana!", "Who am I?"]
    with_memory.invoke({"input": "I'm Bob."}, config={"configurable": {"session_id": "b"}})
    assert [m.text for m in seen[2]] == ["You are helpful.", "I'm Bob."]  # no leak from "a"
    assert [type(m) for m in histories["a"].messages] == [HumanMessage, AIMessage] * 2
    for history in histories.values():
        history.close()


def test_messages_round_trip_and_clear(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db")) as mind:
        history = PMMChatMessageHistory("s", mind=mind)
        history.add_messages(
            [
                SystemMessage("be brief"),
                HumanMessage("hi"),
                AIMessage("hello"),
                ToolMessage("42", tool_call_id="call-1"),
            ]
        )
        messages = history.messages
        assert [(m.type, m.text) for m in messages] == [
            ("system", "be brief"),
            ("human", "hi"),
            ("ai", "hello"),
            ("tool", "42"),
        ]
        assert isinstance(messages[3], ToolMessage) and messages[3].tool_call_id == "call-1"
        history.clear()
        assert history.messages == []
        assert mind.store.count() == 5 and mind.verify().ok


def test_budgeted_messages(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db")) as mind:
        history = PMMChatMessageHistory("s", mind=mind, max_token_limit=30)
        for i in range(30):
            history.add_user_message(f"user says {i}")
            history.add_ai_message(f"ai says {i}")
        messages = history.messages
        assert messages[-1].text == "ai says 29"
        assert len(messages) < 60


def test_async_api(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db")) as mind:
        history = PMMChatMessageHistory("s", mind=mind)

        async def run() -> list[Any]:
            await history.aadd_messages([HumanMessage("async"), AIMessage("yes")])
            return await history.aget_messages()

        assert [m.text for m in asyncio.run(run())] == ["async", "yes"]


def test_streamed_replies_are_stored(tmp_path: Path) -> None:
    """Streaming hands the history an AIMessageChunk: it must be stored like an AIMessage."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    db = str(tmp_path / "pmm.db")
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{input}")]
    )
    model = GenericFakeChatModel(messages=iter([AIMessage("streamed reply")]))
    with Mind(db) as mind:
        chain = RunnableWithMessageHistory(
            prompt | model,
            lambda session_id: PMMChatMessageHistory(session_id, mind=mind),
            input_messages_key="input",
            history_messages_key="history",
        )
        chunks = list(chain.stream({"input": "hi"}, config={"configurable": {"session_id": "s"}}))
        assert "".join(c.text for c in chunks) == "streamed reply"
        stored = [(e.role, e.content) for e in mind.store.events(session_id="s")]
        assert stored == [("user", "hi"), ("assistant", "streamed reply")]
