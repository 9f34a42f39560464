"""Appending on PostgreSQL with one chain per user (issue 21, migrations/0006): the locks,
each chain's secret and head, ids from a sequence, in two calls of the server-side
functions of migrations/0008 (one statement each, a JSON document in and out; their
current versions and plans: migrations/0010). This is the path every append can take; in
the steady state a store appends in one call instead
(:mod:`pmm.storage.postgres.append_cache`, migrations/0011) and falls back to this one.

    with db.write() as conn:
        events = append_locked(conn, checked, radius=3)

Locks, all transaction-scoped advisory locks, always taken in this order so that no two
writers deadlock: :data:`APPEND_LOCK` *shared* (every append; the rare writers that rewrite
the log, such as ``forget``, take it exclusively and so wait for the appends
in flight and hold the new ones back), then one lock per session the append touches
(sorted; keeps a new session from being claimed by two users at once, and a session's
window keys in step), then one lock per chain (user; sorted) from reading its head until
commit. Appends of different users share no lock and no row: they commit (and flush the
WAL) concurrently. Ids come from ``events_id_seq`` under the chain's lock, so one chain's
ids increase; across users, ids may commit out of order and have gaps.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pmm.events.chain import CheckedEvent, resolve_owners
from pmm.events.chains import NO_USER_KEY, ChainState, new_secret, seal_chains
from pmm.events.exactly_once import skip_stored, unique_pairs
from pmm.events.hashing import utc_now
from pmm.records import Event
from pmm.storage.postgres.append_cache import Seen
from pmm.storage.postgres.connection import APPEND_LOCK
from pmm.storage.postgres.rows import meta_field
from pmm.storage.postgres.windows import TAIL_KINDS, appended_windows
from pmm.text.window_keys import WINDOW_KINDS, WINDOW_TURN_CHARS

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
OWNERS = "SELECT session_id, user_id FROM session_owners WHERE session_id = ANY(%s)"
"""``(session, user_id)`` of each of the given sessions that has events (migrations/0009:
one index probe, where reading ``events`` would probe every partition)."""


def lock_sessions(conn: psycopg.Connection[Any], sessions: Iterable[str | None]) -> None:
    """Take the appends' shared lock and the locks of ``sessions`` (in the canonical
    order): what a writer of a session's rows holds before reading them."""
    conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (APPEND_LOCK,))
    keys = sorted({"" if s is None else s for s in sessions})
    if keys:
        conn.execute(_LOCK_MANY, (SESSION_LOCK, keys))


def lock_chains(conn: psycopg.Connection[Any], users: Iterable[str | None]) -> None:
    """Take the locks of the chains of ``users`` (None: the chain without a user), in the
    canonical order, after :func:`lock_sessions`: what an append holds from reading a
    chain's head until commit."""
    conn.execute(_LOCK_MANY, (CHAIN_LOCK, _chain_keys(users)))


def _chain_keys(users: Iterable[str | None]) -> list[str]:
    return sorted({NO_USER_KEY if u is None else u for u in users})


_OPEN = "SELECT pmm_append_open(%s::jsonb)"
_OPEN_CHAINS = "SELECT pmm_open_chains(%s::jsonb)"
_ROWS = "SELECT pmm_append_rows(%s::jsonb)"


