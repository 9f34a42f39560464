"""The SQLite log's column list, insert statement and WHERE builder, shared by the mixins of
:class:`pmm.storage.sqlite.EventStore`.

    where, params = filters("alice", ["prompt"], None, None)
    sql = f"SELECT {COLUMNS} FROM events{where}"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
