"""PostgresEventStore: the event log in PostgreSQL, shared by many processes and machines.

    from pmm.storage.postgres import PostgresEventStore

    with PostgresEventStore("postgresql://app@db.internal/pmm") as store:
        ev = store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
        store.search_text("Lisbon", session_id="alice")     # [(ev.id, score)]
        store.verify().ok                                    # True

The chain rule, input checks and verification are :mod:`pmm.events.chain`'s, as on SQLite. Every
append takes its user's transaction-scoped advisory lock before it reads her chain's head,
so appends from any number of connections, processes and machines extend each chain in
order while different users append concurrently (:mod:`.chains`). Migrations (numbered
SQL files in ``migrations/`` beside this module) are applied once, under a session advisory
lock, by whichever process gets there first. Keyword search is PostgreSQL full text
(``tsvector`` + GIN, ranked by ``ts_rank_cd``) over the turn key and the window/date key
(:mod:`.windows`, kept in step in the transactions that change turns); vectors are float32
bytes, searched by pgvector's HNSW index when the server has it (:mod:`.vectors`) and
exactly by PMM otherwise. ``forget`` and ``compact`` rewrite the tables afterwards
(:mod:`.erasure`). This module writes; the reads (the one events query, stats' figures,
verify) are :mod:`.queries`', and the calls written once above them are
:class:`pmm.storage.shared.SharedLog`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pmm.errors import (
    InvalidInputError,
)
from pmm.events.chain import CheckedEvent
from pmm.events.chains import key_heads
from pmm.events.rebase import meta_spelling, verify_export
from pmm.records import Event, NewEvent, VerifyReport
from pmm.storage.postgres.append_cache import AppendCache, Seen
from pmm.storage.postgres.chains import (
    OWNERS,
    append_locked,
    import_keys,
    lock_sessions,
)
from pmm.storage.postgres.connection import APPEND_LOCK, Database
from pmm.storage.postgres.consolidation import ConsolidationData
from pmm.storage.postgres.derived import DerivedData
from pmm.storage.postgres.meta_keys import MetaKeys, StoreExpiry
from pmm.storage.postgres.queries import EventQueries
from pmm.storage.postgres.rows import BUMP, COLUMNS, meta_field, move_session
from pmm.storage.postgres.vectors import setup_vectors
from pmm.storage.postgres.windows import (
    WINDOW_STATE,
    built_radius,
    rebuild_windows,
    windows_current,
)
from pmm.storage.shared import check_assignable
from pmm.text.window_keys import DEFAULT_WINDOW_RADIUS

if TYPE_CHECKING:
    from datetime import timedelta

    import psycopg

    from pmm.retention.compaction import CompactionReport
    from pmm.retention.erasure import ErasureReport

DEFAULT_MAX_CONTENT_BYTES = 1_048_576
_HAS_FAST = "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 11)"


class PostgresEventStore(EventQueries, DerivedData, ConsolidationData, MetaKeys, StoreExpiry):
    """The event log in one PostgreSQL database (see the module docstring for an example).

    ``url`` is a libpq URL. ``pool_size`` caps the connections this store holds;
    ``timeout`` is how long a call waits for a connection. ``window_radius`` is how many
    turns before and after a turn its window key holds (PMM_RECALL_WINDOW; one radius per
    database: opening it with another one rebuilds the window keys). Implements
    :class:`pmm.storage.base.EventLog`.
    """

    fast_appends = True
    """Whether ``append_many`` tries the one-call append first (migrations/0011). Off in
    a subclass that overrides ``_append_locked`` (the one-call append would bypass it)."""

    def __init__(
        self,
        url: str,
        *,
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        timeout: float = 30.0,
        pool_size: int = 4,
        window_radius: int = DEFAULT_WINDOW_RADIUS,
    ) -> None:
        if (
            not isinstance(window_radius, int)
            or isinstance(window_radius, bool)
            or not (0 <= window_radius <= 20)
        ):
            raise InvalidInputError(f"window_radius must be an int 0..20, got {window_radius!r}")
        self.url = url
        self.path = Database.redacted(url)
        self.max_content_bytes = max_content_bytes
        self._db = Database(url, timeout=timeout, pool_size=pool_size)
        self._lexemes = (0, None)
        self.window_radius = window_radius
        self.appends = AppendCache(window_radius)
        """What this store remembers of its appends, for the one-call append
        (:mod:`pmm.storage.postgres.append_cache`; ``appends.fast`` counts those)."""
        try:
            self.applied_migrations = self._db.migrate()
        except BaseException:
            self._db.close()
            raise
        if type(self)._append_locked is not PostgresEventStore._append_locked:
            self.fast_appends = False  # its own locks or checks must see every append
        if self.fast_appends:  # a schema migrated by this code has it; a test's may not
            self.fast_appends = bool(self._db.read(_HAS_FAST)[0][0])
        self._build_windows()
        self.vector_backend, self.vector_detail = setup_vectors(self._db)
        """``"pgvector"`` (HNSW candidates, exact re-score) or ``"bytea"`` (PMM searches
        the float32 vectors exactly), and why (see :mod:`pmm.storage.postgres.vectors`)."""

    def _build_windows(self) -> None:
        """Build the window keys when this database's were built with another radius or body
        format (or never: a database from before migration 0003 or 0007)."""
        if windows_current(self._db.read(WINDOW_STATE)[0], self.window_radius):
            return
        with self._db.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
            if built_radius(conn) != self.window_radius:
                rebuild_windows(conn, self.window_radius)

    def close(self) -> None:
        """Close the pool. The store cannot be used afterwards."""
        self._db.close()

    # -- writing (the shared layer checks the entries) ----------------------------------

    def _append_checked(self, checked: list[CheckedEvent], unique_meta: str | None) -> list[Event]:
        """The one-call append first (:mod:`.append_cache`), else a transaction that takes
        each user's lock (``unique_meta`` checked in it under the session's lock)."""
        if unique_meta is not None:
            meta_field(unique_meta)  # a plain name, or InvalidInputError before any write
        if self.fast_appends:
            events = self.appends.append(self._db, checked, unique_meta)
            if events is not None:
                return events
        seen = Seen()
        with self._db.write() as conn:
            events = self._append_locked(conn, checked, unique_meta, seen)
        self.appends.learn(seen)  # committed
        return events

    def _append_locked(
        self,
        conn: psycopg.Connection[Any],
        checked: list[CheckedEvent],
        unique_meta: str | None = None,
        seen: Seen | None = None,
        ids: Sequence[int] | None = None,
    ) -> list[Event]:
        # Per-user locks and heads: see pmm.storage.postgres.chains (``ids``: taken by the
        # caller, as a rebased import does).
        return append_locked(conn, checked, self.window_radius, unique_meta, seen, ids)

    def session_owner(self, session_id: str) -> tuple[bool, str | None]:
        """``(has_rows, user_id)`` of a session: whether the log holds any of its events,
        and the user it belongs to (None: none, or written without a user)."""
        rows = self._db.read(OWNERS, ([session_id],))
        return (False, None) if not rows else (True, rows[0][1])

    def _assign(self, session_id: str, user_id: str, entry: CheckedEvent) -> Event:
        """Its rows (with their vectors and window keys) move to her partition and
        ``entry`` is appended, in one transaction under the session's lock."""
        with self._db.write() as conn:
            lock_sessions(conn, [session_id])  # its appends wait; other users' do not
            rows = conn.execute(OWNERS, ([session_id],)).fetchall()
            check_assignable(session_id, user_id, bool(rows), rows[0][1] if rows else None)
            move_session(conn, session_id, user_id)
            [event] = self._append_locked(conn, [entry])
            conn.execute(BUMP)
            return event

    def _erase(self, *, require_text: bool, pause: float = 0.0, **request: Any) -> ErasureReport:
        """:func:`pmm.storage.postgres.erasure.forget`: the erased rows' partitions are
        rewritten so that their text leaves the tables' data files. ``pause`` (0 to 10 s):
        seconds between the chunks of each partition's copy, a throttle that stretches the
        erasure to leave other users' appends more WAL and CPU::

            store.forget(session_ids=["alice/t1"], reason="account deleted", pause=0.02)
        """
        from pmm.storage.postgres.erasure import forget

        return forget(self, require_text=require_text, pause=pause, **request)

    def compact(
        self, *, older_than: str | timedelta, session_id: str | None = None, dry_run: bool = False
    ) -> CompactionReport:
        """Drop the raw text of digested turns older than ``older_than`` (``"30d"``),
        recorded as a chained ``compaction`` event (see :mod:`pmm.retention.compaction`)."""
        from pmm.storage.postgres.erasure import compact

        return compact(self, older_than=older_than, session_id=session_id, dry_run=dry_run)

    def rewrite_tables(self) -> tuple[int, int]:
        """Rewrite PMM's tables so that no dead row version holds erased text (every
        partition copied and swapped in, the small tables by ``VACUUM FULL``, see
        :func:`pmm.storage.postgres.erasure.rewrite`); returns the bytes they took before
        and after. :meth:`forget`, :meth:`redact` and :meth:`compact` rewrite the erased
        rows' partitions only."""
        from pmm.storage.postgres.erasure import rewrite, table_bytes

        before = table_bytes(self._db)
        rewrite(self._db)
        return before, table_bytes(self._db)

    def _checked(self, entry: NewEvent) -> CheckedEvent:
        """An entry checked for appending (the erasure driver's name for ``_check``)."""
        return self._check(entry)

    def import_events(
        self, events: Iterable[Event], *, keys: Iterable[tuple[str, bytes]] = ()
    ) -> VerifyReport:
        """Import exported events in one transaction: verbatim (same ids, timestamps,
        hashes, digests) into an empty log, returning the verify report of the result;
        into a log that already holds events, one user's export with new ids onto a new
        chain of hers (:mod:`pmm.storage.postgres.imports`), returning her chain's verify
        report. Refuses a chain that does not verify, and a file a non-empty log cannot
        take (nothing is written then); see the SQLite store's ``import_events``.
        ``keys``: the source's chain secrets (:meth:`chain_keys`), which its version-3
        rows need. Embeddings are not imported: recompute them afterwards."""
        events = list(events)
        keys = list(keys)
        if self._db.read("SELECT 1 FROM events LIMIT 1"):
            from pmm.storage.postgres.imports import import_user

            return import_user(self, events, keys)
        rows = [
            (e.id, e.ts, e.kind, e.session_id, e.role, e.content, e.content_sha256,
             meta_spelling(e), e.prev_hash, e.hash, e.hash_version, e.summary,
             json.dumps(list(e.keywords), ensure_ascii=False) if e.keywords else None,
             e.digest_method, e.user_id, e.user_digest, e.session_digest)
            for e in events
        ]  # fmt: skip
        verify_export(events, keys)  # nothing is written unless it verifies
        with self._db.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
            if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone():
                raise InvalidInputError(
                    f"{self.path} already holds events: import only into a new, empty database"
                )
            marks = ", ".join(["%s"] * 17)
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO events({COLUMNS}, shard) VALUES ({marks}, pmm_shard(%s::text))",
                    [(*r, r[14]) for r in rows],
                )
            conn.execute(
                "INSERT INTO session_owners SELECT DISTINCT ON (session_id) session_id, user_id"
                " FROM events WHERE session_id IS NOT NULL ORDER BY session_id, id DESC"
            )
            import_keys(conn, keys, key_heads(events, keys))
            rebuild_windows(conn, self.window_radius)
            conn.execute(BUMP)
        return self.verify()
