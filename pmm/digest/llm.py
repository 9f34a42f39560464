"""The LLM digest: one chat-model call per batch of turns returns every summary and its
keywords together, through structured output.

    digester = LLMDigester()                    # ChatOpenAI(PMM_LLM_MODEL); OPENAI_API_KEY
    digester = LLMDigester(my_chat_model)       # any LangChain BaseChatModel
    digester.digest_many(["I moved to Lisbon in 2021 ..."], roles=["user"])
    # [Digest('The user moved to Lisbon in 2021 ...', ['Lisbon', '2021'], 'llm')]

Models that support ``with_structured_output`` get a JSON schema; the others are asked for
JSON in the prompt and their reply is parsed. A reply that does not validate (not JSON, a
missing or empty summary, keywords that are not strings, the wrong number of turns) is asked
again ``retries`` times, then :class:`~pmm.errors.BackendError` is raised: malformed output is
never returned as a summary.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from pmm.digest.base import Digest
from pmm.errors import BackendError, MissingDependencyError
from pmm.events.roles import normalize_role, roles_for
from pmm.models.llm_json import json_object
from pmm.models.redact import error_text

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import Runnable

__all__ = [
    "DEFAULT_LLM_MODEL",
    "SYSTEM_PROMPT",
    "DigestBatch",
    "LLMDigester",
    "TurnDigest",
    "default_chat_model",
]

logger = logging.getLogger("pmm.digest")

DEFAULT_LLM_MODEL = "gpt-4o-mini"

SYSTEM_PROMPT = """\
You write the memory notes of a conversation log. You get numbered turns, each with its \
speaker (user or assistant) and text. For every turn, write:
- "summary": a factual summary of 1-2 sentences in the third person that says who spoke \
("The user prefers ...", "The assistant recommended ..."). Keep every name, number, date, \
amount and stated preference exactly as written. Add nothing that the turn does not say.
- "keywords": 3 to 8 short keywords: the entities (people, places, organisations, products, \
dates, numbers) and the main topics of the turn.
Return exactly one item per turn, in the order given, each with its turn number. Reply with \
only a JSON object of this form:
{"digests": [{"turn": 1, "summary": "...", "keywords": ["...", "..."]}]}"""


class TurnDigest(BaseModel):
    """The digest of one turn, as the model returns it."""

    turn: int = Field(description="The number of the turn, as given.")
    summary: str = Field(
        description="1-2 factual sentences in the third person saying who spoke "
        "('The user ...', 'The assistant ...'), keeping every name, number, date and preference."
    )
    keywords: list[str] = Field(description="3-8 entities and topics of the turn.")


class DigestBatch(BaseModel):
    """The model's reply: one digest per turn."""

    digests: list[TurnDigest] = Field(description="One item per turn, in the order given.")


class MalformedOutput(ValueError):
    """A reply that is not a valid batch of digests."""


def default_chat_model(model_name: str = DEFAULT_LLM_MODEL, *, timeout: float = 60.0) -> Any:
    """``ChatOpenAI(model=model_name)``: needs langchain-openai and ``OPENAI_API_KEY``;
    ``OPENAI_BASE_URL`` (or ``OPENAI_API_BASE``) points it at another compatible server."""
    if not os.environ.get("OPENAI_API_KEY"):
        raise BackendError(
            "the llm summarizer needs OPENAI_API_KEY (or a chat model passed in Python, "
            "e.g. Mind(..., llm=ChatOpenAI(...)))"
        )
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        raise MissingDependencyError("the llm summarizer", "langchain-openai", "llm") from exc
    return ChatOpenAI(model=model_name, timeout=timeout, max_retries=2)


def _parse_text(content: Any) -> DigestBatch:
    """A DigestBatch from a plain reply whose text should be JSON (fences tolerated)."""
    try:
        return DigestBatch.model_validate(json_object(content))
    except ValueError as exc:  # ValidationError is a ValueError
        raise MalformedOutput(f"the reply is not a valid digest batch: {exc}") from exc


