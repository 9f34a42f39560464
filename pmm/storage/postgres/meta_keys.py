"""Meta-key lookups on PostgreSQL (the LangChain v1 middleware and the LangGraph store):
which message ids a session holds, and a key/value view of an append-only log. Mixed into
:class:`pmm.storage.postgres.PostgresEventStore`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pmm.records import Event, event_from_row
from pmm.storage.postgres.connection import PostgresBase
from pmm.storage.postgres.rows import COLUMNS, meta_field


class MetaKeys(PostgresBase):
    """Lookups by a ``meta`` field."""

    def stored_meta_values(self, *, session_id: str, field: str, values: Iterable[str]) -> set[str]:
        """Which of ``values`` some event of this session holds in ``meta[field]``."""
        value = meta_field(field)
        rows = self._db.read(
            f"SELECT DISTINCT {value} FROM events WHERE session_id = %s AND {value} = ANY(%s)",
            (session_id, list(dict.fromkeys(values))),
        )
        return {str(r[0]) for r in rows}

    def latest_per_meta_key(
        self,
        *,
        kinds: Iterable[str],
        field: str,
        session_id: str | None = None,
        session_prefix: str | None = None,
        value: str | None = None,
    ) -> list[Event]:
        """The newest event of ``kinds`` for each (session, ``meta[field]``) pair, in one
        session or in every session starting with ``session_prefix``; oldest first."""
        path = meta_field(field)
        clauses = ["kind = ANY(%s)"]
        params: list[Any] = [list(kinds)]
        if session_id is not None:
            clauses.append("session_id = %s")
            params.append(session_id)
        if session_prefix is not None:
            clauses.append("left(session_id, %s) = %s")  # exact, unlike LIKE
            params.extend([len(session_prefix), session_prefix])
        if value is not None:
            clauses.append(f"{path} = %s")
            params.append(value)
        latest = (
            f"SELECT max(id) FROM events WHERE {' AND '.join(clauses)} GROUP BY session_id, {path}"
        )
        rows = self._db.read(
            f"SELECT {COLUMNS} FROM events WHERE id IN ({latest}) ORDER BY id", params
        )
        return [event_from_row(r) for r in rows]


class StoreExpiry(PostgresBase):
    """When LangGraph store items expire (``store_expiry``, migration 0005), as SQLite's
    :class:`pmm.storage.sqlite.meta_keys.StoreExpiry` (the calls are the shared layer's)."""

    def _expiry_write(self, rows: list[tuple[int, float, float]]) -> None:
        with self._db.write() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO store_expiry(event_id, ttl_minutes, expires_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (event_id) DO UPDATE SET ttl_minutes = excluded.ttl_minutes,"
                " expires_at = excluded.expires_at",
                rows,
            )

    def _expiry_refresh(self, ids: list[int], now: float) -> int:
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE store_expiry SET expires_at = %s + ttl_minutes * 60"
                " WHERE expires_at > %s AND event_id = ANY(%s)",
                (now, now, ids),
            )
            return int(cur.rowcount)

    def _expiry_read(
        self, *, ids: list[int] | None = None, due_by: float | None = None
    ) -> list[tuple[int, float]]:
        where, param = (
            ("event_id = ANY(%s)", ids) if ids is not None else ("expires_at <= %s", due_by)
        )
        rows = self._db.read(
            f"SELECT event_id, expires_at FROM store_expiry WHERE {where} ORDER BY event_id",
            (param,),
        )
        return [(int(r[0]), float(r[1])) for r in rows]
