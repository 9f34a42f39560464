"""The log's writes that every backend makes the same way, over its ``_append_checked``,
``_assign`` and ``_erase`` primitives: entries are checked here, written there.

    ev = store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
    store.append_many([NewEvent("prompt", "hi", "t1", "user", {"message_id": "m1"}, None)],
                      unique_meta="message_id")
    store.assign_user("t0", "alice", reason="signed in")
    store.forget(session_id="alice", reason="user asked")
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pmm.errors import InvalidInputError
from pmm.events.chain import ASSIGN_KIND, CheckedEvent, check_new_event, owner_error
from pmm.records import Event, NewEvent
from pmm.storage.shared.primitives import Primitives

if TYPE_CHECKING:
    from pmm.retention.erasure import ErasureReport


def check_assignable(session_id: str, user_id: str, has_rows: bool, owner: str | None) -> None:
    """Raise :class:`InvalidInputError` unless a session with these ``(has_rows, owner)``
    (read in the assigning transaction) may be given ``user_id``: it must have events and
    no user yet."""
    if not has_rows:
        raise InvalidInputError(
            f"session {session_id!r} has no events: there is nothing to assign "
            "(a new session takes its user from its first event)"
        )
    if owner is not None:
        if owner == user_id:
            raise InvalidInputError(f"session {session_id!r} already belongs to user {user_id!r}")
        raise owner_error(session_id, user_id, owner)


class SharedWrites(Primitives):
    """Appends, user assignment and erasure requests (checked here, stored by the backend)."""

    def _check(self, entry: NewEvent) -> CheckedEvent:
        """Validate one entry; returns it with its content hash and canonical meta."""
        return check_new_event(entry, self.max_content_bytes)

    def append(
        self,
        kind: str,
        content: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        meta: dict[str, Any] | None = None,
        ts: datetime | str | None = None,
    ) -> Event:
        """Append one event and return it with its id, timestamp and hash. ``ts`` (a
        ``datetime``, naive = UTC, or ISO-8601 text) is the conversation time of an
        imported past turn; None = now. Either way it is hashed into the chain."""
        return self.append_many([NewEvent(kind, content, session_id, role, meta, ts)])[0]

    def append_many(
        self, entries: Iterable[NewEvent], *, unique_meta: str | None = None
    ) -> list[Event]:
        """Append several events in one transaction: all of them are stored, or none.
        ``unique_meta`` (e.g. ``"message_id"``): leave out the entries whose session
        already holds an event with the same ``meta[unique_meta]``, checked under the
        write lock, so each is stored once however many writers race; returns only the
        events appended now."""
        checked = [self._check(e) for e in entries]
        if not checked:
            return []
        return self._append_checked(checked, unique_meta)

    def assign_user(self, session_id: str, user_id: str, *, reason: str = "") -> Event:
        """Give a session written without a user its user, once: its rows take ``user_id``
        and a chained ``user_assigned`` event (returned) records it, in one transaction.
        Raises :class:`InvalidInputError` for a session with no events or one that already
        has a user. Its rows keep their hashes (versions 0/1 do not cover the user);
        ``verify`` checks that their user is the one an assignment gave them."""
        entry = self._check(
            NewEvent(
                ASSIGN_KIND,
                f"session assigned to a user{': ' + reason if reason else ''}",
                session_id,
                "system",
                {"assigned_user": True},
                None,
                user_id,
            )
        )
        return self._assign(session_id, user_id, entry)

    def redact(self, event_id: int, *, reason: str) -> Event:
        """Erase one event's raw text (and its digest, vectors, edges and window keys) and
        record that as a chained ``redaction`` event in the same session, which is
        returned: :meth:`forget`'s one-event form. The redacted row keeps verifying (its
        hash covers ``content_sha256``, not the text). Rows of the earlier PMM (``hash_version``
        0) hash the text itself and cannot be redacted."""
        return self._erase(event_ids=[event_id], reason=reason, require_text=True).markers[0]

    def forget(
        self,
        *,
        event_ids: Iterable[int] | None = None,
        session_id: str | None = None,
        session_ids: Iterable[str] | None = None,
        match: str | None = None,
        reason: str,
        dry_run: bool = False,
        identifiers_of: str | None = None,
        **options: Any,
    ) -> ErasureReport:
        """Erase events (by id, session(s) and/or a case-insensitive ``match``) so that no
        byte of their text stays in the storage, in one request however many sessions
        ``session_ids`` names, recorded as chained ``redaction`` events (see
        :mod:`pmm.retention.erasure`). ``dry_run``: only say what would be erased;
        ``identifiers_of``: the user all of whose events these are, whose ids and chain
        key go too. ``options`` are the backend's own (PostgreSQL: ``pause``, seconds
        between the chunks of each partition's copy)::

            store.forget(session_ids=["alice/t1"], reason="account deleted")
        """
        return self._erase(
            event_ids=event_ids,
            session_id=session_id,
            session_ids=session_ids,
            match=match,
            reason=reason,
            dry_run=dry_run,
            identifiers_of=identifiers_of,
            require_text=False,
            **options,
        )
