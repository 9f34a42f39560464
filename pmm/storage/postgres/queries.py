"""Reading the PostgreSQL event log: events by id, session, user, kind and id range, counts,
stats, the chains' keys and verification. Mixed into
:class:`pmm.storage.postgres.PostgresEventStore`::

    store.events(session_id="alice", newest_first=True, limit=10)
    store.verify(user_id="alice").ok         # her chain alone
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pmm.errors import EventNotFoundError
from pmm.events.chains import ChainsWalker
from pmm.records import Event, TurnRow, VerifyReport, event_from_row
from pmm.storage.postgres.chains import chain_heads, chain_keys
from pmm.storage.postgres.rows import COLUMNS, TABLE_BYTES, filters

if TYPE_CHECKING:
    import psycopg

    from pmm.storage.postgres.connection import Database


class EventQueries:
    """The log's reads (needs ``self._db``, ``self.path`` and ``self.vector_detail``)."""

    _db: Database
    path: str
    vector_detail: str

    if TYPE_CHECKING:  # provided by PostgresEventStore (DerivedData)

        def embedding_models(self) -> dict[str, int]: ...

    def get(self, event_id: int) -> Event:
        """The event with this id; raises :class:`EventNotFoundError` if there is none."""
        rows = self._db.read(f"SELECT {COLUMNS} FROM events WHERE id = %s", (event_id,))
        if not rows:
            raise EventNotFoundError(f"no event with id {event_id} in {self.path}")
        return event_from_row(rows[0])

    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]:
        """The events with these ids that exist, by id."""
        ids = list(dict.fromkeys(int(i) for i in event_ids))
        rows = self._db.read(f"SELECT {COLUMNS} FROM events WHERE id = ANY(%s)", (ids,))
        return {int(r[0]): event_from_row(r) for r in rows}

    def events(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        before_id: int | None = None,
        newest_first: bool = False,
        limit: int | None = None,
        user_id: str | None = None,
    ) -> list[Event]:
        """Events filtered by session, user, kinds and an id range, oldest first unless
        asked."""
        where, params = filters(session_id, kinds, after_id, before_id, user_id)
        sql = f"SELECT {COLUMNS} FROM events{where} ORDER BY id"
        sql += " DESC" if newest_first else ""
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        return [event_from_row(r) for r in self._db.read(sql, params)]

    def turn_rows(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        before_id: int | None = None,
        limit: int | None = None,
        user_id: str | None = None,
    ) -> list[TurnRow]:
        """Like :meth:`events` newest first, but only the columns a prompt needs."""
        where, params = filters(session_id, kinds, after_id, before_id, user_id)
        sql = (
            "SELECT id, ts, kind, session_id, role, content, summary FROM events"
            f"{where} ORDER BY id DESC"
        )
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        return [TurnRow(int(r[0]), *r[1:]) for r in self._db.read(sql, params)]

    def count(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> int:
        """How many events match."""
        where, params = filters(session_id, kinds, None, None, user_id)
        return int(self._db.read(f"SELECT count(*) FROM events{where}", params)[0][0])

    def last_id(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> int:
        """The id of the newest matching event, 0 when there is none."""
        where, params = filters(session_id, kinds, None, None, user_id)
        return int(self._db.read(f"SELECT max(id) FROM events{where}", params)[0][0] or 0)

    def event_ids(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
        user_id: str | None = None,
    ) -> list[int]:
        """Ids of the matching events, oldest first."""
        where, params = filters(session_id, kinds, after_id, None, user_id)
        return [
            int(r[0]) for r in self._db.read(f"SELECT id FROM events{where} ORDER BY id", params)
        ]

    def stats(self) -> dict[str, Any]:
        """Counts by kind, session and role, digest and embedding coverage, bytes used."""

        def grouped(column: str) -> dict[str, int]:
            sql = f"SELECT {column}, count(*) FROM events GROUP BY {column} ORDER BY 2 DESC"
            return {str(k): int(n) for k, n in self._db.read(sql)}

        total, digested, with_text = self._db.read(
            "SELECT count(*), count(digest_method), count(content) FROM events"
        )[0]
        size = self._db.read(TABLE_BYTES)[0][0]
        return {
            "path": self.path,
            "events": int(total),
            "by_kind": grouped("kind"),
            "by_session": grouped("session_id"),
            "by_role": grouped("role"),
            "by_digest_method": grouped("digest_method"),
            "digested": int(digested),
            "with_text": int(with_text),
            "embeddings": self.embedding_models(),
            "bytes_on_disk": int(size),
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
