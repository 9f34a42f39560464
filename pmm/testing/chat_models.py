"""Fake chat models for agent tests: LangChain's GenericFakeChatModel (which replays a list
of AI messages, tool calls included) that accepts tools and records every prompt it gets."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import Field


class RecordingFakeModel(GenericFakeChatModel):
    """Replays ``replies`` in order (cycling is an error) and keeps each prompt in
    ``prompts``."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingFakeModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        self.prompts.append(list(messages))
        # GenericFakeChatModel._stream calls _generate; don't record the prompt twice.
        result = GenericFakeChatModel._generate(self, messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        from langchain_core.messages import AIMessageChunk

        chunk = AIMessageChunk(
            content=message.content,
            id=message.id,
            tool_call_chunks=[
                {
                    "name": c["name"],
                    "args": __import__("json").dumps(c["args"]),
                    "id": c["id"],
                    "index": i,
                    "type": "tool_call_chunk",
                }
                for i, c in enumerate(getattr(message, "tool_calls", []))
            ],
        )
        yield ChatGenerationChunk(message=chunk)


def fake_model(*replies: AIMessage | str) -> RecordingFakeModel:
    messages = [AIMessage(content=r) if isinstance(r, str) else r for r in replies]
    return RecordingFakeModel(messages=iter(messages))


def system_text(prompt: list[BaseMessage]) -> str:
    """The system message of one recorded prompt ('' when there is none)."""
    return "\n".join(m.text for m in prompt if m.type == "system")
