"""Meta-key lookups on PostgreSQL (the LangChain v1 middleware and the LangGraph store):
which message ids a session holds, and a key/value view of an append-only log. Mixed into
:class:`pmm.storage.postgres.PostgresEventStore`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...records import Event
from .connection import Database
from .rows import COLUMNS, row_to_event


class MetaKeys:
    """Lookups by a ``meta`` field (needs ``self._db``)."""

    _db: Database

    def stored_meta_values(self, *, session_id: str, field: str, values: Iterable[str]) -> set[str]:
        """Which of ``values`` some event of this session holds in ``meta[field]``."""
        rows = self._db.read(
            "SELECT DISTINCT meta::jsonb ->> %s FROM events WHERE session_id = %s"
            " AND meta::jsonb ->> %s = ANY(%s)",
            (field, session_id, field, list(dict.fromkeys(values))),
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
        clauses = ["kind = ANY(%s)"]
        params: list[Any] = [list(kinds)]
        if session_id is not None:
            clauses.append("session_id = %s")
            params.append(session_id)
        if session_prefix is not None:
            clauses.append("left(session_id, %s) = %s")  # exact, unlike LIKE
            params.extend([len(session_prefix), session_prefix])
        if value is not None:
            clauses.append("meta::jsonb ->> %s = %s")
            params.extend([field, value])
        latest = (
            f"SELECT max(id) FROM events WHERE {' AND '.join(clauses)}"
            " GROUP BY session_id, meta::jsonb ->> %s"
        )
        rows = self._db.read(
            f"SELECT {COLUMNS} FROM events WHERE id IN ({latest}) ORDER BY id", [*params, field]
        )
        return [row_to_event(r) for r in rows]
