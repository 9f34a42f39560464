"""The one-call append of the PostgreSQL store (issue 21, migrations/0011, 0012): what a store
remembers of its own appends, and the optimistic append that trusts it only as far as
the server confirms it.

    cache = AppendCache(radius=3)
    events = cache.append(db, checked, unique_meta=None)   # None: append the two-call way
    ...                                                    # (append_locked), then:
    cache.learn(seen)                                      # after that transaction commits

The two-call path (:func:`pmm.storage.postgres.chains.append_locked`) reads, under its
locks, each chain's secret and head, the sessions' owners, the windowed sessions' newest
turns and the stored ``unique_meta`` pairs; then it hashes the rows and writes them. After
it commits, :meth:`AppendCache.learn` keeps what it read, advanced by what it wrote. The
next append of the same chains is hashed in Python against those values and sent as one
statement in autocommit, ``pmm_append_fast``, which takes the same locks in the same
order and compares every one of those values with the client's before it writes: the rows
are then exactly the rows the two-call path would have written. When anything differs
(another store appended to the chain or the session, an erasure, a redaction, a
compaction, an assignment, a duplicate message) it writes nothing and answers "stale";
:meth:`AppendCache.append` returns None and the caller appends the two-call way, which
refreshes the cache. Nothing here is trusted without that check, so a cache that is wrong
costs one round trip, never a wrong row.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pmm.errors import InvalidInputError
from pmm.events.chain import CheckedEvent, resolve_owners
from pmm.events.chains import NO_USER_KEY, ChainState, seal_chains
from pmm.events.exactly_once import unique_pairs
from pmm.events.hashing import keyed_digest, utc_now
from pmm.records import Event
from pmm.storage.postgres.windows import TAIL_KINDS, appended_windows
from pmm.text.window_keys import WINDOW_KINDS, WINDOW_TURN_CHARS

if TYPE_CHECKING:
    from pmm.storage.postgres.connection import Database

PLACEHOLDER = 1 << 60
"""The ids the client gives the rows it sends (``PLACEHOLDER + n`` for the n-th, above any
real id, so the window keys order them after the stored turns); the server puts the ids
it takes from the sequence in their place."""
_FAST = "SELECT pmm_append_fast(%s::jsonb)"
SESSIONS_KEPT = 1024
"""Sessions whose owner and newest turns a store remembers (those it appended to last; a
session's turns hold up to ``2 * radius`` times 16,384 characters)."""
CHAINS_KEPT = 65_536
"""Chains (and keyed digests) a store remembers; past that it starts over."""


@dataclass(slots=True)
class Seen:
    """What one two-call append read and wrote, for :meth:`AppendCache.learn` after its
    transaction commits: the chains as the append left them, the named sessions' owners
    (``owners``: those that hold events; ``named``: every named session of the append),
    the newest turns it read of its windowed sessions (``tails``, newest first, as
    ``pmm_session_tail`` answers) and the events written."""

    states: list[ChainState] = field(default_factory=list)
    owners: dict[str, str | None] = field(default_factory=dict)
    named: set[str] = field(default_factory=set)
    windowed: set[str] = field(default_factory=set)
    tails: list[list[Any]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


class AppendCache:
    """One store's memory of its appends (see the module docstring). Thread-safe: the
    store's threads share it; two of them racing on one chain both send, one wins, the
    other is told "stale" and appends the two-call way. ``fast`` and ``stale`` count the
    appends that went through in one call and those the server sent back (``reasons``:
    by what differed)."""

    def __init__(self, radius: int) -> None:
        self.tail = 2 * radius
        self.fast = 0
        self.stale = 0
        self.reasons: dict[str, int] = {}
        """How many appends the server sent back, by what differed ("chains", "owners",
        "tails", "unique")."""
        self._lock = threading.Lock()
        self._chains: dict[str, ChainState] = {}  # chain key -> its secret and head
        self._owners: dict[str, str | None] = {}  # session that holds events -> its user
        self._tails: dict[str, list[list[Any]]] = {}  # session -> its newest turns
        self._digests: dict[tuple[bytes, str, str], str] = {}
        self._terms: dict[int, dict[str, tuple[str, int]]] = {}  # tail row id -> its terms

    def learn(self, seen: Seen) -> None:
        """Remember what a committed two-call append read and wrote."""
        with self._lock:
            for state in seen.states:
                self._chains[_key(state.user_id)] = replace(state)
            for session in seen.named:
                if session in seen.owners:
                    self._owners[session] = seen.owners[session]
                else:
                    self._owners.pop(session, None)
                    self._drop_tail(session)
            for session in seen.windowed & seen.owners.keys():  # new ones: _advance
                self._drop_tail(session)
                self._tails[session] = [r for r in seen.tails if r[0] == session]
                for row in self._tails[session]:  # their text may have changed
                    self._terms.pop(row[1], None)
            self._advance(seen.events)

    def _advance(self, events: Sequence[Event]) -> None:
        """Move the remembered heads, owners and tails past ``events`` (lock held)."""
        for e in events:
            state = self._chains.get(_key(e.user_id))
            if state is not None:
                state.head_hash, state.head_id = e.hash, e.id
            if e.session_id is None:
                continue
            if e.session_id not in self._owners:  # begun by these events: no turns before
                self._owners[e.session_id] = e.user_id
                self._tails[e.session_id] = []
            else:  # the most recently used last, the first to go when there are too many
                self._owners[e.session_id] = self._owners.pop(e.session_id)
            tail = self._tails.get(e.session_id)
            if tail is not None and e.kind in TAIL_KINDS:
                body = None if e.content is None else e.content[:WINDOW_TURN_CHARS]
                tail.insert(0, [e.session_id, e.id, e.kind, e.ts, body])
                for row in tail[self.tail :]:
                    self._terms.pop(row[1], None)
                del tail[self.tail :]
        self._trim()

    def _trim(self) -> None:
        """Forget the least recently used sessions past :data:`SESSIONS_KEPT`, and start
        over past :data:`CHAINS_KEPT` chains or digests (lock held)."""
        while len(self._owners) > SESSIONS_KEPT:
            oldest = next(iter(self._owners))
            self._drop_tail(oldest)
            del self._owners[oldest]
        if len(self._chains) > CHAINS_KEPT:
            self._chains.clear()
        if len(self._digests) > CHAINS_KEPT:
            self._digests.clear()

    def _drop_tail(self, session: str) -> None:
        for row in self._tails.pop(session, []):
            self._terms.pop(row[1], None)

    def _digest(self, secret: bytes, what: str, value: str) -> str:
        key = (secret, what, value)
        found = self._digests.get(key)
        if found is None:
            found = self._digests[key] = keyed_digest(secret, what, value)
        return found

    def append(
        self, db: Database, checked: list[CheckedEvent], unique_meta: str | None
    ) -> list[Event] | None:
        """Append ``checked`` in one statement when this cache knows every value the
        append depends on and the server confirms them; None when it does not (nothing
        was written: append the two-call way)."""
        with self._lock:
            request = self._request(checked, unique_meta)
        if request is None:
            return None
        payload, events, counted = request
        with db.session() as conn:
            row = conn.execute(_FAST, (_dumps(payload),)).fetchone()
        answer: dict[str, Any] = {} if row is None else row[0]
        if "ids" not in answer:
            with self._lock:
                self.stale += 1
                reason = str(answer.get("stale"))
                self.reasons[reason] = self.reasons.get(reason, 0) + 1
            return None
        ids: list[int] = answer["ids"]
        events = [replace(e, id=i) for e, i in zip(events, ids, strict=True)]
        with self._lock:
            self.fast += 1
            for n, real in enumerate(ids):
                terms = counted.pop(PLACEHOLDER + n, None)
                if terms is not None:
                    counted[real] = terms
            self._terms.update(counted)
            self._advance(events)
        return events

    def _request(
        self, checked: list[CheckedEvent], unique_meta: str | None
    ) -> tuple[dict[str, Any], list[Event], dict[int, dict[str, tuple[str, int]]]] | None:
        """The ``pmm_append_fast`` document, the sealed events (placeholder ids) and the
        window rows' terms by id, or None when something the append needs is not
        remembered (lock held)."""
        if any(c.entry.session_id is None and c.entry.kind in WINDOW_KINDS for c in checked):
            return None  # the turns without a session are read from every partition
        owners = self._owners
        try:
            resolved = resolve_owners(checked, lambda s: (s in owners, owners.get(s)))
        except InvalidInputError:
            return None  # maybe so, maybe an old owner: the two-call path says which
        states: dict[str | None, ChainState] = {}
        for c in resolved:
            user = c.entry.user_id
            if user not in states:
                known = self._chains.get(_key(user))
                if known is None:
                    return None
                states[user] = replace(known)
        named = sorted({c.entry.session_id for c in resolved if c.entry.session_id})
        windowed = sorted(
            {c.entry.session_id for c in resolved if c.entry.kind in WINDOW_KINDS} - {None},
            key=str,
        )
        tails: list[list[Any]] = []
        for session in windowed:
            if session in owners:
                tail = self._tails.get(str(session))
                if tail is None:
                    return None
                tails.append([session, list(tail) or None])
        expected = [[_key(u), s.secret.hex(), s.head_id, s.head_hash] for u, s in states.items()]
        events = seal_chains(
            resolved,
            states,
            ids=[PLACEHOLDER + n for n in range(len(resolved))],
            ts=utc_now(),
            digest=self._digest,
        )
        rows = [
            (e.id, e.ts, e.kind, e.session_id, e.role, e.content, e.content_sha256,
             c.meta_json, e.prev_hash, e.hash, e.hash_version, e.user_id, e.user_digest,
             e.session_digest)
            for e, c in zip(events, resolved, strict=True)
        ]  # fmt: skip
        flat = [row for _, tail in tails for row in tail or []]
        counted = {r[1]: self._terms[r[1]] for r in flat if r[1] in self._terms}
        appended = [(e.id, e.kind, e.session_id, e.ts, e.content) for e in events]
        pairs = sorted(unique_pairs(resolved, unique_meta))
        payload = {
            "sessions": sorted({c.entry.session_id or "" for c in resolved}),
            "named": named,
            "owners": [[s, owners[s]] for s in named if s in owners],
            "chains": expected,
            "tails": tails,
            "kinds": TAIL_KINDS,
            "tail": self.tail,
            "chars": WINDOW_TURN_CHARS,
            "unique": {"field": unique_meta, "pairs": pairs} if unique_meta and pairs else None,
            "base": PLACEHOLDER,
            "rows": rows,
            "heads": [[_key(s.user_id), s.head_id, s.head_hash] for s in states.values()],
            "windows": (
                appended_windows(flat, appended, self.tail // 2, counted) if windowed else []
            ),
            "begun": _begun(events, owners),
        }
        return payload, events, counted


def _begun(events: Iterable[Event], owners: dict[str, str | None]) -> list[list[str | None]]:
    """``[session, user]`` of each session these events begin."""
    begun: dict[str, str | None] = {}
    for e in events:
        if e.session_id is not None and e.session_id not in owners:
            begun.setdefault(e.session_id, e.user_id)
    return [[s, u] for s, u in begun.items()]


def _key(user: str | None) -> str:
    return NO_USER_KEY if user is None else user


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
