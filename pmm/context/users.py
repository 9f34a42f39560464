"""Users (tenants) above sessions (threads): checking a user id, knowing which user a
session belongs to, the recall scope in force, and one user's statistics and export.

A *user* owns *sessions*. Every event stores its user (``events.user_id``, chained by hash
version 2), and a session belongs to one user: an append to it under another user is an
:class:`~pmm.errors.InvalidInputError`. What a model call sees of a user's thread:

- ``session`` scope: this thread alone (recent turns, summary, key facts, memories);
- ``user`` scope (the default whenever a user is known): recent turns and the rolling
  summary from this thread; key facts and relevant memories from all of her threads,
  labelled with their thread and date;
- ``all``: the whole log, every user's threads: for single-user apps only.

    owners = SessionOwners(store)
    user = owners.resolve("thread-1", "alice")   # refuses a thread of another user
    scope = effective_scope(settings.recall_scope, user)   # 'user', or 'session' without one
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from pmm.errors import EventNotFoundError, InvalidInputError
from pmm.events.chain import owner_error
from pmm.events.hashing import LEGACY_HASH_VERSION
from pmm.events.turns import CLEAR_KIND, REDACTION_KIND, SUPERSEDES_EDGE, turn_role
from pmm.facts import FactBook

if TYPE_CHECKING:
    from pmm.storage import EventLog

SCOPES = ("session", "user", "all")


def checked_user(user_id: str | None) -> str | None:
    """``user_id`` checked: None, or a non-empty string without NUL that UTF-8 can store
    (kept exactly as given: ``" alice"`` and ``"alice"`` are two users)."""
    if user_id is None:
        return None
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInputError(f"user_id must be a non-empty string, got {user_id!r}")
    if "\x00" in user_id:
        raise InvalidInputError(
            f"user_id must not contain a NUL character (\\x00), got {user_id!r}"
        )
    try:
        user_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"user_id {user_id!r} holds a lone surrogate, which UTF-8 cannot store"
        ) from None
    return user_id


def effective_scope(scope: str, user_id: str | None) -> str:
    """The scope in force: ``user`` without a known user is ``session`` (as before users)."""
    if scope not in SCOPES:
        raise InvalidInputError(f"recall scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    return "session" if scope == "user" and user_id is None else scope


class SessionOwners:
    """Which user each session belongs to, asked of the log (a session's user is cached
    once known: it never changes after, :meth:`pmm.Mind.assign_user` only gives one to a
    session that had none)."""

    def __init__(self, store: EventLog) -> None:
        self.store = store
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def owner(self, session_id: str) -> str | None:
        """The session's user, or None (no events yet, or written without a user)."""
        known = self._known.get(session_id)
        if known is not None:
            return known
        _, owner = self.store.session_owner(session_id)
        if owner is not None:
            with self._lock:
                if len(self._known) > 100_000:
                    self._known.clear()
                self._known[session_id] = owner
        return owner

    def resolve(self, session_id: str, user_id: str | None) -> str | None:
        """The user a call on ``session_id`` acts for: ``user_id`` when the session is new
        or hers (else :class:`InvalidInputError`: a thread of another user, or one written
        without a user, is never read or written as hers); without ``user_id``, the
        session's own user, if it has one."""
        user_id = checked_user(user_id)
        if user_id is None:
            return self.owner(session_id)
        known = self._known.get(session_id)
        if known == user_id:
            return user_id
        has_rows, owner = self.store.session_owner(session_id)
        if has_rows and owner != user_id:
            raise owner_error(session_id, user_id, owner)
        if owner is not None:
            with self._lock:
                self._known[session_id] = owner
        return user_id


def user_stats(store: EventLog, user_id: str) -> dict[str, Any]:
    """One user's counts: events, turns, by kind, by session (thread) and by role."""
    by_kind: Counter[str] = Counter()
    by_session: Counter[str] = Counter()
    by_role: Counter[str] = Counter()
    digested = with_text = 0
    for event in store.events(user_id=user_id):
        by_kind[event.kind] += 1
        by_session[str(event.session_id)] += 1
        by_role[str(event.role)] += 1
        digested += event.digest_method is not None
        with_text += event.content is not None
    return {
        "path": store.path,
        "user_id": user_id,
        "events": sum(by_kind.values()),
        "turns": by_kind["prompt"] + by_kind["response"],
        "sessions": len(by_session),
        "by_kind": dict(by_kind.most_common()),
        "by_session": dict(by_session.most_common()),
        "by_role": dict(by_role.most_common()),
        "digested": digested,
        "with_text": with_text,
    }


class UserFacts:
    """The key facts of each user, read from all of her threads and kept up to date
    incrementally; each value is labelled with the thread and date it was said in. A
    thread's clear marker drops that thread's facts; a redaction rebuilds them all (erased
    text never lives on in a prompt); statements a newer one superseded are left out."""

    def __init__(self, store: EventLog, *, nlp: bool = False) -> None:
        self.store = store
        self.nlp = nlp
        self._users: dict[str, tuple[int, FactBook]] = {}
        self._lock = threading.RLock()

    def lines(self, user_id: str) -> list[str]:
        """``Label: value (date)`` lines of the user's facts (the date it was said)."""
        with self._lock:
            scanned, book = self._users.get(user_id) or (0, FactBook(nlp=self.nlp))
            kinds = ("prompt", CLEAR_KIND, REDACTION_KIND)
            new = self.store.events(user_id=user_id, kinds=kinds, after_id=scanned)
            seen_upto = max((e.id for e in new), default=scanned)
            if any(e.kind == REDACTION_KIND for e in new):
                book = FactBook(nlp=self.nlp)
                new = self.store.events(
                    user_id=user_id, kinds=("prompt", CLEAR_KIND), before_id=seen_upto + 1
                )
            replaced = self.store.edge_sources(
                (e.id for e in new if e.kind == "prompt"), SUPERSEDES_EDGE
            )
            for event in new:
                if event.id in replaced or event.session_id is None:
                    continue
                if event.kind == CLEAR_KIND:
                    book.drop_source_session(event.session_id)
                elif event.kind == "prompt":
                    role, text = turn_role(event)
                    if role == "user":
                        book.add(text, source=(event.session_id, event.ts[:10]))
            self._users[user_id] = (seen_upto, book)
            return book.lines(sources=True)

    def clear(self) -> None:
        """Drop what was read: facts are rebuilt on the next call."""
        with self._lock:
            self._users.clear()


