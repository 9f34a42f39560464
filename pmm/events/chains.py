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

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from hashlib import sha256

from pmm.events.chain import ASSIGN_KIND, ChainWalker
from pmm.events.hashing import (
    CHAIN_HASH_VERSION,
    HASH_VERSION,
    LEGACY_HASH_VERSION,
    USER_HASH_VERSION,
    keyed_digest,
    payload_v3,
)
from pmm.events.merkle import merkle_root
from pmm.events.sealing import (
    LEGACY,
    NO_USER,
    NO_USER_KEY,
    ChainState,
    new_secret,
    seal_chains,
    user_digest,
)
from pmm.records import Event, VerifyReport

__all__ = [
    "LEGACY",
    "NO_USER",
    "NO_USER_KEY",
    "ChainState",
    "ChainsWalker",
    "key_heads",
    "new_secret",
    "seal_chains",
    "user_digest",
]


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

    Rows removed from a chain are named as such, not blamed on a row that is there:
    ``heads`` (``{chain key: (head id, head hash)}``, what the store recorded at its last
    append, read in the same snapshot as the rows) is compared with the last row walked
    of each chain, so a chain cut at its end fails ("chain 'alice' ends at id 40 but its
    recorded head is 45: events were removed from its end"); and a row that links to a
    row no longer in the log (``find(hash)`` answers None), while its own text and hash
    verify, is reported as a removal before it (what an honest append after such a cut
    looks like): ``first_bad_id`` is that row, where the walk stopped, and the reason says
    it is intact and what was removed.
    """

    def __init__(
        self,
        *,
        keys: Iterable[tuple[str, bytes]] = (),
        expect_head: str | None = None,
        user: str | None = None,
        heads: Mapping[str, tuple[int, str | None]] | None = None,
        find: Callable[[str], int | None] | None = None,
    ) -> None:
        self._started = time.perf_counter()
        self.legacy = ChainWalker()
        self.expect_head = expect_head
        self._found_expected = expect_head is None
        self._secrets: dict[str, bytes] = dict(keys)
        self._labels: dict[str, str] = {  # chain key -> the label its rows carry
            key: NO_USER if key == NO_USER_KEY else user_digest(secret, key)
            for key, secret in self._secrets.items()
        }
        self._by_digest: dict[str, bytes] = {
            self._labels[key]: secret for key, secret in self._secrets.items() if key
        }
        self._recorded = dict(heads or {})
        self._find = find
        self._scope = None
        if user is not None:
            secret = self._secrets.get(user)
            self._scope = None if secret is None else user_digest(secret, user)
        self.user = user
        self._sessions: dict[tuple[str | None, str], str] = {}
        self.chains: dict[str, _Head] = {}
        self.rows = 0
        self._last_hash: str | None = None
        self._last_id = 0
        self._own: dict[str, str | None] = {}  # user id -> her digest (None: no key)
        self._ids_ok: set[tuple[str | None, ...]] = set()  # ids that matched their digests
        self.bad: tuple[int | None, str] | None = None
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
        if version == CHAIN_HASH_VERSION and (
            self.user is None or (user_dig is not None and user_dig == self._scope)
        ):  # a row of a chain walked: nearly every row, so checked here, inline
            self.rows += 1
            self._seen_v3 = True
            label = user_dig or NO_USER
            head = self.chains.get(label)
            if prev_hash != (None if head is None else head.hash):
                reason: str | None = _UNLINKED
                if self._removed_before(prev_hash, content, content_sha256, digest, (
                    ts, kind, role, content_sha256, meta_json, prev_hash, user_dig, session_dig
                )):  # fmt: skip
                    self.bad = (id_, self._removal(label, head, id_))
                    return self.bad[1]
            elif content is not None and sha256(content.encode()).hexdigest() != content_sha256:
                reason = _EDITED
            elif (
                digest
                != sha256(
                    payload_v3(
                        ts, kind, role, content_sha256, meta_json, prev_hash, user_dig, session_dig
                    ).encode()
                ).hexdigest()
            ):
                reason = _REHASHED
            else:
                ids = (user_id, user_dig, session_id, session_dig)
                if ids in self._ids_ok and kind != ASSIGN_KIND:
                    reason = None
                else:
                    reason = self._check_ids(id_, kind, session_id, user_id, user_dig, session_dig)
                    if reason is None and (user_id is None or user_dig is not None):
                        # a pure function of these four (the keys do not change): an
                        # assigned row's check depends on the assignments seen so far
                        self._ids_ok.add(ids)
                if reason is None:
                    if head is None:
                        self.chains[label] = _Head(digest, id_)
                    else:
                        head.hash, head.id = digest, id_
        elif version not in _VERSIONS or (version != CHAIN_HASH_VERSION and self._seen_v3):
            # Rows of versions 0-2 were all written before the first version-3 row.
            self.rows += 1
            reason = f"hash_version {version} is not allowed here"
        elif version != CHAIN_HASH_VERSION:
            if self.user is None:
                self.rows += 1
                reason = self.legacy.step(
                    id_, ts, kind, session_id, role, content, content_sha256, meta_json,
                    prev_hash, digest, version, user_id,
                )  # fmt: skip
            else:
                reason = self._user_only(id_, kind, session_id, user_id, version)
        else:
            # One user's rows outside her chain: assigned from the chain without a user
            # (checked there by a full verify), or moved into her rows.
            reason = (
                _MOVED
                if user_dig is not None
                else self._user_only(id_, kind, session_id, user_id, HASH_VERSION)
            )
        if reason is not None:
            self.bad = (id_, reason)
            return reason
        self._last_hash, self._last_id = digest, id_
        if digest == self.expect_head:
            self._found_expected = True
        return None

    def _removed_before(
        self,
        prev_hash: str | None,
        content: str | None,
        content_sha256: str,
        digest: str,
        fields: tuple[str, str, str | None, str, str, str | None, str | None, str | None],
    ) -> bool:
        """Whether an unlinked row is intact and follows a row that is no longer in the
        log (rows were removed before it), rather than being moved, reordered or edited."""
        if self._find is None or prev_hash is None:
            return False
        if content is not None and sha256(content.encode()).hexdigest() != content_sha256:
            return False
        if digest != sha256(payload_v3(*fields).encode()).hexdigest():
            return False
        return self._find(prev_hash) is None

    def _name(self, label: str) -> str:
        """A chain as a person reads it: ``'alice'``, or ``without a user``."""
        for key, found in self._labels.items():
            if found == label:
                return "without a user" if key == NO_USER_KEY else repr(key)
        return f"of user digest {label[:16]}"

    def _removal(self, label: str, head: _Head | None, id_: int) -> str:
        name = self._name(label)
        if head is None:
            return (
                f"chain {name} starts at id {id_}, whose row is intact but follows a row "
                "that is no longer in the log: events were removed from the start of the "
                "chain"
            )
        return (
            f"chain {name} breaks between id {head.id} and id {id_}: the row at id {id_} "
            f"is intact but follows a row that is no longer in the log: events were "
            f"removed from the chain's end before id {id_} was appended (or rows between "
            f"were deleted, or the row at id {head.id} was rewritten and re-hashed)"
        )

    def _heads_reason(self) -> tuple[int | None, str] | None:
        """The first chain whose last row walked is not the head its store recorded (the
        hashes are compared: v3 rows do not hash their ids, so a renumbered head still
        matches)."""
        for key, (head_id, head_hash) in sorted(self._recorded.items()):
            label = self._labels.get(key)
            if label is None or head_id <= 0 or head_hash is None:
                continue  # a chain without rows yet, or one this walk does not cover
            walked = self.chains.get(label)
            if walked is not None and walked.hash == head_hash:
                continue
            name = self._name(label)
            if walked is None:
                return None, (
                    f"chain {name} has no rows but its recorded head is {head_id}: "
                    "events were removed from its end (all of them)"
                )
            if walked.id < head_id:
                return None, (
                    f"chain {name} ends at id {walked.id} but its recorded head is "
                    f"{head_id}: events were removed from its end"
                )
            if walked.id > head_id:
                return walked.id, (
                    f"chain {name} goes on to id {walked.id} past its recorded head "
                    f"{head_id}: rows were added to it outside PMM (or its head was set back)"
                )
            return walked.id, (
                f"chain {name} ends at id {walked.id}, but its hash is not the recorded "
                "head's: the row was rewritten and re-hashed (or the recorded head was)"
            )
        return None

    def _user_only(
        self, id_: int, kind: str, session_id: str | None, user_id: str | None, version: int
    ) -> str | None:
        self.rows += 1
        if user_id is None:
            return None
        return self.legacy._check_user(id_, kind, session_id, user_id, version)

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
                if user_id in self._own:
                    own = self._own[user_id]
                else:
                    key = self._secrets.get(user_id)
                    own = self._own[user_id] = None if key is None else user_digest(key, user_id)
                if own is None:
                    return _NO_KEY
                if own != user_dig:
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
        if self.bad is None:
            self.bad = self._heads_reason()
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
        if not found and (self.bad is None or self.bad[0] is None):
            pinned = (
                f"the pinned head {self.expect_head} is not in the log (neither the root "
                + ("nor a row" if self.user is None else "nor a row of this user's chain")
                + "): it was cut back or rewritten (or the log grew since a root was pinned)"
            )
            reason = pinned if reason is None else f"{reason}; {pinned}"
        return VerifyReport(
            ok=reason is None,
            rows=self.rows,
            head=self._last_hash,
            head_id=None if self._last_hash is None else self._last_id,
            first_bad_id=None if self.bad is None else self.bad[0],
            reason=reason,
            seconds=time.perf_counter() - self._started,
            root=root,
            heads=heads,
            user_head=user_head,
        )


_VERSIONS = frozenset({LEGACY_HASH_VERSION, HASH_VERSION, USER_HASH_VERSION, CHAIN_HASH_VERSION})
_UNLINKED = (
    "prev_hash does not match the previous row of its chain: a row of this user before it "
    "was deleted, moved, reordered or re-hashed"
)
_EDITED = "content does not match content_sha256: the text was edited"
_REHASHED = (
    "hash does not match the row: its ts, kind, role, meta, content_sha256, user or session "
    "digest was changed"
)
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
