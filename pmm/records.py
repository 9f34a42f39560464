"""The records PMM hands out: events, verify reports, search hits, dream reports."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, NamedTuple


@dataclass(frozen=True, slots=True)
class Event:
    """One row of the event log.

    The first fields are chained (covered by ``hash``); ``summary``, ``keywords`` and
    ``digest_method`` are derived data that can be recomputed at any time.
    """

    id: int
    ts: str
    kind: str
    session_id: str | None
    role: str | None
    content: str | None
    content_sha256: str
    meta: dict[str, Any]
    prev_hash: str | None
    hash: str
    hash_version: int = 1
    summary: str | None = None
    keywords: list[str] = field(default_factory=list)
    digest_method: str | None = None
    user_id: str | None = None
    """The user (tenant) the event's session belongs to, or None (a log without users).
    Chained for ``hash_version`` 2; see :mod:`pmm.events.hashing`."""
    user_digest: str | None = None
    """Version 3: the keyed digest of the user that the hash covers (hex; None: the
    chain of events without a user). Set on appended events; see :mod:`pmm.events.chains`."""
    session_digest: str | None = None
    """Version 3: the keyed digest of the session that the hash covers (hex), or None."""

    @property
    def text(self) -> str:
        """The content, or ``""`` when it was redacted."""
        return self.content or ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (used by export and ``--json``)."""
        return {
            "id": self.id,
            "ts": self.ts,
            "kind": self.kind,
            "session_id": self.session_id,
            "role": self.role,
            "content": self.content,
            "content_sha256": self.content_sha256,
            "meta": self.meta,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
            "hash_version": self.hash_version,
            "summary": self.summary,
            "keywords": list(self.keywords),
            "digest_method": self.digest_method,
            "user_id": self.user_id,
            **(
                {}
                if self.hash_version != 3
                else {"user_digest": self.user_digest, "session_digest": self.session_digest}
            ),
        }


def event_from_row(row: Sequence[Any]) -> Event:
    """An :class:`Event` from a row of the event log's columns in their schema order
    (id, ts, kind, session_id, role, content, content_sha256, meta, prev_hash, hash,
    hash_version, summary, keywords, digest_method[, user_id, user_digest,
    session_digest]), as both storage backends
    read them."""
    n = len(row)
    values = (
        int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6],
        json.loads(row[7]) if row[7] and row[7] != "{}" else {},
        row[8], row[9], int(row[10]), row[11],
        json.loads(row[12]) if row[12] else [],
        row[13],
        row[14] if n > 14 else None,
        row[15] if n > 15 else None,
        row[16] if n > 16 else None,
    )  # fmt: skip
    # every field set through its slot: what the frozen dataclass's __init__ does, without
    # its object.__setattr__ call by name per field (recall reads ~150 rows per query)
    event: Event = _new_event(Event)
    for put, value in zip(_EVENT_SLOTS, values, strict=True):
        put(event, value)
    return event


_new_event = object.__new__
_EVENT_SLOTS = tuple(getattr(Event, f.name).__set__ for f in fields(Event))
"""Each field's slot setter, in the order of the fields (event_from_row's values)."""


class TurnRow(NamedTuple):
    """The few columns that context assembly reads, for speed (see ``EventStore.turn_rows``)."""

    id: int
    ts: str
    kind: str
    session_id: str | None
    role: str | None
    content: str | None
    summary: str | None


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append, before the store gives it an id, a timestamp and a hash."""

    kind: str
    content: str
    session_id: str | None = None
    role: str | None = None
    meta: dict[str, Any] | None = None
    ts: str | datetime | None = None
    """The conversation time, for imports of past conversations (None = now): a
    ``datetime`` (naive = UTC) or an ISO-8601 string. Stored and hashed as the row's ``ts``."""
    user_id: str | None = None
    """The user (tenant) who owns the session. None takes the session's owner, if it has
    one; a session belongs to one user, so another user is refused (see
    :func:`pmm.events.chain.check_owners`)."""


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :meth:`EventStore.verify` found.

    ``ok`` is False when a row does not verify (``first_bad_id`` and ``reason`` say which
    and why) or when a pinned head hash is no longer reached.
    """

    ok: bool
    rows: int
    head: str | None
    head_id: int | None = None
    first_bad_id: int | None = None
    reason: str | None = None
    seconds: float = 0.0
    root: str | None = None
    """The Merkle root over every chain's ``(label, head hash)`` (see
    :func:`pmm.events.chains.merkle_root`): the one value to pin for the whole log. None
    for a one-user verify and for an empty log."""
    heads: dict[str, str] = field(default_factory=dict)
    """Each chain's head hash by label: a user's keyed digest, ``"no-user"`` for events
    without a user, ``"legacy"`` for the rows written before one chain per user."""
    user_head: str | None = None
    """With ``verify(user_id=...)``: that user's chain head (None: she has no chain)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ok": self.ok,
            "rows": self.rows,
            "head": self.head,
            "head_id": self.head_id,
            "first_bad_id": self.first_bad_id,
            "reason": self.reason,
            "seconds": round(self.seconds, 6),
            "root": self.root,
            "chains": len(self.heads),
        }
        if self.user_head is not None:
            out["user_head"] = self.user_head
        return out


@dataclass(frozen=True, slots=True)
class Hit:
    """A recalled event, its fused score and the rankers that found it (``turn``,
    ``window``, ``dense``), with the rank each gave it (1 = best)."""

    event: Event
    score: float
    rankers: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DreamReport:
    """What :meth:`Mind.dream` did: events digested and embedded (and by which method),
    session summaries written and contradictions found."""

    digested: int = 0
    embedded: int = 0
    methods: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    seconds: float = 0.0
    summaries: int = 0
    """Session summary nodes written (new sessions and new versions)."""
    superseded_summaries: int = 0
    """Of those, new versions that replaced an older summary."""
    dropped_bullets: int = 0
    """Bullets of llm summaries dropped for citing turns outside the session."""
    contradictions: int = 0
    """Older user statements marked superseded by a newer one."""
    llm_calls: int = 0
    """Chat-model calls consolidation made (summaries, compression, contradiction checks)."""
    compressed: int = 0
    """Old texts stored compressed by this dream (``PMM_COMPRESS_AFTER``; lossless)."""
