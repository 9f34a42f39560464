"""Sealing new events onto their user's hash chain (issue 21), independent of any database:
each chain's secret and head (:class:`ChainState`) and :func:`seal_chains`, which gives
checked entries their ids and version-3 hashes. Re-exported by :mod:`pmm.events.chains`,
which also verifies them.

    state = ChainState(user_id="alice", secret=new_secret())
    events = seal_chains(checked, {"alice": state}, ids=[41], ts=utc_now())
    state.head_hash == events[-1].hash   # True: the head advanced
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pmm.events.chain import CheckedEvent
from pmm.events.hashing import CHAIN_HASH_VERSION, keyed_digest, payload_v3, sha256_hex
from pmm.records import Event

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
    ``user_id`` None is the chain of events without a user. ``user_digest`` is computed
    from the secret unless given (a memo of that very digest)."""

    user_id: str | None
    secret: bytes
    head_hash: str | None = None
    head_id: int = 0
    user_digest: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.user_digest is None and self.user_id is not None:
            self.user_digest = user_digest(self.secret, self.user_id)

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
    digest: Callable[[bytes, str, str], str] = keyed_digest,
) -> list[Event]:
    """Give checked entries (users already resolved) the ``ids`` (ascending) and chain each
    onto its user's chain in ``chains``, whose heads advance as they go (the caller stores
    them). The caller holds each chain's lock from reading its head until the rows are
    stored; ids taken under that lock keep one chain's ids increasing. ``digest``: how
    session digests are made (:func:`keyed_digest`, or a memo of it)."""
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
                session_digest = digest(state.secret, "session", entry.session_id)
                sessions[cache_key] = session_digest
        row_hash = sha256_hex(
            payload_v3(
                row_ts, entry.kind, entry.role, content_sha, meta_json, state.head_hash,
                state.user_digest, session_digest,
            )
        )  # fmt: skip
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
                row_hash,
                CHAIN_HASH_VERSION,
                user_id=entry.user_id,
                user_digest=state.user_digest,
                session_digest=session_digest,
            )
        )
        state.head_hash, state.head_id = row_hash, id_
    return events
