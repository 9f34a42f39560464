"""The SQLite side of one chain per user (``chains`` table, migrations/0015): each chain's
secret and head, read and advanced inside the append's write transaction, and the
per-store memo (:class:`ChainCache`) that spares an append re-reading them.

    cache = ChainCache()
    last_id = cache.begin(conn)                   # inside BEGIN IMMEDIATE
    states = open_chains(conn, {"alice", None}, cache)  # a missing chain gets a secret
    ...                                           # seal_chains(..., states, ...), insert
    save_heads(conn, states.values())
    cache.end(conn, last_id + len(rows))          # still inside the transaction

:func:`append_locked` does all of it: ``events = append_locked(conn, cache, checked)``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping

from pmm.events.chain import CheckedEvent, resolve_owners
from pmm.events.chains import NO_USER_KEY, ChainState, new_secret, seal_chains
from pmm.events.hashing import keyed_digest, utc_now
from pmm.records import Event
from pmm.storage.sqlite.rows import INSERT

_LIMIT = 4096
"""How many sessions' owners and keyed digests a store remembers (then it starts over)."""


class ChainCache:
    """What the appends of one :class:`~pmm.storage.sqlite.EventStore` remember between
    transactions: each chain's secret and head, the owners of the sessions appended to,
    the newest id, and keyed digests (HMACs) already computed.

    The digests are memoised by ``(secret, what, value)``: a secret that changed (a user
    erased and back) simply misses, so they never go stale. Everything else is trusted
    only while nothing else has written: :meth:`begin` (under the write lock) compares
    ``PRAGMA data_version`` (moves when another connection, in any process, commits),
    the connection's ``total_changes`` (moves with every row this connection writes
    outside an append: an erasure, an assignment, an import, a digest) and the newest
    id (falls back when a transaction that appended rolled back) to what :meth:`end`
    recorded, and forgets all of it on any difference, so the chains are read again.
    """

    def __init__(self) -> None:
        self._stamp: tuple[int, int, int] | None = None  # (data_version, changes, last id)
        self._version = 0  # data_version as begin() read it: fixed while the lock is held
        self.states: dict[str | None, ChainState] = {}
        self.owners: dict[str, tuple[bool, str | None]] = {}
        self._digests: dict[tuple[bytes, str, str], str] = {}

    def begin(self, conn: sqlite3.Connection) -> int:
        """The newest event id, read inside the write transaction; forgets the chains
        and owners unless nothing was written since :meth:`end`."""
        last, version = conn.execute(
            "SELECT (SELECT max(id) FROM events), (SELECT data_version FROM pragma_data_version)"
        ).fetchone()
        last, self._version = int(last or 0), int(version)
        if self._stamp != (self._version, conn.total_changes, last):
            self.forget()
        self._stamp = None  # until end(): an append that fails half-way leaves nothing
        return last

    def end(self, conn: sqlite3.Connection, last_id: int) -> None:
        """Trust what the append left (its chains' heads, its sessions' owners) until
        something else writes: call it after the append's last statement, inside its
        transaction (a rollback takes the newest id back, which :meth:`begin` sees)."""
        self._stamp = (self._version, conn.total_changes, last_id)

    def forget(self) -> None:
        """Drop the chains' states and sessions' owners (not the digests: see above)."""
        self._stamp = None
        self.states.clear()
        self.owners.clear()

    def digest(self, secret: bytes, what: str, value: str) -> str:
        """:func:`pmm.events.hashing.keyed_digest`, memoised."""
        key = (secret, what, value)
        found = self._digests.get(key)
        if found is None:
            if len(self._digests) >= _LIMIT:
                self._digests.clear()
            found = self._digests[key] = keyed_digest(secret, what, value)
        return found

    def owner(self, conn: sqlite3.Connection, session_id: str) -> tuple[bool, str | None]:
        """``(has_rows, user_id)`` of a session (see ``EventStore.session_owner``)."""
        found = self.owners.get(session_id)
        if found is None:
            found = read_owner(conn, session_id)
            if len(self.owners) >= _LIMIT:
                self.owners.clear()
            self.owners[session_id] = found
        return found

    def owned(self, owners: Mapping[str, str | None]) -> None:
        """Record the owners of the sessions an append just wrote to."""
        for session, user in owners.items():
            self.owners[session] = (True, user)


def read_owner(conn: sqlite3.Connection, session_id: str) -> tuple[bool, str | None]:
    """``(has_rows, user_id)`` of a session, read through its index (its newest row: a
    session's rows all carry its user)."""
    row = conn.execute(
        "SELECT user_id FROM events WHERE session_id = ? ORDER BY id DESC LIMIT 1", (session_id,)
    ).fetchone()
    return (False, None) if row is None else (True, row[0])


