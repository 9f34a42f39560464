"""Appending on PostgreSQL with one chain per user (issue 21, migrations/0006): the locks,
each chain's secret and head, ids from a sequence, in two round trips.

    with db.write() as conn:
        events = append_locked(conn, checked, radius=3)

Locks, all transaction-scoped advisory locks, always taken in this order so that no two
writers deadlock: :data:`APPEND_LOCK` *shared* (every append; the rare writers that rewrite
the log, such as ``forget`` and ``import``, take it exclusively and so wait for the appends
in flight and hold the new ones back), then one lock per session the append touches
(sorted; keeps a new session from being claimed by two users at once, and a session's
window keys in step), then one lock per chain (user; sorted) from reading its head until
commit. Appends of different users share no lock and no row: they commit (and flush the
WAL) concurrently. Ids come from ``events_id_seq`` under the chain's lock, so one chain's
ids increase; across users, ids may commit out of order and have gaps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pmm.events.chain import CheckedEvent, resolve_owners
from pmm.events.chains import NO_USER_KEY, ChainState, new_secret, seal_chains
from pmm.events.hashing import utc_now
from pmm.records import Event
from pmm.storage.postgres.connection import APPEND_LOCK
from pmm.storage.postgres.rows import INSERT
from pmm.storage.postgres.windows import prefetch_tails, write_appended
from pmm.text.window_keys import WINDOW_KINDS

if TYPE_CHECKING:
    import psycopg

SESSION_LOCK = 0x504D_4D02
"""Advisory lock class (first int4 key) of a session; the second is ``hashtext(session)``
(``''`` for events without a session)."""
CHAIN_LOCK = 0x504D_4D03
"""Advisory lock class of a chain; the second key is ``hashtext(user)`` (``''`` for the
chain without a user)."""

_LOCK_MANY = (
    "SELECT pg_advisory_xact_lock(%s, h) FROM"
    " (SELECT DISTINCT hashtext(k) AS h FROM unnest(%s::text[]) AS k ORDER BY 1) AS keys"
)
OWNERS = (
    "SELECT s, (SELECT user_id FROM events WHERE session_id = s ORDER BY id DESC LIMIT 1)"
    " FROM unnest(%s::text[]) AS s WHERE EXISTS (SELECT 1 FROM events WHERE session_id = s)"
)
"""``(session, user_id)`` of each of the given sessions that has events (its newest row's
user: a session's rows all carry it), read through ``events_by_session``."""


def lock_sessions(conn: psycopg.Connection[Any], sessions: Iterable[str | None]) -> None:
    """Take the appends' shared lock and the locks of ``sessions`` (in the canonical
    order): what a writer of a session's rows holds before reading them."""
    conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (APPEND_LOCK,))
    keys = sorted({"" if s is None else s for s in sessions})
    if keys:
        conn.execute(_LOCK_MANY, (SESSION_LOCK, keys))


def _chain_keys(users: Iterable[str | None]) -> list[str]:
    return sorted({NO_USER_KEY if u is None else u for u in users})


def _open_chains(
    conn: psycopg.Connection[Any], keys: list[str], count: int
) -> tuple[psycopg.Cursor[Any], psycopg.Cursor[Any]]:
    """Send (in the caller's pipeline): the chain locks, a secret for each new chain, the
    chains' secrets and heads, and ``count`` ids."""
    conn.execute(_LOCK_MANY, (CHAIN_LOCK, keys))
    conn.execute(
        "INSERT INTO chains(chain, secret) SELECT * FROM unnest(%s::text[], %s::bytea[])"
        " ON CONFLICT (chain) DO NOTHING",
        (keys, [new_secret() for _ in keys]),
    )
    chains = conn.execute(
        "SELECT chain, secret, head_id, head_hash FROM chains WHERE chain = ANY(%s)", (keys,)
    )
    ids = conn.execute("SELECT nextval('events_id_seq') FROM generate_series(1, %s)", (count,))
    return chains, ids


