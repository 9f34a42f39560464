"""PMMChatMessageHistory: LangChain chat message history over PMM's event log.

    from langchain_core.runnables.history import RunnableWithMessageHistory
    from pmm import Mind, PMMChatMessageHistory

    mind = Mind("pmm.db")   # share one Mind: the factory runs on every call
    chain_with_memory = RunnableWithMessageHistory(
        chain, lambda session_id: PMMChatMessageHistory(session_id, mind=mind),
        input_messages_key="input", history_messages_key="history",
    )

``messages`` returns the session's turns since its last ``clear()`` (all of them, or the
compact, budgeted context when ``max_token_limit`` is set; an erased turn leaves no
message, a compacted one shows its summary). ``add_messages`` appends them as chained
events in one transaction, storing what each message holds: an oversized one as linked
parts, NUL and lone surrogates as U+FFFD, an empty turn left out, with one warning per
call (see :mod:`pmm.storage.safe_append`). Sessions never see each other's messages.

With ``user_id`` the session is one of that user's threads: its messages are stored under
her, a thread of another user is refused, and with ``max_token_limit`` the context adds her
other threads' key facts and relevant memories (never another user's)::

    PMMChatMessageHistory(thread_id, mind=mind, user_id="alice")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from pmm.events.turns import TURN_KINDS, turn_role
from pmm.integrations.messages import message_role, to_message
from pmm.mind import Mind
from pmm.records import NewEvent

_HISTORY_KINDS = (*TURN_KINDS, "event")


class PMMChatMessageHistory(BaseChatMessageHistory):
    """Chat history of one session in a PMM event log (see the module docstring).

    Args:
        session_id: The session it reads and writes.
        db_path: The SQLite file or a ``postgresql://`` URL to open; ignored when
            ``mind`` is given.
        mind: Share an open :class:`~pmm.Mind` (one open file for every session).
        max_token_limit: None = ``messages`` is the whole session since its last
            ``clear()``; a number = the compact, budgeted context as messages.
    user_id: The session's user (a session belongs to one user; see
        :meth:`pmm.Mind.remember`).
        **settings: PMM settings for the Mind it opens.
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | None = None,
        *,
        mind: Mind | None = None,
        max_token_limit: int | None = None,
        user_id: str | None = None,
        **settings: Any,
    ) -> None:
        self.session_id = session_id
        self.user_id = user_id
        self.max_token_limit = max_token_limit
        self._owns_mind = mind is None
        self.mind = mind if mind is not None else Mind(db_path, **settings)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages since its last clear, oldest first: every one, or with
        ``max_token_limit`` the budgeted context (summary, relevant memories, recent turns)
        as messages. A compacted turn shows its summary; an erased one is left out."""
        if self.max_token_limit is not None:
            return self.mind.context(
                self.session_id,
                budget_tokens=self.max_token_limit,
                as_messages=True,
                user_id=self.user_id,
            ).messages()
        out: list[BaseMessage] = []
        for event in self.mind.history(
            self.session_id, kinds=_HISTORY_KINDS, include_erased=True, user_id=self.user_id
        ):
            role, text = turn_role(event)
            if event.content is None:  # compacted: its summary; erased: no message at all
                if not event.summary:
                    continue
                text = event.summary
            out.append(to_message(role, text, event.meta))
        return out

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append the messages as chained events in one transaction::

            history.add_messages([HumanMessage("I live in Porto."), AIMessage("Noted!")])

        What a message holds never fails the call (see :mod:`pmm.storage.safe_append`): an
        oversized one is stored as linked parts, an empty one left out, with one warning.

        Args:
            messages: Human, AI, tool or system messages (tool messages keep their
                ``tool_call_id``).
        """
        entries = []
        for message in messages:
            role = message_role(message)
            meta = {}
            tool_call_id = getattr(message, "tool_call_id", None)
            if tool_call_id:
                meta["tool_call_id"] = tool_call_id
            entries.append(
                NewEvent(
                    {"user": "prompt", "assistant": "response"}.get(role, "event"),
                    message.text,
                    self.session_id,
                    role,
                    meta or None,
                )
            )
        self.mind.remember_safely(
            entries, where=f"PMMChatMessageHistory({self.session_id!r})", user_id=self.user_id
        )

    def clear(self) -> None:
        """Start the session afresh: a chained ``clear`` marker; nothing is deleted."""
        self.mind.clear(self.session_id, user_id=self.user_id)

    def close(self) -> None:
        """Close the Mind this history opened (not one passed in)."""
        if self._owns_mind:
            self.mind.close()
