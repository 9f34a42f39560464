"""Meta-key lookups on SQLite (the LangChain v1 middleware and the LangGraph store): which
message ids a session holds, and a key/value view of an append-only log. Mixed into
:class:`pmm.storage.sqlite.EventStore`::

    store.stored_meta_values(session_id="t1", field="message_id", values=["m1", "m2"])
    store.latest_per_meta_key(kinds=["store_put"], field="key", session_prefix="ns/")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pmm.errors import InvalidInputError
from pmm.records import Event
from pmm.storage.sqlite.connection import SqliteBase
from pmm.storage.sqlite.rows import COLUMNS


def stored_values(
    read: Callable[[str, Sequence[Any]], list[Any]],
    session_id: str,
    field: str,
    values: Iterable[str],
) -> set[str]:
    """Which of ``values`` some event of ``session_id`` holds in ``meta[field]``, through
    ``read(sql, params)``: the store's reader, or the append's own write transaction."""
    wanted = list(dict.fromkeys(values))
    found: set[str] = set()
    value = _meta_path(field)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows = read(
            f"SELECT DISTINCT {value} FROM events WHERE session_id = ? AND {value} IN ({marks})",
            [session_id, *chunk],
        )
        found.update(str(r[0]) for r in rows)
    return found


class MetaKeys(SqliteBase):
    """Lookups by a ``meta`` field."""

    # -- meta keys (used by the LangChain v1 middleware and the LangGraph store) ---------

    def stored_meta_values(self, *, session_id: str, field: str, values: Iterable[str]) -> set[str]:
        """Which of ``values`` some event of this session holds in ``meta[field]``, e.g.
        ``store.stored_meta_values(session_id="t1", field="message_id", values=ids)``.

        ``message_id`` and ``key`` have their own indexes (migration 0006): one index probe
        per value; another field reads the session's rows."""
        return stored_values(self._read, session_id, field, values)

    def latest_per_meta_key(
        self,
        *,
        kinds: Iterable[str],
        field: str,
        session_id: str | None = None,
        session_prefix: str | None = None,
        value: str | None = None,
    ) -> list[Event]:
        """The newest event of ``kinds`` for each (session, ``meta[field]``) pair, in the one
        session ``session_id`` or in every session starting with ``session_prefix``; with
        ``value``, only that key. Oldest first. (A key/value view of an append-only log.)"""
        kind_list = list(kinds)
        path = _meta_path(field)
        clauses = [f"kind IN ({','.join('?' * len(kind_list))})"]
        params: list[Any] = [*kind_list]
        if session_id is not None:
            clauses.append("session_id = ?")
            params.append(session_id)
        if session_prefix is not None:
            clauses.append("substr(session_id, 1, ?) = ?")  # exact, unlike LIKE
            params.extend([len(session_prefix), session_prefix])
        if value is not None:
            clauses.append(f"{path} = ?")
            params.append(value)
        latest = (
            f"SELECT max(id) FROM events WHERE {' AND '.join(clauses)} GROUP BY session_id, {path}"
        )
        rows = self._read(
            f"SELECT {COLUMNS} FROM events WHERE id IN ({latest}) ORDER BY id", params
        )
        return [self._text.event(r) for r in rows]


def _meta_path(field: str) -> str:
    """``json_extract(meta, '$.field')`` written as the indexes of migration 0006 write it
    (a bound parameter would not match them); ``field`` must be a plain name."""
    return f"json_extract(meta, '$.{checked_field(field)}')"


def checked_field(field: str) -> str:
    """``field`` when it is a plain name (what a meta path may hold), else a clear error."""
    if not field.isidentifier():
        raise InvalidInputError(f"meta field must be a plain name, got {field!r}")
    return field


class StoreExpiry(SqliteBase):
    """When LangGraph store items expire (``store_expiry``, migrations/0014): not chained,
    so that a read can push the time back without writing an event (the calls are the
    shared layer's ``set_expiry``, ``refresh_expiry``, ``expiry`` and ``expired``)."""

    def _expiry_write(self, rows: list[tuple[int, float, float]]) -> None:
        with self._lock, self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO store_expiry(event_id, ttl_minutes, expires_at)"
                " VALUES (?, ?, ?)",
                rows,
            )

    def _expiry_refresh(self, ids: list[int], now: float) -> int:
        with self._lock, self._write() as conn:
            done = 0
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                done += conn.execute(
                    "UPDATE store_expiry SET expires_at = ? + ttl_minutes * 60"
                    f" WHERE expires_at > ? AND event_id IN ({','.join('?' * len(chunk))})",
                    [now, now, *chunk],
                ).rowcount
            return done

    def _expiry_read(
        self, *, ids: list[int] | None = None, due_by: float | None = None
    ) -> list[tuple[int, float]]:
        if ids is None:
            rows = self._read(
                "SELECT event_id, expires_at FROM store_expiry WHERE expires_at <= ?"
                " ORDER BY event_id",
                (due_by,),
            )
            return [(int(r[0]), float(r[1])) for r in rows]
        found: list[tuple[int, float]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            found += [
                (int(r[0]), float(r[1]))
                for r in self._read(
                    "SELECT event_id, expires_at FROM store_expiry"
                    f" WHERE event_id IN ({','.join('?' * len(chunk))}) ORDER BY event_id",
                    chunk,
                )
            ]
        return found