class LLMDigester:
    """Digests by a LangChain chat model, ``batch_size`` turns per call, summary and keywords
    in the same call. ``retries`` extra calls are made for a malformed reply."""

    name = "llm"

    def __init__(
        self,
        model: BaseChatModel | None = None,
        *,
        model_name: str = DEFAULT_LLM_MODEL,
        batch_size: int = 8,
        retries: int = 1,
        max_keywords: int = 8,
        max_input_chars: int = 12_000,
        timeout: float = 60.0,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if retries < 0:
            raise ValueError("retries must not be negative")
        self.model: Any = (
            model if model is not None else default_chat_model(model_name, timeout=timeout)
        )
        self.batch_size = batch_size
        self.retries = retries
        self.max_keywords = max_keywords
        self.max_input_chars = max_input_chars
        self.structured: Runnable[Any, Any] | None
        try:
            self.structured = self.model.with_structured_output(DigestBatch, include_raw=True)
        except NotImplementedError:
            self.structured = None  # no tool calling / schema support: JSON in the prompt
        self.mode = "structured" if self.structured is not None else "json"

    def _messages(self, texts: Sequence[str], roles: Sequence[str | None]) -> list[BaseMessage]:
        from langchain_core.messages import HumanMessage, SystemMessage

        turns = []
        for number, (text, role) in enumerate(zip(texts, roles, strict=True), start=1):
            clipped = (
                text
                if len(text) <= self.max_input_chars
                else (text[: self.max_input_chars] + " [...]")
            )
            turns.append(
                {"turn": number, "speaker": normalize_role(role) or "unknown", "text": clipped}
            )
        body = json.dumps({"turns": turns}, ensure_ascii=False, indent=1)
        return [SystemMessage(content=SYSTEM_PROMPT), HumanMessage(content=body)]

    def _call(self, messages: list[BaseMessage]) -> DigestBatch:
        """One model call; MalformedOutput for a reply that does not parse."""
        try:
            if self.structured is None:
                return _parse_text(self.model.invoke(messages).content)
            result = self.structured.invoke(messages)
        except MalformedOutput:
            raise
        except ValueError as exc:  # parsers and pydantic raise ValueError subclasses
            raise MalformedOutput(f"the reply did not parse: {exc}") from exc
        except Exception as exc:
            # The message is redacted and the cause dropped: a server may echo the API key
            # it rejected, and this message goes to the log (see pmm/models/redact.py).
            detail = error_text(exc, self.model)
            raise BackendError(f"the chat model call failed: {detail}") from None
        if isinstance(result, dict) and "parsed" in result:
            if result.get("parsing_error") is not None:
                raise MalformedOutput(f"the reply did not parse: {result['parsing_error']}")
            result = result["parsed"]
        if isinstance(result, DigestBatch):
            return result
        try:
            return DigestBatch.model_validate(result)
        except ValidationError as exc:
            raise MalformedOutput(f"the reply is not a valid digest batch: {exc}") from exc

    def _validate(self, batch: DigestBatch, count: int) -> list[Digest]:
        by_turn = {item.turn: item for item in batch.digests}
        if len(batch.digests) != count or set(by_turn) != set(range(1, count + 1)):
            raise MalformedOutput(
                f"expected turns 1..{count}, got {[item.turn for item in batch.digests]}"
            )
        digests: list[Digest] = []
        for number in range(1, count + 1):
            item = by_turn[number]
            summary = " ".join(item.summary.split())
            if not summary:
                raise MalformedOutput(f"turn {number} has an empty summary")
            if summary[0] in "{[" or len(summary) > 2_000:
                raise MalformedOutput(f"turn {number} has no usable summary: {summary[:60]!r}")
            keywords: list[str] = []
            seen: set[str] = set()
            for keyword in item.keywords:
                cleaned = " ".join(keyword.split())
                if cleaned and cleaned.lower() not in seen:
                    seen.add(cleaned.lower())
                    keywords.append(cleaned)
            digests.append(Digest(summary, keywords[: self.max_keywords], self.name))
        return digests

    def _digest_batch(self, texts: Sequence[str], roles: Sequence[str | None]) -> list[Digest]:
        messages = self._messages(texts, roles)
        attempts = self.retries + 1
        problem = ""
        for attempt in range(1, attempts + 1):
            try:
                return self._validate(self._call(messages), len(texts))
            except MalformedOutput as exc:
                problem = str(exc)
                if attempt < attempts:
                    logger.info(
                        "llm digest: malformed reply (attempt %d of %d), asking again: %s",
                        attempt,
                        attempts,
                        problem,
                    )
        raise BackendError(f"the chat model returned malformed digests {attempts} times: {problem}")

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        role_list = roles_for(texts, roles)
        digests: list[Digest] = []
        for start in range(0, len(texts), self.batch_size):
            end = start + self.batch_size
            digests.extend(self._digest_batch(texts[start:end], role_list[start:end]))
        return digests
