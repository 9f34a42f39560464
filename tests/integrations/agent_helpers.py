"""A tool, scripted replies and checks shared by the agent tests."""

from __future__ import annotations

from typing import Any

from fake_models import RecordingFakeModel, fake_model
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny, 22C in {city}"


def weather_round(*more: str) -> RecordingFakeModel:
    """A model that calls get_weather(Lisbon), then answers, then says ``more``."""
    call = {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "call_1"}
    return fake_model(AIMessage(content="", tool_calls=[call]), "It is sunny in Lisbon.", *more)


def user(text: str, **kwargs: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text, **kwargs}]}


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def assert_tool_pairs_intact(prompt: list[BaseMessage]) -> None:
    """Every tool message answers a tool call of an earlier AI message in the prompt."""
    asked: set[str] = set()
    for message in prompt:
        if isinstance(message, AIMessage):
            asked.update(str(c["id"]) for c in message.tool_calls)
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in asked, f"orphan tool message {message.tool_call_id}"
