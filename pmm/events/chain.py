"""The chain, independent of any database: checking new events, sealing them onto a head,
and walking stored rows to verify them. Every storage backend calls these, so there is one
chain rule, one set of input checks and one verifier for SQLite and PostgreSQL alike.

    checked = [check_new_event(NewEvent("prompt", "hi", "alice", "user"), 1 << 20)]
    events = seal(checked, last_id=0, prev_hash=None, ts=utc_now())   # ids and hashes
    walker = ChainWalker(expect_head=None)
    for event in events:
        if (reason := walker.step(event.id, event.ts, event.kind, event.session_id,
                                  event.role, event.content, event.content_sha256,
                                  canonical_json(event.meta), event.prev_hash,
                                  event.hash, event.hash_version)):
            break
    report = walker.report()
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import NamedTuple

from pmm.errors import InvalidInputError
from pmm.events.hashing import (
    HASH_VERSION,
    LEGACY_HASH_VERSION,
    USER_HASH_VERSION,
    canonical_json,
    chain_payload,
    legacy_hash,
    normalize_ts,
    sha256_hex,
)
from pmm.records import Event, NewEvent, VerifyReport


class CheckedEvent(NamedTuple):
    """A new event that passed :func:`check_new_event`, with what its row needs."""

    entry: NewEvent
    content_sha256: str
    meta_json: str


def check_new_event(entry: NewEvent, max_content_bytes: int) -> CheckedEvent:
    """Validate one entry; raises :class:`InvalidInputError` saying what to change."""
    for name, value in (
        ("kind", entry.kind),
        ("session_id", entry.session_id),
        ("role", entry.role),
        ("user_id", entry.user_id),
    ):
        if value is not None and (not isinstance(value, str) or not value or "\x00" in value):
            raise InvalidInputError(f"{name} must be a non-empty string without NUL, got {value!r}")
        if value is not None and not _encodable(value):
            raise InvalidInputError(
                f"{name} is not valid Unicode (it holds a lone surrogate), got {value!r}"
            )
    if not isinstance(entry.kind, str):
        raise InvalidInputError("kind is required")
    content = entry.content
    if not isinstance(content, str):
        raise InvalidInputError(
            f"content must be a str, got {type(content).__name__}: convert it with str() "
            "or json.dumps() before storing it"
        )
    if "\x00" in content:
        raise InvalidInputError(
            "content contains a NUL character (\\x00), which text cannot hold: "
            "remove it, or store binary data base64-encoded"
        )
    try:
        encoded = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"content is not valid Unicode ({exc.reason} at position {exc.start}): "
            "decode your input with errors='replace' before storing it"
        ) from None
    if len(encoded) > max_content_bytes:
        raise InvalidInputError(
            f"content is {len(encoded):,} bytes, over the {max_content_bytes:,}-byte "
            "limit for one event: split it, or raise max_content_bytes"
        )
    meta = entry.meta if entry.meta is not None else {}
    if not isinstance(meta, dict) or not all(isinstance(k, str) for k in meta):
        raise InvalidInputError("meta must be a dict with str keys")
    try:
        meta_json = canonical_json(meta)
        meta_json.encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"meta is not JSON-serialisable ({exc}): keep to str, int, float, bool, "
            "None, lists and dicts"
        ) from None
    if entry.ts is not None:  # a past conversation's time, e.g. for imports
        entry = NewEvent(
            entry.kind,
            content,
            entry.session_id,
            entry.role,
            meta,
            normalize_ts(entry.ts),
            entry.user_id,
        )
    return CheckedEvent(entry, hashlib.sha256(encoded).hexdigest(), meta_json)


ASSIGN_KIND = "user_assigned"
"""The kind of the chained event that gives a session written without a user its user
(:meth:`pmm.Mind.assign_user`)."""


def owner_error(session_id: str, user_id: str, owner: str | None) -> InvalidInputError:
    """The error for appending to (or reading) ``session_id`` as ``user_id`` when the
    session belongs to ``owner`` (None: it was written without a user). The other user's
    id is not named: the message may reach an end user."""
    if owner is None:
        return InvalidInputError(
            f"session {session_id!r} was written without a user, so it cannot take events "
            f"of user {user_id!r}: assign it once with Mind.assign_user({session_id!r}, "
            f"{user_id!r}) or `pmm assign-user SESSION USER`, or use a new session id"
        )
    return InvalidInputError(
        f"session {session_id!r} belongs to another user, not {user_id!r}: a session "
        "(thread) belongs to one user; give this user's thread its own session id"
    )


def resolve_owners(
    checked: Sequence[CheckedEvent], owner_of: Callable[[str], tuple[bool, str | None]]
) -> list[CheckedEvent]:
    """The entries with their users settled against their sessions' owners: an entry
    without a user takes its session's user (markers, summaries, clears of a user's
    thread belong to her); an entry whose user differs from the session's owner, or that
    names a user for a session written without one, raises :class:`InvalidInputError`.

    ``owner_of(session)`` returns ``(has_rows, user_id)`` as the log holds it now; the
    caller holds the write lock from this call until the rows are stored, so concurrent
    writers cannot both claim one new session for different users.
    """
    known: dict[str, tuple[bool, str | None]] = {}
    out: list[CheckedEvent] = []
    for item in checked:
        entry = item.entry
        session = entry.session_id
        if session is None:
            out.append(item)
            continue
        if session not in known:
            known[session] = owner_of(session)
        has_rows, owner = known[session]
        user = entry.user_id
        if user is None:
            if owner is not None:
                item = item._replace(entry=replace(entry, user_id=owner))
            known[session] = (True, owner)
        elif not has_rows:
            known[session] = (True, user)
        elif owner != user:
            raise owner_error(session, user, owner)
        out.append(item)
    return out


def seal(
    checked: Sequence[CheckedEvent], *, last_id: int, prev_hash: str | None, ts: str
) -> list[Event]:
    """Give checked entries the ids after ``last_id`` and chain them onto ``prev_hash``,
    stamped ``ts`` unless an entry carries its own conversation time.

    The caller holds the log's write lock from reading the head until the rows are stored.
    """
    events: list[Event] = []
    for entry, content_sha, meta_json in checked:
        last_id += 1
        row_ts = ts if entry.ts is None else str(entry.ts)
        digest = sha256_hex(
            chain_payload(
                id=last_id,
                ts=row_ts,
                kind=entry.kind,
                session_id=entry.session_id,
                role=entry.role,
                content_sha256=content_sha,
                meta_json=meta_json,
                prev_hash=prev_hash,
                user_id=entry.user_id,
                with_user=entry.user_id is not None,
            )
        )
        events.append(
            Event(
                last_id,
                row_ts,
                entry.kind,
                entry.session_id,
                entry.role,
                entry.content,
                content_sha,
                dict(entry.meta or {}),
                prev_hash,
                digest,
                HASH_VERSION if entry.user_id is None else USER_HASH_VERSION,
                user_id=entry.user_id,
            )
        )
        prev_hash = digest
    return events


class ChainWalker:
    """Verifies stored rows one at a time, in id order (see :meth:`step`), then reports.

    Checks, per row: ``prev_hash`` equals the previous row's hash (the first row has none),
    the content (when present) matches ``content_sha256``, and ``hash`` is the hash of the
    row. Version-0 rows (the earlier PMM) verify only before the first version-1 row.
    Version-2 rows (those of a user) also cover ``user_id``; a version-0 or -1 row that
    carries a user (its session was assigned one later) needs a ``user_assigned`` event
    of its session naming that very user, so a row moved to another user never verifies.
    """

    def __init__(self, *, expect_head: str | None = None) -> None:
        self._started = time.perf_counter()
        self.expect_head = expect_head
        self._found_expected = expect_head is None
        self.rows = 0
        self.prev: str | None = None
        self.head_id: int | None = None
        self._seen_v1 = False
        self.bad: tuple[int, str] | None = None
        self._unhashed_users: dict[str, tuple[str, int]] = {}  # session -> (user, first id)
        self._assigned: dict[str, str] = {}  # session -> user, by user_assigned events

    def fail(self, id_: int, reason: str) -> None:
        """Record a row that cannot even be read (e.g. a text that does not decode) as the
        first one that does not verify."""
        self.rows += 1
        self.bad = (id_, reason)

    def step(
        self,
        id_: int,
        ts: str,
        kind: str,
        session_id: str | None,
        role: str | None,
        content: str | None,
        content_sha256: str,
        meta_json: str,
        prev_hash: str | None,
        digest: str,
        version: int,
        user_id: str | None = None,
    ) -> str | None:
        """Check one row; returns why it does not verify (and remembers it), else None."""
        self.rows += 1
        reason = self._check(
            id_, ts, kind, session_id, role, content, content_sha256, meta_json, prev_hash,
            digest, version, user_id,
        )  # fmt: skip
        if reason is None and user_id is not None:
            reason = self._check_user(id_, kind, session_id, user_id, version)
        if reason is not None:
            self.bad = (id_, reason)
            return reason
        self.prev = digest
        self.head_id = id_
        if digest == self.expect_head:
            self._found_expected = True
        return None

    def _check(
        self,
        id_: int,
        ts: str,
        kind: str,
        session_id: str | None,
        role: str | None,
        content: str | None,
        content_sha256: str,
        meta_json: str,
        prev_hash: str | None,
        digest: str,
        version: int,
        user_id: str | None,
    ) -> str | None:
        if prev_hash != self.prev:
            return (
                "prev_hash does not match the previous row's hash: a row "
                "before it was deleted, inserted, reordered or re-hashed"
            )
        if content is not None and sha256_hex(content) != content_sha256:
            return "content does not match content_sha256: the text was edited"
        if version in (HASH_VERSION, USER_HASH_VERSION):
            self._seen_v1 = True
            expected = sha256_hex(
                chain_payload(
                    id=id_,
                    ts=ts,
                    kind=kind,
                    session_id=session_id,
                    role=role,
                    content_sha256=content_sha256,
                    meta_json=meta_json,
                    prev_hash=prev_hash,
                    user_id=user_id,
                    with_user=version == USER_HASH_VERSION,
                )
            )
        elif version == LEGACY_HASH_VERSION and not self._seen_v1:
            if content is None:
                return "legacy row without content cannot be verified"
            expected = legacy_hash(prev_hash, kind, content, meta_json)
        else:
            return f"hash_version {version} is not allowed here"
        if digest != expected:
            return (
                "hash does not match the row: its id, ts, kind, session, "
                "role, meta, content_sha256 or user was changed"
            )
        return None

    def _check_user(
        self, id_: int, kind: str, session_id: str | None, user_id: str, version: int
    ) -> str | None:
        """A row with a user: a version-2 assignment records its session's user; an
        older row's user (not hashed) must be the one its session was assigned."""
        if session_id is None:
            return None if version == USER_HASH_VERSION else _UNHASHED_USER
        if version == USER_HASH_VERSION:
            if kind == ASSIGN_KIND:
                self._assigned.setdefault(session_id, user_id)
            return None
        first = self._unhashed_users.setdefault(session_id, (user_id, id_))
        if first[0] != user_id:
            return _UNHASHED_USER
        return None

    def report(self) -> VerifyReport:
        """The verdict over every row stepped so far (and whether the pinned head hash
        given to the constructor was among them)."""
        seconds = time.perf_counter() - self._started
        if self.bad is None:
            moved = [
                first_id
                for session, (user, first_id) in self._unhashed_users.items()
                if self._assigned.get(session) != user
            ]
            if moved:
                self.bad = (min(moved), _UNHASHED_USER)
        if self.bad is not None:
            return VerifyReport(
                False, self.rows, self.prev, self.head_id, self.bad[0], self.bad[1], seconds
            )
        if not self._found_expected:
            return VerifyReport(
                False,
                self.rows,
                self.prev,
                self.head_id,
                None,
                f"the pinned head {self.expect_head} is not in the log: "
                "it was cut back or rewritten",
                seconds,
            )
        return VerifyReport(True, self.rows, self.prev, self.head_id, None, None, seconds)


_UNHASHED_USER = (
    "the row carries a user that no user_assigned event of its session gave it: "
    "it was moved to another user"
)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
