"""What the PostgreSQL drivers (erasure, compaction, imports) hold of an open log: small
protocols naming only the members each driver uses, so that a driver never names
:class:`pmm.storage.postgres.PostgresEventStore` and runs on anything that has them.

The store has them all and hands itself over (``forget(self, ...)``); a test or a tool can
build one over a bare :class:`~pmm.storage.postgres.connection.Database`::

    db = Database(url, timeout=30.0, pool_size=2)
    db.migrate()
    with db.write() as conn:                         # window keys for radius 3
        rebuild_windows(conn, 3)

    class Bare:                                      # satisfies ChainedDatabase
        _db, window_radius, max_content_bytes = db, 3, 1_048_576
        def _checked(self, entry): return check_new_event(entry, self.max_content_bytes)
        def _append_locked(self, conn, checked, *, ids=None):
            return append_locked(conn, checked, self.window_radius, ids=ids)

    compact(Bare(), older_than="30d")

The names are the store's own (``_db``, ``_append_locked``, ...): what a driver is handed
is the store's state, read, never the store's class. (:mod:`pmm.storage.postgres.swap`
takes the ``Database`` alone.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pmm.events.chain import CheckedEvent
from pmm.records import Event, NewEvent
from pmm.storage.base import EventLog
from pmm.storage.postgres.connection import Database

if TYPE_CHECKING:
    import psycopg


class ChainedDatabase(Protocol):
    """The database (its pool), the window radius its window keys are built with, and the
    chained append inside the caller's transaction
    (:func:`pmm.storage.postgres.chains.append_locked`): what erasure and compaction use."""

    @property
    def _db(self) -> Database: ...

    @property
    def window_radius(self) -> int: ...

    @property
    def max_content_bytes(self) -> int: ...

    def _checked(self, entry: NewEvent) -> CheckedEvent: ...

    def _append_locked(
        self,
        conn: psycopg.Connection[Any],
        checked: list[CheckedEvent],
        *,
        ids: Sequence[int] | None = None,
    ) -> list[Event]: ...


class ImportTarget(EventLog, ChainedDatabase, Protocol):
    """What a rebased import uses: the chained append for its one transaction
    (:func:`pmm.storage.postgres.imports.rebase_user`), then the log's public methods for
    the derived data and the verify report."""