def append_locked(
    conn: psycopg.Connection[Any],
    checked: list[CheckedEvent],
    radius: int,
    unique_meta: str | None = None,
    seen: Seen | None = None,
    ids: Sequence[int] | None = None,
) -> list[Event]:
    """Append checked entries in the caller's transaction (see the module docstring):
    ``pmm_append_open`` (migrations/0008) takes the locks and reads the owners, the
    sessions' newest turns, the heads and the ids; ``pmm_append_rows`` writes the rows,
    heads, window keys and the owners of the sessions the append begins. One more call
    when a user comes from a session's owner (``pmm_open_chains``), one when
    ``unique_meta`` is given: entries whose
    ``(session, meta[unique_meta])`` the log holds are left out (and not returned), see
    :func:`pmm.events.exactly_once.skip_stored`. ``seen``: filled with what the append
    read and wrote, for :meth:`~pmm.storage.postgres.append_cache.AppendCache.learn` once
    the transaction commits. ``ids``: the rows' ids, increasing, one per entry, which the
    caller took from ``events_id_seq`` in this transaction (a rebased import, see
    :mod:`pmm.storage.postgres.imports`); none are taken here then."""
    if ids is not None and (
        unique_meta is not None or len(ids) != len(checked) or list(ids) != sorted(set(ids))
    ):
        raise ValueError("append_locked: ids needs one increasing id per entry, no unique_meta")
    count = len(checked) if ids is None else 0
    windowed = sorted(
        {c.entry.session_id for c in checked if c.entry.kind in WINDOW_KINDS},
        key=lambda s: (s is not None, s),
    )
    known = all(c.entry.user_id is not None or c.entry.session_id is None for c in checked)
    keys = _chain_keys(c.entry.user_id for c in checked) if known else None
    request = {
        "sessions": sorted({c.entry.session_id or "" for c in checked}),
        "owned": sorted({c.entry.session_id for c in checked if c.entry.session_id}),
        "windowed": windowed,
        "kinds": TAIL_KINDS,
        "tail": 2 * radius,
        "chars": WINDOW_TURN_CHARS,
        "keys": keys,
        "secrets": None if keys is None else [new_secret().hex() for _ in keys],
        "count": count,
    }
    opened = _call(conn, _OPEN, request)
    owners = {s: u for s, u in opened["owners"] or []}
    stored = _stored(conn, checked, unique_meta)  # under the sessions' locks
    if stored:
        checked = skip_stored(checked, unique_meta, stored)
        if not checked:
            return []
    # Under the sessions' locks: no other writer can claim a new session meanwhile.
    checked = resolve_owners(checked, lambda s: (s in owners, owners.get(s)))
    if keys is None:
        keys = _chain_keys(c.entry.user_id for c in checked)
        secrets = [new_secret().hex() for _ in keys]
        more = {"keys": keys, "secrets": secrets, "count": count}
        opened |= _call(conn, _OPEN_CHAINS, more)
    states: dict[str | None, ChainState] = {}
    for key, secret, head_id, head_hash in opened["chains"]:
        user = None if key == NO_USER_KEY else key
        states[user] = ChainState(user, bytes.fromhex(secret), head_hash, int(head_id))
    # With count 0 the server's jsonb_agg over no ids answers NULL.
    taken = sorted(opened["ids"] or [])[: len(checked)] if ids is None else list(ids)
    events = seal_chains(checked, states, ids=taken, ts=utc_now())
    used = [states[u] for u in dict.fromkeys(e.user_id for e in events)]
    appended = [(e.id, e.kind, e.session_id, e.ts, e.content) for e in events]
    rows = [
        (e.id, e.ts, e.kind, e.session_id, e.role, e.content, e.content_sha256, c.meta_json,
         e.prev_hash, e.hash, e.hash_version, e.user_id, e.user_digest, e.session_digest)
        for e, c in zip(events, checked, strict=True)
    ]  # fmt: skip
    heads = [
        (NO_USER_KEY if s.user_id is None else s.user_id, s.head_id, s.head_hash) for s in used
    ]
    windows = appended_windows(opened["tails"] or [], appended, radius) if windowed else []
    begun: dict[str, str | None] = {}  # the sessions this append begins, and their users
    for e in events:
        if e.session_id is not None and e.session_id not in owners:
            begun.setdefault(e.session_id, e.user_id)
    request = {"rows": rows, "heads": heads, "windows": windows, "owners": list(begun.items())}
    conn.execute(_ROWS, (_dumps(request),))
    if seen is not None:
        seen.states = list(states.values())
        seen.owners = owners
        seen.named = {c.entry.session_id for c in checked if c.entry.session_id is not None}
        seen.windowed = {s for s in windowed if s is not None}
        seen.tails = opened["tails"] or []
        seen.events = events
    return events


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _call(conn: psycopg.Connection[Any], sql: str, request: dict[str, Any]) -> dict[str, Any]:
    """One of migration 0008's functions: a JSON request in, its JSON answer out."""
    row = conn.execute(sql, (_dumps(request),)).fetchone()
    answer: dict[str, Any] = {} if row is None else row[0]
    return answer


def _stored(
    conn: psycopg.Connection[Any], checked: list[CheckedEvent], field: str | None
) -> set[tuple[str, str]]:
    """Which ``(session, meta[field])`` pairs of ``checked`` the log holds already."""
    pairs = sorted(unique_pairs(checked, field))
    if field is None or not pairs:
        return set()
    value = meta_field(field)
    rows = conn.execute(
        "SELECT t.s, t.v FROM unnest(%s::text[], %s::text[]) AS t(s, v) WHERE EXISTS"
        f" (SELECT 1 FROM events WHERE session_id = t.s AND {value} = t.v)",
        ([p[0] for p in pairs], [p[1] for p in pairs]),
    ).fetchall()
    return {(str(r[0]), str(r[1])) for r in rows}


def chain_keys(conn: psycopg.Connection[Any], user: str | None = None) -> list[tuple[str, bytes]]:
    """``(chain, secret)`` of every chain (with ``user``: hers alone)."""
    if user is None:
        rows = conn.execute("SELECT chain, secret FROM chains").fetchall()
    else:
        rows = conn.execute("SELECT chain, secret FROM chains WHERE chain = %s", (user,)).fetchall()
    return [(str(r[0]), bytes(r[1])) for r in rows]


def chain_heads(
    conn: psycopg.Connection[Any], user: str | None = None
) -> dict[str, tuple[int, str | None]]:
    """``{chain: (head id, head hash)}`` as the appends recorded them (with ``user``: hers
    alone): what verify compares each chain's last row with."""
    sql = "SELECT chain, head_id, head_hash FROM chains"
    rows = (
        conn.execute(sql).fetchall()
        if user is None
        else conn.execute(sql + " WHERE chain = %s", (user,)).fetchall()
    )
    return {str(c): (int(i or 0), None if h is None else str(h)) for c, i, h in rows}


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
