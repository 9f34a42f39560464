"""Writing to the log: turns, batches, safe batches and clears (part of :class:`pmm.Mind`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pmm.context.users import (
    checked_user,
)
from pmm.errors import InvalidInputError
from pmm.events.hashing import normalize_ts
from pmm.events.turns import CLEAR_KIND, TURN_KINDS, kind_for_role
from pmm.mind.base import MindParts
from pmm.records import Event, NewEvent
from pmm.storage.safe_append import prepare, warn_once

log = logging.getLogger("pmm")

if TYPE_CHECKING:
    pass


class Writing(MindParts):
    """The writing methods of :class:`pmm.Mind`."""

    # -- writing ---------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        role: str,
        session_id: str | None = None,
        kind: str | None = None,
        meta: dict[str, Any] | None = None,
        ts: datetime | str | None = None,
        user_id: str | None = None,
    ) -> Event:
        """Append one turn or note to the chain.

        Args:
            content: The message text.
            role: ``user``, ``assistant``, ``system`` or ``tool``.
            session_id: The conversation (default ``PMM_SESSION_ID``).
            kind: The event kind; defaults from ``role`` (user → prompt, assistant →
                response, system/tool → event).
            meta: JSON metadata, hashed with the event (keep secrets out of it).
            ts: The conversation time (``datetime``, naive = UTC, or ISO-8601 text) for
                imports of past conversations; None = now. It is the row's hashed ``ts``,
                and recall's date key.
            user_id: The user whose thread ``session_id`` is (None: the session's user,
                if it has one).

        Returns:
            The stored event, with its id and hash.

        Raises:
            InvalidInputError: The content, role, session id or meta is not valid, the
                content is empty, or the session belongs to another user.
        """
        session = self._session(session_id)
        kind = kind or kind_for_role(role)
        [event] = self.remember_many(
            [NewEvent(kind, content, session, role, meta, ts, checked_user(user_id))]
        )
        return event

    def remember_turn(
        self,
        user_text: str,
        ai_text: str,
        *,
        session_id: str | None = None,
        meta: dict[str, Any] | None = None,
        ts: datetime | str | None = None,
        user_id: str | None = None,
    ) -> tuple[Event, Event]:
        """Append one exchange, the user's turn and the AI's reply, atomically.

        Args:
            user_text: The user's message.
            ai_text: The assistant's reply.
            session_id: The conversation (default ``PMM_SESSION_ID``).
            meta: JSON metadata for both events.
            ts: The conversation time, as in :meth:`remember`.
            user_id: The thread's user, as in :meth:`remember`.

        Returns:
            The two stored events (two turns, two chained events).
        """
        session = self._session(session_id)
        user = checked_user(user_id)
        said, ai = self.remember_many(
            [
                NewEvent("prompt", user_text, session, "user", meta, ts, user),
                NewEvent("response", ai_text, session, "assistant", meta, ts, user),
            ]
        )
        return said, ai

    def remember_many(
        self,
        entries: Sequence[NewEvent],
        *,
        user_id: str | None = None,
        unique_meta: str | None = None,
    ) -> list[Event]:
        """Append several events in one transaction, then digest/embed per the mode.

        Nothing is stored when one entry is refused (see :meth:`remember_safely` for the
        lenient append of messages a caller cannot fix).

        Args:
            entries: The events; each :class:`~pmm.records.NewEvent` may carry its
                conversation time in ``ts`` and its user in ``user_id``.
            user_id: The user of the entries that carry none.
            unique_meta: A meta field (``"message_id"``): entries whose session already
                holds an event with the same value are left out, checked in the append's
                transaction, so that racing writers (two runs of one thread, a cancelled
                run's hook still going) store each once.

        Returns:
            The stored events, in order (without those ``unique_meta`` left out).

        Raises:
            InvalidInputError: An empty or whitespace-only turn, a text over
                ``max_content_bytes``, NUL or a lone surrogate, or an event under another
                user than its session's.
        """
        user = checked_user(user_id)
        if user is not None:
            entries = [e if e.user_id is not None else replace(e, user_id=user) for e in entries]
        for number, entry in enumerate(entries, 1):
            checked_user(entry.user_id)
            if entry.role is not None:
                kind_for_role(entry.role)  # validates the role
            content = entry.content
            if entry.kind in TURN_KINDS and isinstance(content, str) and not content.strip():
                raise InvalidInputError(
                    f"entry {number} is an empty turn ({entry.role or entry.kind}): a turn "
                    "needs some text; leave it out"
                )
        events = self.store.append_many(entries, unique_meta=unique_meta)
        inline = self._derived_enabled and self.settings.summary_mode == "inline"
        if not inline:  # inline digests rewrite these rows now: readers read them back
            self._contexts.appended(events)
        if self._derived_enabled:
            self._processor.appended(events, inline=inline)
        return events

    def remember_safely(
        self, entries: Sequence[NewEvent], *, where: str, user_id: str | None = None
    ) -> list[Event]:
        """Store what ``entries`` hold, whatever they hold (what the LangChain integrations
        call; see :mod:`pmm.storage.safe_append`): an oversized text as linked parts, NUL
        and lone surrogates as U+FFFD, empty turns and entries the store refuses left out;
        one warning (naming ``where``) lists what was changed or left out. ``user_id`` is
        the user of the entries that carry none::

            mind.remember_safely([NewEvent("prompt", big_text, "alice", "user")], where="app")

        Args:
            entries: The events to store, in order, in one transaction.
            where: Names the caller in the warning (``"PMMMiddleware (session 'a')"``).
            user_id: The user of the entries that carry none.

        Returns:
            The events stored: an oversized text's linked parts each, none for an entry
            left out.
        """
        user = checked_user(user_id)
        if user is not None:
            entries = [e if e.user_id is not None else replace(e, user_id=user) for e in entries]
        for entry in entries:  # a bad session, user or time is the caller's error, not the text's
            if entry.session_id is not None:
                self._session(entry.session_id)
            checked_user(entry.user_id)
            if entry.ts is not None:
                normalize_ts(entry.ts)
        prepared = prepare(entries, self.settings.max_content_bytes)
        warn_once(prepared.problems, where)
        return self.remember_many(prepared.entries) if prepared.entries else []

    def clear(self, session_id: str | None = None, *, user_id: str | None = None) -> Event:
        """Start this session's history afresh. Nothing is deleted: a chained ``clear``
        marker is appended and history (and key facts) start after it. A user's other
        threads keep theirs::

            mind.clear("thread-1", user_id="alice")

        Args:
            session_id: The session (thread) to clear; default: the Mind's session.
            user_id: The session's user (checked against its owner when given).

        Returns:
            The chained ``clear`` event.
        """
        session = self._session(session_id)
        user = self._owners.resolve(session, user_id)
        [event] = self.store.append_many(
            [NewEvent(CLEAR_KIND, "history cleared", session, "system", None, None, user)]
        )
        return event