@dataclass(frozen=True, slots=True)
class UserErasure:
    """What an erasure asked for one user erases (:func:`user_erasure`): the arguments of
    ``forget`` on every store, so that ``Mind.forget(user_id=...)``, ``pmm forget --user``
    and any other route erase a user the same way::

        request = user_erasure(store, owners, "alice")
        store.forget(**request.arguments(), reason="account deleted")
    """

    event_ids: list[int] | None
    """Her events to erase (None: the sessions alone pick them)."""
    session_id: str | None
    session_ids: list[str] | None
    whole_user: str | None
    """The user when every event of hers goes: her user and thread ids and her chain's
    secret go with them (``identifiers_of`` of the stores' ``forget``)."""

    def arguments(self) -> dict[str, Any]:
        """The selector arguments of the stores' ``forget``."""
        return {
            "event_ids": self.event_ids,
            "session_id": self.session_id,
            "session_ids": self.session_ids,
            "match": None,
            "identifiers_of": self.whole_user,
        }


def user_erasure(
    store: EventLog,
    owners: SessionOwners,
    user_id: str,
    *,
    event_ids: Sequence[int] | None = None,
    session_id: str | None = None,
    session_ids: Sequence[str] | None = None,
    match: str | None = None,
) -> UserErasure:
    """The one way a request to erase (some of) a user's events is resolved: with no other
    selector, all of her, ids and chain key included (:attr:`UserErasure.whole_user`);
    else only what is hers among ``event_ids``, her sessions ``session_id`` and
    ``session_ids`` (each checked to be hers: another user's raises
    :class:`InvalidInputError`) and her events whose text holds ``match``."""
    user = str(checked_user(user_id))
    sessions = list(session_ids) if session_ids is not None else None
    named = ([session_id] if session_id is not None else []) + (sessions or [])
    for session in named:
        if not isinstance(session, str) or not session:
            raise InvalidInputError(f"session ids are non-empty strings, got {session!r}")
        owners.resolve(session, user)  # another user's (or no user's) session: refused
    if not named and event_ids is None and match is None:
        return UserErasure(user_erasure_ids(store, user, None, None, None), None, None, user)
    ids = user_erasure_ids(store, user, event_ids, match, named[0] if named else None)
    return UserErasure(ids, session_id, sessions, None)


def user_erasure_ids(
    store: EventLog,
    user_id: str,
    event_ids: Sequence[int] | None,
    match: str | None,
    session_id: str | None,
) -> list[int] | None:
    """The ids :func:`user_erasure` erases for ``user_id``: all her events (less the
    records of earlier erasures and compactions, which hold no text, and rows of the
    earlier PMM, which cannot be erased) when nothing else is asked; else those of
    ``event_ids`` (each must be hers) and her events whose text holds ``match``. None
    when only sessions were asked (the caller checked they are hers)."""
    from pmm.retention.erasure import PROTECTED_KINDS

    if event_ids is None and match is None:
        if session_id is not None:
            return None
        ids = [
            e.id
            for e in store.events(user_id=user_id)
            if e.kind not in PROTECTED_KINDS and e.hash_version != LEGACY_HASH_VERSION
        ]
        if not ids:
            raise EventNotFoundError(
                f"user {user_id!r} has no events to erase in {store.path} (an erasure of "
                "hers that stopped before the rewrite of the file or tables is finished by "
                "`pmm forget --scrub`)"
            )
        return ids
    picked: list[int] = []
    if event_ids is not None:
        wanted = [int(i) for i in event_ids]
        found = store.get_many(wanted)
        for event_id in wanted:
            event = found.get(event_id)
            if event is not None and event.user_id != user_id:
                raise InvalidInputError(
                    f"event {event_id} is not one of user {user_id!r}'s: nothing was erased"
                )
        picked += wanted
    if match is not None:
        needle = match.casefold()
        picked += [
            e.id
            for e in store.events(user_id=user_id)
            if e.kind not in PROTECTED_KINDS
            and any(needle in t.casefold() for t in (e.text, e.summary or "", *e.keywords))
        ]
        if not picked:
            raise EventNotFoundError(f"no event of user {user_id!r} holds {match!r}")
    return sorted(set(picked))


def export_events(store: EventLog, out: str | IO[str], user_id: str | None) -> int:
    """Write events as JSON lines (every field, :meth:`Event.to_dict`) to a path or a
    text file: all of them, or one user's, after a line per chain secret they need
    (``{"chain_key": ..., "secret": hex}``, as ``pmm export``). Returns how many events."""
    events = store.events(user_id=user_id) if user_id is not None else store.iter_events()
    count = 0
    with contextlib.ExitStack() as stack:
        stream = (
            stack.enter_context(open(out, "w", encoding="utf-8")) if isinstance(out, str) else out
        )
        for chain, secret in store.chain_keys(user_id):  # version-3 rows need them
            stream.write(
                json.dumps({"chain_key": chain, "secret": secret.hex()}, ensure_ascii=False) + "\n"
            )
        for event in events:
            stream.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
            count += 1
    return count
