"""PMMMiddleware: PMM as the memory of a LangChain v1 agent (``create_agent``).

    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from pmm.integrations import PMMMiddleware

    agent = create_agent(model, tools, middleware=[PMMMiddleware(db_path="pmm.db")],
                         checkpointer=InMemorySaver())
    agent.invoke({"messages": [{"role": "user", "content": "I moved to Lisbon"}]},
                 {"configurable": {"thread_id": "alice"}})

Before every model call the middleware adds PMM's compact context for the thread (key
facts, relevant older memories for the latest user message, and earlier turns that are no
longer in the thread's messages) to the system message of that call, within
``max_token_limit``. The context is never written into the agent state, so it is not
duplicated across steps or checkpoints.

After the agent finishes, the run's human, AI and tool messages are appended to the log,
each exactly once: every event carries the LangChain ``message_id`` in its meta, and ids
already stored in the session are skipped (re-runs, streaming, interrupts and resumes),
checked again inside the append's transaction so that two runs of one thread racing (a
cancelled run whose hook is still going, two servers) cannot both store a message.
What a message holds never fails the run or the thread: a message over
``max_content_bytes`` (a pasted file, a 3 MB tool result) is stored in full as linked parts,
NUL and lone surrogates as U+FFFD, an empty message is left out, the others of the run are
stored, and one warning names what was changed (see :mod:`pmm.storage.safe_append`).
An AI message's tool calls are stored in its text (``[called name({"arg": ...})]``, erasable
like any text) and only their ids and names in meta (``tool_calls``), which is hashed and
never erased: a passport number passed to a tool goes with ``forget``. Tool results are
stored with role ``tool``, their text, and in meta their ``tool_call_id``, ``tool_name``
and the id of the AI message that asked for them. What comes back
into the prompt is text inside the system message, so tool-call pairing in the message list
is never touched.

``trim_to=N`` keeps only the newest N messages in the thread's state once they are in the
log (cut at a human message, so tool calls stay with their results); older turns come back
through the context, nothing is lost.

The session is the run's ``thread_id`` (``config["configurable"]["thread_id"]``); pass
``session_id="alice"`` to pin one, or a callable ``session_id=lambda config: ...`` to map a
run to a session.

Users and threads: the user is ``config["configurable"]["user_id"]`` when the run has one
(or ``user_id="alice"``, or a callable ``user_id=lambda config: ...``); the session stays
the thread. Each thread's messages are stored under its user; the context of a thread
holds its own earlier turns, and (scope ``user``, the default) key facts and relevant
memories from all of that user's threads, labelled with thread and date, never another
user's. A thread id already used by another user is refused (InvalidInputError)::

    agent.invoke({"messages": [...]},
                 {"configurable": {"thread_id": "t-42", "user_id": "alice"}})
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime

from pmm.errors import InvalidInputError
from pmm.events.turns import TURN_KINDS
from pmm.mind import Mind
from pmm.records import NewEvent
from pmm.storage.safe_append import prepare, warn_once

log = logging.getLogger(__name__)

CONTEXT_HEADER = "Memory (PMM) of this conversation and earlier ones:"
SessionResolver = Callable[[RunnableConfig], str]
LEFT_OUT_KEPT = 10_000
"""How many left-out message ids a middleware remembers (so each is reported once)."""

UserResolver = Callable[[RunnableConfig], str | None]


class PMMMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Persistent memory for ``create_agent`` (see the module docstring).

    Args:
        db_path: The SQLite file or a ``postgresql://`` URL to open (default
            ``PMM_DB_PATH``); ignored when ``mind`` is given.
        mind: Share an open :class:`~pmm.Mind` instead of opening one.
        session_id: The session a run reads and writes: None = the run's ``thread_id``;
            a string pins one; a callable maps the run's config to a session.
        max_token_limit: Cap on the injected context (default: the ``max_tokens``
            setting).
        user_id: The run's user: a string, or a callable of the run config; default:
            ``configurable.user_id`` when the run has one. The session stays the thread.
        trim_to: Keep only the newest N messages in the thread once they are in the log
            (lossless: older turns come back through the context).
        **settings: PMM settings for the Mind it opens (``enable_summary=True``, ...).

    Raises:
        InvalidInputError: ``trim_to`` or ``max_token_limit`` is out of range.
    """

    def __init__(
        self,
        db_path: str | None = None,
        *,
        mind: Mind | None = None,
        session_id: str | SessionResolver | None = None,
        user_id: str | UserResolver | None = None,
        max_token_limit: int | None = None,
        trim_to: int | None = None,
        **settings: Any,
    ) -> None:
        super().__init__()
        if trim_to is not None and (not isinstance(trim_to, int) or trim_to < 1):
            raise InvalidInputError(f"trim_to must be an int >= 1 or None, got {trim_to!r}")
        if max_token_limit is not None and max_token_limit < 0:
            raise InvalidInputError(f"max_token_limit must be >= 0, got {max_token_limit}")
        self.mind = mind if mind is not None else Mind(db_path, **settings)
        self._own_mind = mind is None
        self.session_id = session_id
        self.user_id = user_id
        self.max_token_limit = max_token_limit
        self.trim_to = trim_to
        self._left_out: OrderedDict[str, None] = OrderedDict()  # message ids not to retry
        self._left_out_lock = threading.Lock()

    def close(self) -> None:
        """Close the Mind this middleware opened (not one passed in)."""
        if self._own_mind:
            self.mind.close()

    # -- session -----------------------------------------------------------------------

    def session_for(self, config: RunnableConfig | None) -> str:
        """The PMM session of a run: the override, the callable's answer, the thread id,
        or the ``session_id`` setting when the run has no thread id.

        Args:
            config: The run's config (``configurable.thread_id``), or None.

        Raises:
            InvalidInputError: The ``session_id`` callable returned no usable string.
        """
        if isinstance(self.session_id, str):
            return self.session_id
        config = config or {}
        if self.session_id is not None:
            session = self.session_id(config)
            if not isinstance(session, str) or not session.strip():
                raise InvalidInputError(
                    f"the session_id callable must return a non-empty str, got {session!r}"
                )
            return session
        thread = (config.get("configurable") or {}).get("thread_id")
        return str(thread) if thread is not None else self.mind.settings.session_id

    def user_for(self, config: RunnableConfig | None) -> str | None:
        """The user of a run: the fixed ``user_id``, the callable's answer, or the run's
        ``configurable.user_id``; None when there is none (the thread's own user, if it
        has one, is used then).

        Args:
            config: The run's config (``configurable.user_id``), or None.

        Raises:
            InvalidInputError: The user is not a non-empty string.
        """
        if isinstance(self.user_id, str):
            return self.user_id
        config = config or {}
        if self.user_id is not None:
            user = self.user_id(config)
        else:
            user = (config.get("configurable") or {}).get("user_id")
        if user is not None and (not isinstance(user, str) or not user.strip()):
            raise InvalidInputError(f"the run's user_id must be a non-empty str, got {user!r}")
        return user

    @staticmethod
    def _run_config() -> RunnableConfig | None:
        try:
            return get_config()
        except RuntimeError:  # called outside a graph run (a direct call in a test)
            return None

    # -- before the model --------------------------------------------------------------

    def context_text(
        self, session: str, messages: Sequence[BaseMessage], user_id: str | None = None
    ) -> str:
        """The PMM context for a model call over ``messages`` (empty when there is none):
        facts, memories relevant to the latest human message, and remembered turns that
        are not among ``messages`` (of ``user_id``'s threads, when given).

        Args:
            session: The PMM session (the thread).
            messages: The messages the model gets; turns among them are not repeated.
            user_id: The thread's user: key facts and memories come from all her threads.

        Returns:
            The text added to the system message, headed by the context header.
        """
        query = next((str(m.text) for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        budget = (
            self.mind.settings.max_tokens
            if self.max_token_limit is None
            else (self.max_token_limit)
        )
        budget -= self.mind.counter.count(CONTEXT_HEADER) + 1
        if budget <= 0:
            return ""
        context = self.mind.context(
            session,
            query=query,
            budget_tokens=budget,
            user_id=user_id,
            skip_turns=self._turns_in(session, messages),
        )
        text = context.text()
        return f"{CONTEXT_HEADER}\n{text}" if text else ""

    def _turns_in(self, session: str, messages: Sequence[BaseMessage]) -> set[int]:
        """The event ids of ``session``'s stored turns that are among ``messages`` (the
        run's state, kept by a checkpointer): the context leaves them out and spends their
        tokens on memories and older turns. Only the newest stored turns can be there:
        as many as there are messages, read newest first."""
        in_state = {m.id for m in messages if m.id}
        if not in_state:
            return set()
        recent = self.mind.store.events(
            session_id=session, kinds=TURN_KINDS, newest_first=True, limit=len(messages) + 1
        )
        return {e.id for e in recent if (e.meta or {}).get("message_id") in in_state}

    @staticmethod
    def _with_text(request: ModelRequest, text: str) -> ModelRequest:
        """The request with ``text`` appended to its system message (one message)."""
        if not text:
            return request
        current = request.system_message
        content = text if current is None else f"{current.text}\n\n{text}"
        return request.override(system_message=SystemMessage(content=content))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        config = self._run_config()
        text = self.context_text(self.session_for(config), request.messages, self.user_for(config))
        return handler(self._with_text(request, text))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        config = self._run_config()
        session, user = self.session_for(config), self.user_for(config)
        text = await asyncio.to_thread(self.context_text, session, request.messages, user)
        return await handler(self._with_text(request, text))

    # -- after the agent ---------------------------------------------------------------

    def remember_messages(
        self, session: str, messages: Sequence[AnyMessage], user_id: str | None = None
    ) -> list[int]:
        """Append the messages this session does not hold yet (by message id), under
        ``user_id`` when given; returns the new event ids.

        What a message holds never fails the run (see :mod:`pmm.storage.safe_append`): an
        oversized one is stored in full as linked parts, NUL and lone surrogates as
        U+FFFD; an empty one, or one the log still refuses, is left out; the others are
        stored, and one warning per run names what was changed or left out (a message
        left out is named once, not again on every later run of the thread).

        Args:
            session: The PMM session (the thread), e.g. :meth:`session_for` of the run.
            messages: The thread's messages; those already stored are skipped.
            user_id: The thread's user (see :meth:`user_for`).

        Returns:
            The ids of the events appended now.
        """
        candidates = [
            m
            for m in messages
            if isinstance(m, (HumanMessage, AIMessage, ToolMessage))
            and m.id
            and str(m.id) not in self._left_out
        ]
        if not candidates:
            return []
        stored = self.mind.stored_message_ids(session, [str(m.id) for m in candidates])
        asked_by: dict[str, str] = {}
        for message in messages:
            if isinstance(message, AIMessage) and message.id:
                for call in message.tool_calls:
                    if call.get("id"):
                        asked_by[str(call["id"])] = str(message.id)
        fresh = [m for m in candidates if str(m.id) not in stored]
        entries = [_entry(m, session, asked_by) for m in fresh]
        problems: list[str] = []
        for message, entry in zip(fresh, entries, strict=True):
            if entry is None and not isinstance(message, AIMessage):  # an empty AI turn is normal
                problems.append(f"message {message.id} ({message.type}): empty, left out")
                self._leave_out(str(message.id))
        kept = [e for e in entries if e is not None]
        prepared = prepare(kept, self.mind.settings.max_content_bytes)
        for index in prepared.left_out:
            self._leave_out(str((kept[index].meta or {})["message_id"]))
        warn_once([*problems, *prepared.problems], f"PMMMiddleware (session {session!r})")
        if not prepared.entries:
            return []
        # The check above skips the work; this one, in the append, makes it exactly once
        # when two runs of the thread race (a cancelled run's hook may still be going).
        stored_now = self.mind.remember_many(
            prepared.entries, user_id=user_id, unique_meta="message_id"
        )
        return [e.id for e in stored_now]

    def _leave_out(self, message_id: str) -> None:
        with self._left_out_lock:  # runs of many threads share one middleware
            self._left_out[message_id] = None
            while len(self._left_out) > LEFT_OUT_KEPT:
                self._left_out.popitem(last=False)

    def _after(
        self, state: AgentState[Any], config: RunnableConfig | None
    ) -> dict[str, Any] | None:
        messages = state["messages"]
        self.remember_messages(self.session_for(config), messages, self.user_for(config))
        if self.trim_to is None or len(messages) <= self.trim_to:
            return None
        removed = _older_than_window(messages, self.trim_to)
        return {"messages": [RemoveMessage(id=str(m.id)) for m in removed]} if removed else None

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._after(state, self._run_config())

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._after, state, self._run_config())


def _older_than_window(messages: Sequence[AnyMessage], keep: int) -> list[AnyMessage]:
    """The messages before the newest ``keep``, cut back to a human message so that no
    tool call is separated from its result (nothing when no such cut exists)."""
    cut = len(messages) - keep
    while cut > 0 and not isinstance(messages[cut], HumanMessage):
        cut -= 1
    return [m for m in messages[:cut] if m.id]


def _entry(message: AnyMessage, session: str, asked_by: dict[str, str]) -> NewEvent | None:
    meta: dict[str, Any] = {"message_id": str(message.id), "source": "agent"}
    text = str(message.text)
    if isinstance(message, HumanMessage):
        return NewEvent("prompt", text, session, "user", meta) if text.strip() else None
    if isinstance(message, AIMessage):
        if message.tool_calls:
            # the arguments may hold anything the user said (a passport number): they go in
            # the text, which forget erases, never in the hashed meta, which it cannot
            meta["tool_calls"] = [
                {"id": c.get("id"), "name": c["name"]} for c in message.tool_calls
            ]
            called = ", ".join(_call_text(c["name"], c["args"]) for c in message.tool_calls)
            text = f"{text}\n[called {called}]".strip()
        return NewEvent("response", text, session, "assistant", meta) if text.strip() else None
    if isinstance(message, ToolMessage):
        meta["tool_call_id"] = message.tool_call_id
        meta["ai_message_id"] = asked_by.get(message.tool_call_id)
        if message.name:
            meta["tool_name"] = message.name
            text = f"[{message.name}] {text}"
        return NewEvent("response", text, session, "tool", meta)
    return None


def _call_text(name: str, args: Any) -> str:
    """A tool call as the event's text shows it: ``name({"arg": "value"})``."""
    return f"{name}({json.dumps(_jsonable(args), ensure_ascii=False, sort_keys=True)})"


def _jsonable(value: Any) -> Any:
    result: Any = json.loads(json.dumps(value, default=str))
    return result
