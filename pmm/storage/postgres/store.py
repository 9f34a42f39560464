"""PostgresEventStore: the event log in PostgreSQL, shared by many processes and machines.

    from pmm.storage.postgres import PostgresEventStore

    with PostgresEventStore("postgresql://app@db.internal/pmm") as store:
        ev = store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
        store.search_text("Lisbon", session_id="alice")     # [(ev.id, score)]
        store.verify().ok                                    # True

The chain rule, input checks and verification are :mod:`pmm.chain`'s, as on SQLite. Every
append takes a transaction-scoped advisory lock before it reads the head, so appends from
any number of connections, processes and machines extend one chain. Migrations (numbered
SQL files in ``migrations/`` beside this module) are applied once, under a session advisory
lock, by whichever process gets there first. Keyword search is PostgreSQL full text
(``tsvector`` + GIN, ranked by ``ts_rank_cd``); vectors are float32 bytes searched exactly
by PMM's vector index, as on SQLite.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ...chain import ChainWalker, CheckedEvent, check_new_event, seal
from ...errors import (
    EventNotFoundError,
    IntegrityError,
    InvalidInputError,
    UnsupportedOperationError,
)
from ...hashing import LEGACY_HASH_VERSION, canonical_json, legacy_hash, utc_now
from ...records import Event, NewEvent, TurnRow, VerifyReport, event_from_row
from .connection import APPEND_LOCK, Database
from .consolidation import ConsolidationData
from .derived import DerivedData
from .meta_keys import MetaKeys
from .rows import BUMP, COLUMNS, INSERT, filters

if TYPE_CHECKING:
    from datetime import timedelta

    import psycopg

    from ...compaction import CompactionReport
    from ...erasure import ErasureReport

DEFAULT_MAX_CONTENT_BYTES = 1_048_576


class PostgresEventStore(DerivedData, ConsolidationData, MetaKeys):
    """The event log in one PostgreSQL database (see the module docstring for an example).

    ``url`` is a libpq URL. ``pool_size`` caps the connections this store holds;
    ``timeout`` is how long a call waits for a connection. ``window_radius`` is accepted
    like SQLite's, but the window/date search key is not built here yet (see
    :meth:`search_text`). Implements
    :class:`pmm.storage.base.EventLog`.
    """

    def __init__(
        self,
        url: str,
        *,
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        timeout: float = 30.0,
        pool_size: int = 4,
        window_radius: int = 0,
    ) -> None:
        self.url = url
        self.path = Database.redacted(url)
        self.max_content_bytes = max_content_bytes
        self._db = Database(url, timeout=timeout, pool_size=pool_size)
        self._lexemes = (0, None)
        self._warned_keys = False
        self.window_radius = window_radius  # accepted for parity; no window key here yet
        self.applied_migrations = self._db.migrate()

    def close(self) -> None:
        """Close the pool. The store cannot be used afterwards."""
        self._db.close()

    def __enter__(self) -> PostgresEventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresEventStore({self.path!r})"

    # -- writing ---------------------------------------------------------------------

    def append(
        self,
        kind: str,
        content: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Event:
        """Append one event and return it with its id, timestamp and hash."""
        return self.append_many([NewEvent(kind, content, session_id, role, meta)])[0]

    def append_many(self, entries: Iterable[NewEvent]) -> list[Event]:
        """Append several events in one transaction: all of them are stored, or none."""
        checked = [check_new_event(e, self.max_content_bytes) for e in entries]
        if not checked:
            return []
        with self._db.write() as conn:
            return self._append_locked(conn, checked)

    def _append_locked(
        self, conn: psycopg.Connection[Any], checked: list[CheckedEvent]
    ) -> list[Event]:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
        head = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        last_id, prev_hash = (int(head[0]), head[1]) if head else (0, None)
        events = seal(checked, last_id=last_id, prev_hash=prev_hash, ts=utc_now())
        rows = [
            (e.id, e.ts, e.kind, e.session_id, e.role, e.content, e.content_sha256,
             c.meta_json, e.prev_hash, e.hash, e.hash_version)
            for e, c in zip(events, checked, strict=True)
        ]  # fmt: skip
        with conn.cursor() as cur:
            cur.executemany(INSERT, rows)
        return events

    def redact(self, event_id: int, *, reason: str) -> Event:
        """Erase one event's raw text, digest and vectors, recorded as a chained
        ``redaction`` event (see :meth:`pmm.storage.sqlite.EventStore.redact`)."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInputError("redact() needs a reason, e.g. reason='user asked'")
        with self._db.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
            target = conn.execute(
                "SELECT session_id, hash_version, content IS NOT NULL FROM events"
                " WHERE id = %s FOR UPDATE",
                (event_id,),
            ).fetchone()
            if target is None or not target[2]:
                raise EventNotFoundError(f"no event with id {event_id} holding text to redact")
            if target[1] == LEGACY_HASH_VERSION:
                raise InvalidInputError(
                    f"event {event_id} was written by the earlier PMM, whose hash covers the "
                    "text itself: redacting it would break the chain for good"
                )
            marker = check_new_event(
                NewEvent(
                    "redaction",
                    f"redacted event {event_id}",
                    target[0],
                    "system",
                    {"target": event_id, "reason": reason},
                ),
                self.max_content_bytes,
            )
            conn.execute(
                "UPDATE events SET content = NULL, summary = NULL, keywords = NULL,"
                " digest_method = 'redacted' WHERE id = %s",
                (event_id,),
            )
            conn.execute("DELETE FROM embeddings WHERE event_id = %s", (event_id,))
            conn.execute(BUMP)
            return self._append_locked(conn, [marker])[0]

    def forget(
        self,
        *,
        event_ids: Iterable[int] | None = None,
        session_id: str | None = None,
        match: str | None = None,
        reason: str,
    ) -> ErasureReport:
        """Not on PostgreSQL yet: erased text must also leave the table's dead tuples and the
        server's WAL, which needs a VACUUM FULL policy this store does not have. Use
        :meth:`redact` per event (the chain records it), or copy the log to SQLite."""
        raise UnsupportedOperationError(
            f"forget() is not available on PostgreSQL ({self.path}) yet: use redact(event_id, "
            "reason=...) per event, then VACUUM FULL events on the server"
        )

    def compact(
        self, *, older_than: str | timedelta, session_id: str | None = None, dry_run: bool = False
    ) -> CompactionReport:
        """Not on PostgreSQL yet (see :meth:`forget`)."""
        raise UnsupportedOperationError(
            f"compact() is not available on PostgreSQL ({self.path}) yet: compaction runs on "
            "SQLite logs (copy with pmm.storage.copy.copy_log)"
        )

    def import_events(self, events: Iterable[Event]) -> VerifyReport:
        """Insert exported events verbatim (same ids, timestamps, hashes, digests) into an
        empty log, in one transaction; refuses a chain that does not verify (nothing is
        written then). Embeddings are not imported: recompute them afterwards."""
        rows = [
            (e.id, e.ts, e.kind, e.session_id, e.role, e.content, e.content_sha256,
             _meta_spelling(e), e.prev_hash, e.hash, e.hash_version, e.summary,
             json.dumps(list(e.keywords), ensure_ascii=False) if e.keywords else None,
             e.digest_method)
            for e in events
        ]  # fmt: skip
        walker = ChainWalker()
        for r in sorted(rows, key=lambda r: r[0]):
            if walker.step(*r[:11]) is not None:
                break
        report = walker.report()
        if not report.ok:
            raise IntegrityError(
                f"the imported chain does not verify at event {report.first_bad_id}: "
                f"{report.reason}; nothing was imported"
            )
        with self._db.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
            if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone():
                raise InvalidInputError(
                    f"{self.path} already holds events: import only into a new, empty database"
                )
            marks = ", ".join(["%s"] * 14)
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO events({COLUMNS}) VALUES ({marks})", rows)
            conn.execute(BUMP)
        return self.verify()

    # -- reading ---------------------------------------------------------------------

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
    ) -> list[Event]:
        """Events filtered by session, kinds and an id range, oldest first unless asked."""
        where, params = filters(session_id, kinds, after_id, before_id)
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
    ) -> list[TurnRow]:
        """Like :meth:`events` newest first, but only the columns a prompt needs."""
        where, params = filters(session_id, kinds, after_id, before_id)
        sql = (
            "SELECT id, ts, kind, session_id, role, content, summary FROM events"
            f"{where} ORDER BY id DESC"
        )
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        return [TurnRow(int(r[0]), *r[1:]) for r in self._db.read(sql, params)]

    def iter_events(self, *, batch: int = 1000, after_id: int = 0) -> Iterator[Event]:
        """Every event in id order, read in batches (for export and copies)."""
        while True:
            rows = self.events(after_id=after_id, limit=batch)
            if not rows:
                return
            yield from rows
            after_id = rows[-1].id

    def head(self) -> Event | None:
        """The newest event, or None for an empty log."""
        rows = self.events(newest_first=True, limit=1)
        return rows[0] if rows else None

    def count(self, *, session_id: str | None = None, kinds: Iterable[str] | None = None) -> int:
        """How many events match."""
        where, params = filters(session_id, kinds, None, None)
        return int(self._db.read(f"SELECT count(*) FROM events{where}", params)[0][0])

    def last_id(self, *, session_id: str | None = None, kinds: Iterable[str] | None = None) -> int:
        """The id of the newest matching event, 0 when there is none."""
        where, params = filters(session_id, kinds, None, None)
        return int(self._db.read(f"SELECT max(id) FROM events{where}", params)[0][0] or 0)

    def event_ids(
        self,
        *,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        after_id: int | None = None,
    ) -> list[int]:
        """Ids of the matching events, oldest first."""
        where, params = filters(session_id, kinds, after_id, None)
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
        size = self._db.read(
            "SELECT pg_total_relation_size('events') + pg_total_relation_size('embeddings')"
            " + pg_total_relation_size('edges')"
        )[0][0]
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
        }

    def applied_migrations_all(self) -> list[int]:
        """Every migration version recorded in this database."""
        return [int(r[0]) for r in self._db.read("SELECT version FROM schema_migrations")]

    def verify(self, *, expect_head: str | None = None) -> VerifyReport:
        """Walk the whole chain through a server-side cursor (constant memory) and report
        the first row that does not verify (see :class:`pmm.chain.ChainWalker`)."""
        walker = ChainWalker(expect_head=expect_head)
        rows = self._db.stream(
            "SELECT id, ts, kind, session_id, role, content, content_sha256, meta,"
            " prev_hash, hash, hash_version FROM events ORDER BY id"
        )
        with contextlib.closing(rows):
            for row in rows:
                if walker.step(*row) is not None:
                    break
        return walker.report()


def _meta_spelling(event: Event) -> str:
    """The meta text an imported row's hash covers (the earlier PMM hashed its own)."""
    if event.hash_version == LEGACY_HASH_VERSION and event.content is not None:
        for spelling in (json.dumps(event.meta), json.dumps(event.meta, ensure_ascii=False)):
            if legacy_hash(event.prev_hash, event.kind, event.content, spelling) == event.hash:
                return spelling
    return canonical_json(event.meta)
