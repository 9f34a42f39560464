"""The SQLite log's column list, insert statement and WHERE builder, shared by the mixins of
:class:`pmm.storage.sqlite.EventStore`.

    where, params = filters("alice", ["prompt"], None, None)
    sql = f"SELECT {COLUMNS} FROM events{where}"
    sql, params = query_sql(EventQuery("count", session_id="alice"))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pmm.storage.sqlite.stored_text import TEXT_SQL

if TYPE_CHECKING:
    from pmm.storage.shared import EventQuery

COLUMNS = (
    "id, ts, kind, session_id, role, content, content_sha256, meta, prev_hash, hash,"
    " hash_version, summary, keywords, digest_method, user_id, user_digest, session_digest"
)
INSERT = (
    "INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256, meta,"
    " prev_hash, hash, hash_version, user_id, user_digest, session_digest)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def filters(
    session_id: str | None,
    kinds: Iterable[str] | None,
    after_id: int | None,
    before_id: int | None,
    user_id: str | None = None,
) -> tuple[str, list[Any]]:
    """`` WHERE ...`` (or "") and its parameters for the common event filters."""
    clauses: list[str] = []
    params: list[Any] = []
    if session_id is not None:
        clauses.append("session_id = ?")
        params.append(session_id)
    if user_id is not None:
        clauses.append("user_id = ?")
        params.append(user_id)
    if kinds is not None:
        kind_list = [kinds] if isinstance(kinds, str) else list(kinds)
        clauses.append(f"kind IN ({','.join('?' * len(kind_list))})")
        params.extend(kind_list)
    if after_id is not None:
        clauses.append("id > ?")
        params.append(after_id)
    if before_id is not None:
        clauses.append("id < ?")
        params.append(before_id)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


_SELECTS = {
    "events": f"SELECT {COLUMNS} FROM events",
    "turns": f"SELECT id, ts, kind, session_id, role, coalesce({TEXT_SQL}, summary), summary"
    " FROM events",
    "ids": "SELECT id FROM events",
    "count": "SELECT count(*) FROM events",
    "last_id": "SELECT max(id) FROM events",
}


def query_sql(query: EventQuery) -> tuple[str, list[Any]]:
    """The statement and parameters of one :class:`~pmm.storage.shared.EventQuery`.

    Undigested rows are read through their partial index (migrations/0004), named: left to
    itself SQLite walks the kind index over every turn, digested ones included, so each
    batch of a dream cost more as the log grew (issue 22: 360 turns/s at 100,000)."""
    q = query
    where, params = filters(q.session_id, q.kinds, q.after_id, q.before_id, q.user_id)
    states: list[str] = []
    if q.undigested:
        states.append("digest_method IS NULL AND content IS NOT NULL")
    if q.unembedded is not None:
        states.append(
            "content IS NOT NULL AND NOT EXISTS (SELECT 1 FROM embeddings m"
            " WHERE m.event_id = events.id AND m.model = ?)"
        )
        params.append(q.unembedded)
    if q.compacted:
        states.append("content IS NULL AND summary IS NOT NULL")
    if states:
        where += (" AND " if where else " WHERE ") + " AND ".join(states)
    sql = _SELECTS[q.select]
    if q.undigested:
        sql += " INDEXED BY events_undigested"
    sql += where
    if q.select in ("count", "last_id"):
        return sql, params
    sql += " ORDER BY id DESC" if q.newest_first else " ORDER BY id"
    if q.limit is not None:
        sql += " LIMIT ?"
        params.append(int(q.limit))
    return sql, params
