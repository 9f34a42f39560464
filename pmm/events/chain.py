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
from collections.abc import Sequence
from typing import NamedTuple

from pmm.errors import InvalidInputError
from pmm.events.hashing import (
    HASH_VERSION,
    LEGACY_HASH_VERSION,
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
            entry.kind, content, entry.session_id, entry.role, meta, normalize_ts(entry.ts)
        )
    return CheckedEvent(entry, hashlib.sha256(encoded).hexdigest(), meta_json)


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
                HASH_VERSION,
            )
        )
        prev_hash = digest
    return events


class ChainWalker:
    """Verifies stored rows one at a time, in id order (see :meth:`step`), then reports.

    Checks, per row: ``prev_hash`` equals the previous row's hash (the first row has none),
    the content (when present) matches ``content_sha256``, and ``hash`` is the hash of the
    row. Version-0 rows (the earlier PMM) verify only before the first version-1 row.
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
    ) -> str | None:
        """Check one row; returns why it does not verify (and remembers it), else None."""
        self.rows += 1
        reason = self._check(
            id_, ts, kind, session_id, role, content, content_sha256, meta_json, prev_hash,
            digest, version,
        )  # fmt: skip
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
    ) -> str | None:
        if prev_hash != self.prev:
            return (
                "prev_hash does not match the previous row's hash: a row "
                "before it was deleted, inserted, reordered or re-hashed"
            )
        if content is not None and sha256_hex(content) != content_sha256:
            return "content does not match content_sha256: the text was edited"
        if version == HASH_VERSION:
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
                "role, meta or content_sha256 was changed"
            )
        return None

    def report(self) -> VerifyReport:
        """The verdict over every row stepped so far (and whether the pinned head hash
        given to the constructor was among them)."""
        seconds = time.perf_counter() - self._started
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


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
