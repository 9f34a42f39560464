"""One hash chain per user (issue 21), independent of any database: sealing new events onto
their user's chain, walking stored rows of every chain (or one user's) to verify them, and
the Merkle root over the chains' heads that a deployment pins.

    state = ChainState(user_id="alice", secret=new_secret())
    events = seal_chains(checked, {"alice": state}, ids=[41], ts=utc_now())
    walker = ChainsWalker(keys=[("alice", state.secret)])
    for row in rows_in_id_order:           # see ChainsWalker.step for the columns
        if walker.step(*row) is not None:
            break
    report = walker.report()               # report.root, report.heads

Version-3 rows (:func:`pmm.events.hashing.chain_payload_v3`) link to the previous row of the
same chain, never to the global id order, so appends of different users need no common
lock. Rows written before (versions 0-2) are handed to :class:`pmm.events.chain.ChainWalker`
as the one legacy chain, exactly as before. See ``docs/design/chains.md``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pmm.events.chain import ASSIGN_KIND, ChainWalker, CheckedEvent
from pmm.events.hashing import (
    CHAIN_HASH_VERSION,
    HASH_VERSION,
    LEGACY_HASH_VERSION,
    USER_HASH_VERSION,
    chain_payload_v3,
    keyed_digest,
    sha256_hex,
)
from pmm.events.merkle import merkle_root
from pmm.records import Event, VerifyReport

NO_USER = "no-user"
"""The label of the chain of events without a user (in :attr:`VerifyReport.heads`)."""
LEGACY = "legacy"
"""The label of the rows written before one chain per user (versions 0-2)."""
NO_USER_KEY = ""
"""The ``chain_keys`` row of the chain without a user (a user id is never empty)."""


def new_secret() -> bytes:
    """A fresh random 32-byte chain secret."""
    return os.urandom(32)


def user_digest(secret: bytes, user_id: str) -> str:
    """The keyed digest of a user id (hex) that her rows' hashes cover."""
    return keyed_digest(secret, "user", user_id)


@dataclass(slots=True)
class ChainState:
    """One chain's secret and head, as the append path holds them under the chain's lock.
    ``user_id`` None is the chain of events without a user."""

    user_id: str | None
    secret: bytes
    head_hash: str | None = None
    head_id: int = 0
    user_digest: str | None = field(init=False)

    def __post_init__(self) -> None:
        self.user_digest = None if self.user_id is None else user_digest(self.secret, self.user_id)

    @property
    def label(self) -> str:
        """The chain's label in reports and in the Merkle tree."""
        return self.user_digest or NO_USER


def seal_chains(
    checked: Sequence[CheckedEvent],
    chains: Mapping[str | None, ChainState],
    *,
    ids: Sequence[int],
    ts: str,
) -> list[Event]:
    """Give checked entries (users already resolved) the ``ids`` (ascending) and chain each
    onto its user's chain in ``chains``, whose heads advance as they go (the caller stores
    them). The caller holds each chain's lock from reading its head until the rows are
    stored; ids taken under that lock keep one chain's ids increasing."""
    events: list[Event] = []
    sessions: dict[tuple[str | None, str], str] = {}
    for (entry, content_sha, meta_json), id_ in zip(checked, ids, strict=True):
        state = chains[entry.user_id]
        row_ts = ts if entry.ts is None else str(entry.ts)
        session_digest = None
        if entry.session_id is not None:
            cache_key = (entry.user_id, entry.session_id)
            session_digest = sessions.get(cache_key)
            if session_digest is None:
                session_digest = keyed_digest(state.secret, "session", entry.session_id)
                sessions[cache_key] = session_digest
        digest = sha256_hex(
            chain_payload_v3(
                ts=row_ts,
                kind=entry.kind,
                role=entry.role,
                content_sha256=content_sha,
                meta_json=meta_json,
                prev_hash=state.head_hash,
                user_digest=state.user_digest,
                session_digest=session_digest,
            )
        )
        events.append(
            Event(
                id_,
                row_ts,
                entry.kind,
                entry.session_id,
                entry.role,
                entry.content,
                content_sha,
                dict(entry.meta or {}),
                state.head_hash,
                digest,
                CHAIN_HASH_VERSION,
                user_id=entry.user_id,
                user_digest=state.user_digest,
                session_digest=session_digest,
            )
        )
        state.head_hash, state.head_id = digest, id_
    return events


