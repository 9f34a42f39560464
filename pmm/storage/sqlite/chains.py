"""The SQLite side of one chain per user (``chains`` table, migrations/0015): each chain's
secret and head, read and advanced inside the append's write transaction.

    states = open_chains(conn, {"alice", None})   # creates a missing chain's secret
    ...                                           # seal_chains(..., states, ...), insert
    save_heads(conn, states.values())
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from pmm.events.chains import NO_USER_KEY, ChainState, new_secret


def open_chains(
    conn: sqlite3.Connection, users: Iterable[str | None]
) -> dict[str | None, ChainState]:
    """The chain of each user (None: events without a user), with a new secret for a
    chain that has none yet. The caller holds the write lock."""
    states: dict[str | None, ChainState] = {}
    for user in users:
        key = NO_USER_KEY if user is None else user
        row = conn.execute(
            "SELECT secret, head_id, head_hash FROM chains WHERE chain = ?", (key,)
        ).fetchone()
        if row is None:
            secret = new_secret()
            conn.execute("INSERT INTO chains(chain, secret) VALUES (?, ?)", (key, secret))
            states[user] = ChainState(user, secret)
        else:
            head = None if row[2] is None else bytes(row[2]).hex()
            states[user] = ChainState(user, bytes(row[0]), head, int(row[1]))
    return states


def save_heads(conn: sqlite3.Connection, states: Iterable[ChainState]) -> None:
    """Record each chain's new head (in the append's transaction)."""
    conn.executemany(
        "UPDATE chains SET head_id = ?, head_hash = ? WHERE chain = ?",
        [
            (s.head_id, None if s.head_hash is None else bytes.fromhex(s.head_hash),
             NO_USER_KEY if s.user_id is None else s.user_id)
            for s in states
        ],
    )  # fmt: skip


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
