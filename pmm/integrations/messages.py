"""Converting between LangChain messages and PMM's (role, text) turns."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from pmm.errors import InvalidInputError

_ROLE_OF_CLASS: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"),
    (AIMessage, "assistant"),  # AIMessageChunk too: what streaming chains hand over
    (SystemMessage, "system"),
    (ToolMessage, "tool"),
)
_CHAT_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "system": "system",
    "tool": "tool",
}


def message_role(message: BaseMessage) -> str:
    """``user``, ``assistant``, ``system`` or ``tool`` for a LangChain message (chunks
    included; a ``ChatMessage`` by its ``role``)."""
    for cls, role in _ROLE_OF_CLASS:
        if isinstance(message, cls):
            return role
    if isinstance(message, ChatMessage) and message.role.lower() in _CHAT_ROLES:
        return _CHAT_ROLES[message.role.lower()]
    if not isinstance(message, BaseMessage):
        raise InvalidInputError(
            f"expected a LangChain message (HumanMessage, AIMessage, ...), got "
            f"{type(message).__name__}"
        )
    raise InvalidInputError(
        f"PMM stores human, ai, system and tool messages, not {message.type!r} ones"
    )


def message_text(value: Any) -> str:
    """The text of a chain input/output: a str as is, a message's text, else an error."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseMessage):
        return value.text
    raise InvalidInputError(
        f"PMM stores text turns; got {type(value).__name__}: pass a str or a message "
        "(set input_key/output_key to pick the right chain variable)"
    )


def to_message(role: str, text: str, meta: dict[str, Any] | None = None) -> BaseMessage:
    """A LangChain message for a stored turn."""
    if role == "user":
        return HumanMessage(content=text)
    if role == "assistant":
        return AIMessage(content=text)
    if role == "tool":
        return ToolMessage(content=text, tool_call_id=str((meta or {}).get("tool_call_id", "")))
    return SystemMessage(content=text)