def open_chains(
    conn: sqlite3.Connection, users: Iterable[str | None], cache: ChainCache | None = None
) -> dict[str | None, ChainState]:
    """The chain of each user (None: events without a user), with a new secret for a
    chain that has none yet. The caller holds the write lock (and, with ``cache``, has
    called :meth:`ChainCache.begin` in this transaction: states come from it when it
    holds them, and go into it)."""
    states: dict[str | None, ChainState] = {}
    for user in users:
        if cache is not None and (state := cache.states.get(user)) is not None:
            states[user] = state
            continue
        key = NO_USER_KEY if user is None else user
        row = conn.execute(
            "SELECT secret, head_id, head_hash FROM chains WHERE chain = ?", (key,)
        ).fetchone()
        if row is None:
            secret, head, head_id = new_secret(), None, 0
            conn.execute("INSERT INTO chains(chain, secret) VALUES (?, ?)", (key, secret))
        else:
            secret = bytes(row[0])
            head = None if row[2] is None else bytes(row[2]).hex()
            head_id = int(row[1])
        digest = None
        if cache is not None and user is not None:
            digest = cache.digest(secret, "user", user)
        states[user] = ChainState(user, secret, head, head_id, user_digest=digest)
        if cache is not None:
            cache.states[user] = states[user]
    return states


def save_heads(conn: sqlite3.Connection, states: Iterable[ChainState]) -> None:
    """Record each chain's new head (in the append's transaction)."""
    for s in states:
        conn.execute(
            "UPDATE chains SET head_id = ?, head_hash = ? WHERE chain = ?",
            (s.head_id, None if s.head_hash is None else bytes.fromhex(s.head_hash),
             NO_USER_KEY if s.user_id is None else s.user_id),
        )  # fmt: skip


def append_locked(
    conn: sqlite3.Connection, cache: ChainCache, checked: list[CheckedEvent]
) -> list[Event]:
    """Append ``checked`` (see :func:`pmm.events.chain.check_new_event`) onto their chains
    inside the caller's write transaction (``BEGIN IMMEDIATE`` on ``conn``), numbered after
    the newest id; returns them as stored. ``cache`` is the connection's :class:`ChainCache`
    (one per connection, kept between appends)."""
    head = cache.begin(conn)
    checked = resolve_owners(checked, lambda session: cache.owner(conn, session))
    chains = open_chains(conn, dict.fromkeys(c.entry.user_id for c in checked), cache)
    ids = range(head + 1, head + 1 + len(checked))
    events = seal_chains(checked, chains, ids=ids, ts=utc_now(), digest=cache.digest)
    # Digests are stored as their 32 bytes (migrations/0008); ours are always hex.
    unhex = bytes.fromhex
    rows = [
        (
            e.id,
            e.ts,
            e.kind,
            e.session_id,
            e.role,
            e.content,
            unhex(e.content_sha256),
            c.meta_json,
            None if e.prev_hash is None else unhex(e.prev_hash),
            unhex(e.hash),
            e.hash_version,
            e.user_id,
            None if e.user_digest is None else unhex(e.user_digest),
            None if e.session_digest is None else unhex(e.session_digest),
        )
        for e, c in zip(events, checked, strict=True)
    ]
    if len(rows) == 1:
        conn.execute(INSERT, rows[0])
    else:
        conn.executemany(INSERT, rows)
    save_heads(conn, chains.values())
    cache.owned({e.session_id: e.user_id for e in events if e.session_id is not None})
    cache.end(conn, ids[-1])
    return events


def chain_keys(conn: sqlite3.Connection, user: str | None = None) -> list[tuple[str, bytes]]:
    """``(chain, secret)`` of every chain (with ``user``: hers alone); none in a file
    from before migrations/0015."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chains'").fetchone():
        return []
    if user is None:
        rows = conn.execute("SELECT chain, secret FROM chains").fetchall()
    else:
        rows = conn.execute("SELECT chain, secret FROM chains WHERE chain = ?", (user,)).fetchall()
    return [(str(r[0]), bytes(r[1])) for r in rows]


def chain_heads(
    conn: sqlite3.Connection, user: str | None = None
) -> dict[str, tuple[int, str | None]]:
    """``{chain: (head id, head hash)}`` as the appends recorded them (with ``user``: hers
    alone): what verify compares each chain's last row with."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chains'").fetchone():
        return {}
    sql = "SELECT chain, head_id, head_hash FROM chains"
    rows = (
        conn.execute(sql, ()) if user is None else conn.execute(sql + " WHERE chain = ?", (user,))
    )
    return {
        str(c): (
            int(i or 0),
            None if h is None else (bytes(h).hex() if isinstance(h, bytes) else str(h)),
        )
        for c, i, h in rows
    }