@dataclass(slots=True)
class _Head:
    hash: str
    id: int


class ChainsWalker:
    """Verifies stored rows in id order, every chain at once or one user's (``user``:
    her id; only her rows are stepped then), and reports each chain's head and the root.

    ``keys`` are ``(chain key, secret)`` pairs: a user id, or :data:`NO_USER_KEY`. Per
    version-3 row: ``prev_hash`` is its chain's previous row (the first has none), the
    content matches ``content_sha256``, the hash covers the row with its stored digests,
    and the stored user and session ids are the ones those digests were made of (a row
    whose ids were erased keeps verifying by its digests). A row hashed without a user
    that carries one must have been assigned it (as for older rows). Older rows go to
    :class:`pmm.events.chain.ChainWalker` as the one legacy chain (with ``user``, only
    their user is checked: their links run through other users' rows).
    """

    def __init__(
        self,
        *,
        keys: Iterable[tuple[str, bytes]] = (),
        expect_head: str | None = None,
        user: str | None = None,
    ) -> None:
        self._started = time.perf_counter()
        self.legacy = ChainWalker()
        self.expect_head = expect_head
        self._found_expected = expect_head is None
        self._secrets: dict[str, bytes] = dict(keys)
        self._by_digest: dict[str, bytes] = {
            user_digest(secret, key): secret for key, secret in self._secrets.items() if key
        }
        self._scope = None
        if user is not None:
            secret = self._secrets.get(user)
            self._scope = None if secret is None else user_digest(secret, user)
        self.user = user
        self._sessions: dict[tuple[str | None, str], str] = {}
        self.chains: dict[str, _Head] = {}
        self.rows = 0
        self.last: _Head | None = None
        self.bad: tuple[int, str] | None = None
        self._seen_v3 = False

    def fail(self, id_: int, reason: str) -> None:
        """Record a row that cannot even be read as the first one that does not verify."""
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
        user_dig: str | None = None,
        session_dig: str | None = None,
    ) -> str | None:
        """Check one row; returns why it does not verify (and remembers it), else None."""
        if version not in _VERSIONS or (version != CHAIN_HASH_VERSION and self._seen_v3):
            # Rows of versions 0-2 were all written before the first version-3 row.
            self.rows += 1
            reason: str | None = f"hash_version {version} is not allowed here"
        elif version != CHAIN_HASH_VERSION:
            if self.user is None:
                self.rows += 1
                reason = self.legacy.step(
                    id_, ts, kind, session_id, role, content, content_sha256, meta_json,
                    prev_hash, digest, version, user_id,
                )  # fmt: skip
            else:
                reason = self._user_only(id_, kind, session_id, user_id, version)
        elif self.user is not None and (user_dig is None or user_dig != self._scope):
            # One user's rows outside her chain: assigned from the chain without a user
            # (checked there by a full verify), or moved into her rows.
            reason = (
                _MOVED
                if user_dig is not None
                else self._user_only(id_, kind, session_id, user_id, HASH_VERSION)
            )
        else:
            self.rows += 1
            self._seen_v3 = True
            reason = self._check(
                id_, ts, kind, session_id, role, content, content_sha256, meta_json,
                prev_hash, digest, user_id, user_dig, session_dig,
            )  # fmt: skip
        if reason is not None:
            self.bad = (id_, reason)
            return reason
        self.last = _Head(digest, id_)
        if digest == self.expect_head:
            self._found_expected = True
        return None

    def _user_only(
        self, id_: int, kind: str, session_id: str | None, user_id: str | None, version: int
    ) -> str | None:
        self.rows += 1
        if user_id is None:
            return None
        return self.legacy._check_user(id_, kind, session_id, user_id, version)

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
        user_id: str | None,
        user_dig: str | None,
        session_dig: str | None,
    ) -> str | None:
        label = user_dig or NO_USER
        head = self.chains.get(label)
        if prev_hash != (None if head is None else head.hash):
            return (
                "prev_hash does not match the previous row of its chain: a row of this "
                "user before it was deleted, moved, reordered or re-hashed"
            )
        if content is not None and sha256_hex(content) != content_sha256:
            return "content does not match content_sha256: the text was edited"
        expected = sha256_hex(
            chain_payload_v3(
                ts=ts,
                kind=kind,
                role=role,
                content_sha256=content_sha256,
                meta_json=meta_json,
                prev_hash=prev_hash,
                user_digest=user_dig,
                session_digest=session_dig,
            )
        )
        if digest != expected:
            return (
                "hash does not match the row: its ts, kind, role, meta, content_sha256, "
                "user or session digest was changed"
            )
        if reason := self._check_ids(id_, kind, session_id, user_id, user_dig, session_dig):
            return reason
        if head is None:
            self.chains[label] = _Head(digest, id_)
        else:
            head.hash, head.id = digest, id_
        return None

    def _check_ids(
        self,
        id_: int,
        kind: str,
        session_id: str | None,
        user_id: str | None,
        user_dig: str | None,
        session_dig: str | None,
    ) -> str | None:
        """The stored ids against the digests the hash covers (None: they match, or the
        ids were erased)."""
        if user_dig is None:
            secret = self._secrets.get(NO_USER_KEY)
            if user_id is not None:  # hashed without a user: assigned one later
                reason = self.legacy._check_user(id_, kind, session_id, user_id, HASH_VERSION)
                if reason is not None:
                    return reason
        else:
            secret = self._by_digest.get(user_dig)
            if user_id is not None:
                own = self._secrets.get(user_id)
                if own is None:
                    return _NO_KEY
                if user_digest(own, user_id) != user_dig:
                    return _MOVED
                if kind == ASSIGN_KIND and session_id is not None:
                    self.legacy._check_user(id_, kind, session_id, user_id, USER_HASH_VERSION)
        if session_id is None:
            return None
        if secret is None:
            return _NO_KEY
        cache_key = (user_dig, session_id)
        expected = self._sessions.get(cache_key)
        if expected is None:
            expected = keyed_digest(secret, "session", session_id)
            self._sessions[cache_key] = expected
        if session_dig != expected:
            return (
                "the row's session is not the one its hash covers: it was moved to another session"
            )
        return None

    def report(self) -> VerifyReport:
        """The verdict over every row stepped so far, each chain's head, the root over
        them (a whole-log walk) and whether the pinned head or root was reached."""
        legacy = self.legacy.report()
        if self.bad is None and not legacy.ok:
            self.bad = (legacy.first_bad_id or 0, legacy.reason or "")
        heads = {label: head.hash for label, head in self.chains.items()}
        root = None
        user_head = None
        if self.user is None:
            if self.legacy.prev is not None:
                heads[LEGACY] = self.legacy.prev
            root = merkle_root(heads)
        elif self._scope is not None and self._scope in heads:
            user_head = heads[self._scope]
        found = self._found_expected or (root is not None and root == self.expect_head)
        reason = None if self.bad is None else self.bad[1]
        if self.bad is None and not found:
            reason = (
                f"the pinned head {self.expect_head} is not in the log (neither the root "
                + ("nor a row" if self.user is None else "nor a row of this user's chain")
                + "): it was cut back or rewritten (or the log grew since a root was pinned)"
            )
        return VerifyReport(
            ok=reason is None,
            rows=self.rows,
            head=None if self.last is None else self.last.hash,
            head_id=None if self.last is None else self.last.id,
            first_bad_id=None if self.bad is None else self.bad[0],
            reason=reason,
            seconds=time.perf_counter() - self._started,
            root=root,
            heads=heads,
            user_head=user_head,
        )


_VERSIONS = frozenset({LEGACY_HASH_VERSION, HASH_VERSION, USER_HASH_VERSION, CHAIN_HASH_VERSION})
_NO_KEY = "no chain key holds this row's user: its key was deleted or never stored"
_MOVED = (
    "the row's user is not the one its hash covers: it was moved to another user "
    "(or its user's chain key was replaced)"
)


def key_heads(
    events: Iterable[Event], keys: Iterable[tuple[str, bytes]]
) -> dict[str, tuple[int, str]]:
    """``{chain key: (head id, head hash)}`` of the version-3 ``events`` (any order), for
    an import that must record each chain's head beside its secret (``keys``)."""
    by_digest: dict[str | None, str] = {
        (user_digest(secret, key) if key else None): key for key, secret in keys
    }
    heads: dict[str, tuple[int, str]] = {}
    for event in events:
        if event.hash_version != CHAIN_HASH_VERSION:
            continue
        key = by_digest.get(event.user_digest)
        if key is not None and (key not in heads or heads[key][0] < event.id):
            heads[key] = (event.id, event.hash)
    return heads
