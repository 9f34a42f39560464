"""Row shapes and filters shared by the PostgreSQL store's modules."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pmm.errors import InvalidInputError

if TYPE_CHECKING:
    import psycopg

    from pmm.storage.shared import EventQuery

COLUMNS = (
    "id, ts, kind, session_id, role, content, content_sha256, meta, prev_hash, hash,"
    " hash_version, summary, keywords, digest_method, user_id, user_digest, session_digest"
)
BUMP = "UPDATE data_versions SET version = version + 1 WHERE shard = pg_backend_pid() % 64"
"""Every write that changes stored rows bumps its connection's shard of the change
counter (migrations/0006): writers of different users rarely share a row lock."""
DATA_VERSION = "(SELECT sum(version) FROM data_versions)"
"""The change counter that caches compare (see ``data_version``)."""
TABLES = ("events", "embeddings", "edges", "event_windows", "chains", "session_owners")
"""The tables that hold text or what was derived from it, and those keyed by user or
session ids (the chains' secrets, the sessions' owners)."""
TABLE_BYTES = (
    "SELECT coalesce(sum(pg_total_relation_size(p.relid)), 0)"
    f" FROM unnest('{{{','.join(TABLES)}}}'::regclass[]) AS t, pg_partition_tree(t) AS p"
)
"""Bytes of :data:`TABLES` with their partitions, TOAST tables and indexes (a partitioned
table's own size is 0)."""


def move_session(conn: psycopg.Connection[Any], session_id: str, user_id: str) -> None:
    """Give a session's rows (written without a user) their user: they move to her
    partition, with their vectors and window keys (migrations/0009)."""
    conn.execute(
        "UPDATE embeddings SET shard = pmm_shard(%s::text) WHERE shard = 0 AND event_id IN"
        " (SELECT id FROM events WHERE shard = 0 AND session_id = %s)",
        (user_id, session_id),
    )
    conn.execute(
        "UPDATE event_windows SET shard = pmm_shard(%s::text) WHERE shard = 0 AND session_id = %s",
        (user_id, session_id),
    )
    conn.execute(
        "UPDATE session_owners SET user_id = %s WHERE session_id = %s", (user_id, session_id)
    )
    conn.execute(
        "UPDATE events SET user_id = %s, shard = pmm_shard(%s::text)"
        " WHERE shard = 0 AND session_id = %s",
        (user_id, user_id, session_id),
    )


def filters(
    session_id: str | None,
    kinds: Iterable[str] | None,
    after_id: int | None,
    before_id: int | None,
    user_id: str | None = None,
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if session_id is not None:
        clauses.append("session_id = %s")
        params.append(session_id)
    if user_id is not None:
        clauses.append("user_id = %s")
        params.append(user_id)
    if kinds is not None:
        clauses.append("kind = ANY(%s)")
        params.append([kinds] if isinstance(kinds, str) else list(kinds))
    if after_id is not None:
        clauses.append("id > %s")
        params.append(after_id)
    if before_id is not None:
        clauses.append("id < %s")
        params.append(before_id)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def meta_field(field: str) -> str:
    """``meta``'s text at ``field``, written literally (as migration 0002's indexes are, so
    the planner uses them); only plain names are allowed, never SQL."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", field):
        raise InvalidInputError(f"meta field must be a plain name, got {field!r}")
    return f"(meta::jsonb ->> '{field}')"


_SELECTS = {
    "events": f"SELECT {COLUMNS} FROM events",
    "turns": "SELECT id, ts, kind, session_id, role, content, summary FROM events",
    "ids": "SELECT id FROM events",
    "count": "SELECT count(*) FROM events",
    "last_id": "SELECT max(id) FROM events",
}


def query_sql(query: EventQuery) -> tuple[str, list[Any]]:
    """The statement and parameters of one :class:`~pmm.storage.shared.EventQuery`::

    sql, params = query_sql(EventQuery("count", session_id="alice"))
    """
    q = query
    where, params = filters(q.session_id, q.kinds, q.after_id, q.before_id, q.user_id)
    states: list[str] = []
    if q.undigested:
        states.append("digest_method IS NULL AND content IS NOT NULL")
    if q.unembedded is not None:
        states.append(
            "content IS NOT NULL AND NOT EXISTS (SELECT 1 FROM embeddings m"
            " WHERE m.event_id = events.id AND m.model = %s)"
        )
        params.append(q.unembedded)
    if q.compacted:
        states.append("content IS NULL AND summary IS NOT NULL")
    if states:
        where += (" AND " if where else " WHERE ") + " AND ".join(states)
    sql = _SELECTS[q.select] + where
    if q.select in ("count", "last_id"):
        return sql, params
    sql += " ORDER BY id DESC" if q.newest_first else " ORDER BY id"
    if q.limit is not None:
        sql += " LIMIT %s"
        params.append(int(q.limit))
    return sql, params
