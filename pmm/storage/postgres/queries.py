"""Reading the PostgreSQL event log: events by id, the one filtered query that events, counts,
ids and derived-data lookups share (``_query``), the figures of stats, the chains' keys and
verification. Mixed into
:class:`pmm.storage.postgres.PostgresEventStore`::

    store.events(session_id="alice", newest_first=True, limit=10)
    store.verify(user_id="alice").ok         # her chain alone
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pmm.events.chains import ChainsWalker
from pmm.records import Event, TurnRow, VerifyReport, event_from_row
from pmm.storage.postgres.chains import chain_heads, chain_keys
from pmm.storage.postgres.connection import PostgresBase
from pmm.storage.postgres.rows import COLUMNS, TABLE_BYTES, query_sql
from pmm.storage.shared import GROUPED, EventQuery

if TYPE_CHECKING:
    import psycopg


class EventQueries(PostgresBase):
    """The log's reads (needs ``self.vector_detail`` besides :class:`PostgresBase`)."""

    vector_detail: str

    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]:
        """The events with these ids that exist, by id."""
        ids = list(dict.fromkeys(int(i) for i in event_ids))
        rows = self._db.read(f"SELECT {COLUMNS} FROM events WHERE id = ANY(%s)", (ids,))
        return {int(r[0]): event_from_row(r) for r in rows}

    def _query(self, query: EventQuery) -> list[Any]:
        """The rows of one :class:`EventQuery` (see :func:`pmm.storage.postgres.rows.query_sql`)."""
        sql, params = query_sql(query)
        rows = self._db.read(sql, params)
        select = query.select
        if select == "events":
            return [event_from_row(r) for r in rows]
        if select == "turns":
            return [TurnRow(int(r[0]), *r[1:]) for r in rows]
        if select == "ids":
            return [int(r[0]) for r in rows]
        return [int(rows[0][0] or 0)]  # count, last_id

    def _counts_by(self, column: str) -> dict[str, int]:
        if column not in GROUPED:
            raise ValueError(f"not a grouped column: {column!r}")
        sql = f"SELECT {column}, count(*) FROM events GROUP BY {column} ORDER BY 2 DESC"
        return {str(k): int(n) for k, n in self._db.read(sql)}

    def _coverage(self) -> tuple[int, int, int]:
        total, digested, with_text = self._db.read(
            "SELECT count(*), count(digest_method), count(content) FROM events"
        )[0]
        return int(total), int(digested), int(with_text)

    def _storage_stats(self) -> dict[str, Any]:
        return {
            "bytes_on_disk": int(self._db.read(TABLE_BYTES)[0][0]),
            "schema_version": max(self.applied_migrations_all(), default=0),
            "vector_search": self.vector_detail,
        }

    def applied_migrations_all(self) -> list[int]:
        """Every migration version recorded in this database."""
        return [int(r[0]) for r in self._db.read("SELECT version FROM schema_migrations")]

    def chain_keys(self, user_id: str | None = None) -> list[tuple[str, bytes]]:
        """``(chain, secret)`` of every chain (``user_id``: hers alone): what a copy or
        export of version-3 rows needs to verify elsewhere."""
        with self._db.write() as conn:
            return chain_keys(conn, user_id)

    def verify(self, *, expect_head: str | None = None, user_id: str | None = None) -> VerifyReport:
        """Walk every chain (or ``user_id``'s alone, through ``events_by_user``) through a
        server-side cursor (constant memory) and report the first row that does not
        verify, each chain's head and the root (see
        :class:`pmm.events.chains.ChainsWalker`). Each chain's last row is compared with
        the head the ``chains`` table recorded, read in the same snapshot: events removed
        from a chain's end are caught without a pin, and named as such."""
        where, params = ("", ()) if user_id is None else (" WHERE user_id = %s", (user_id,))
        # One snapshot: a chain created meanwhile has its key and its rows, or neither.
        with self._db.snapshot() as conn, conn.cursor(name="pmm_verify") as cur:
            walker = ChainsWalker(
                keys=chain_keys(conn, user_id),
                expect_head=expect_head,
                user=user_id,
                heads=chain_heads(conn, user_id),  # the same snapshot as the rows
                find=lambda digest: _row_with_hash(conn, digest),
            )
            cur.itersize = 2000
            cur.execute(
                "SELECT id, ts, kind, session_id, role, content, content_sha256, meta,"
                " prev_hash, hash, hash_version, user_id, user_digest, session_digest"
                f" FROM events{where} ORDER BY id",
                params,
            )
            for row in cur:
                if walker.step(*row) is not None:
                    break
        return walker.report()


def _row_with_hash(conn: psycopg.Connection[Any], digest: str) -> int | None:
    """The id of the row whose hash is ``digest`` (a scan: asked only when a row does not
    link to the one before it, in verify's snapshot), or None."""
    row = conn.execute("SELECT id FROM events WHERE hash = %s LIMIT 1", (digest,)).fetchone()
    return None if row is None else int(row[0])