def append_locked(
    conn: psycopg.Connection[Any], checked: list[CheckedEvent], radius: int
) -> list[Event]:
    """Append checked entries in the caller's transaction (see the module docstring).
    One round trip for the locks, owners, heads and ids when every entry names its user
    (or has no session); one more when a user comes from a session's owner."""
    windowed = {c.entry.session_id for c in checked if c.entry.kind in WINDOW_KINDS}
    sessions = {c.entry.session_id for c in checked}
    owned = sorted(s for s in sessions if s is not None)
    known = all(c.entry.user_id is not None or c.entry.session_id is None for c in checked)
    opened = None
    with conn.pipeline():
        lock_sessions(conn, sessions)
        owner_cur = conn.execute(OWNERS, (owned,)) if owned else None
        tails = prefetch_tails(conn, windowed, radius) if windowed else []
        if known:
            opened = _open_chains(conn, _chain_keys(c.entry.user_id for c in checked), len(checked))
    owners = {} if owner_cur is None else {r[0]: r[1] for r in owner_cur.fetchall()}
    # Under the sessions' locks: no other writer can claim a new session meanwhile.
    checked = resolve_owners(checked, lambda s: (s in owners, owners.get(s)))
    if opened is None:
        with conn.pipeline():
            opened = _open_chains(conn, _chain_keys(c.entry.user_id for c in checked), len(checked))
    chain_cur, id_cur = opened
    states: dict[str | None, ChainState] = {}
    for key, secret, head_id, head_hash in chain_cur.fetchall():
        user = None if key == NO_USER_KEY else key
        states[user] = ChainState(user, bytes(secret), head_hash, int(head_id))
    ids = [int(r[0]) for r in id_cur.fetchall()]
    events = seal_chains(checked, states, ids=ids, ts=utc_now())
    rows = [
        (e.id, e.ts, e.kind, e.session_id, e.role, e.content, e.content_sha256,
         c.meta_json, e.prev_hash, e.hash, e.hash_version, e.user_id, e.user_digest,
         e.session_digest)
        for e, c in zip(events, checked, strict=True)
    ]  # fmt: skip
    appended = [(e.id, e.kind, e.session_id, e.ts, e.content) for e in events]
    with conn.pipeline(), conn.cursor() as cur:
        cur.executemany(INSERT, rows)
        save_heads(conn, states.values())
        if windowed:
            write_appended(conn, tails, appended, radius)
    return events


def save_heads(conn: psycopg.Connection[Any], states: Iterable[ChainState]) -> None:
    """Record each chain's new head (in the append's transaction)."""
    rows = [
        (NO_USER_KEY if s.user_id is None else s.user_id, s.head_id, s.head_hash) for s in states
    ]
    conn.execute(
        "UPDATE chains SET head_id = v.id, head_hash = v.h"
        " FROM unnest(%s::text[], %s::bigint[], %s::text[]) AS v(chain, id, h)"
        " WHERE chains.chain = v.chain",
        ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]),
    )


def chain_keys(conn: psycopg.Connection[Any], user: str | None = None) -> list[tuple[str, bytes]]:
    """``(chain, secret)`` of every chain (with ``user``: hers alone)."""
    if user is None:
        rows = conn.execute("SELECT chain, secret FROM chains").fetchall()
    else:
        rows = conn.execute("SELECT chain, secret FROM chains WHERE chain = %s", (user,)).fetchall()
    return [(str(r[0]), bytes(r[1])) for r in rows]


def import_keys(
    conn: psycopg.Connection[Any],
    keys: Sequence[tuple[str, bytes]],
    heads: dict[str, tuple[int, str]],
) -> None:
    """Store imported chains' secrets and heads, and move the id sequence past the
    imported ids (the caller holds :data:`APPEND_LOCK` exclusively)."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO chains(chain, secret, head_id, head_hash) VALUES (%s, %s, %s, %s)",
            [(k, s, heads.get(k, (0, None))[0], heads.get(k, (0, None))[1]) for k, s in keys],
        )
    conn.execute(
        "SELECT setval('events_id_seq', (SELECT coalesce(max(id), 0) + 1 FROM events), false)"
    )
