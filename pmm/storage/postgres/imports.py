"""A rebased import on PostgreSQL: one user's export into a database that already holds
events (see :mod:`pmm.events.rebase` and ``docs/design/chains.md``, "Import").

    report = import_user(store, events, keys)    # her chain's verify report there

The import holds :data:`~pmm.storage.postgres.connection.APPEND_LOCK` exclusively, as the
other writers that rewrite the log do: every append (each takes it shared) waits for its
one transaction, so no other append takes an id from ``events_id_seq`` meanwhile and the
imported rows get one contiguous block of ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pmm.errors import IntegrityError
from pmm.events.rebase import rebased, refuse_taken, single_user, verify_export
from pmm.records import Event, VerifyReport
from pmm.storage.imports import restore_derived
from pmm.storage.postgres.chains import OWNERS
from pmm.storage.postgres.connection import APPEND_LOCK
from pmm.storage.postgres.rows import BUMP

if TYPE_CHECKING:
    from pmm.storage.postgres.store import PostgresEventStore

_NEXT_ID = "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM events_id_seq"
_USER_ROWS = "SELECT count(*) FROM events WHERE shard = pmm_shard(%s::text) AND user_id = %s"


def import_user(
    store: PostgresEventStore, events: Sequence[Event], keys: Sequence[tuple[str, bytes]]
) -> VerifyReport:
    """Verify the file on its own, then append its user's events with new ids in one
    transaction under the exclusive append lock, through the store's own append (rows,
    chain head, session owners, window keys); then the derived data. Returns
    ``verify(user_id=...)``."""
    report = verify_export(events, keys)
    user = single_user(events)
    sessions = sorted({e.session_id for e in events if e.session_id is not None})
    with store._db.write() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
        rows = conn.execute(_USER_ROWS, (user, user)).fetchone()
        chain = conn.execute("SELECT 1 FROM chains WHERE chain = %s", (user,)).fetchone()
        refuse_taken(
            user,
            user_rows=0 if rows is None else int(rows[0]),
            has_chain=chain is not None,
            taken_sessions=sorted(str(r[0]) for r in conn.execute(OWNERS, (sessions,))),
        )
        row = conn.execute(_NEXT_ID).fetchone()
        first = 1 if row is None else int(row[0])
        ids = list(range(first, first + len(events) + 1))
        appended = store._append_locked(conn, rebased(events, ids, report, store.max_content_bytes))
        if [e.id for e in appended] != ids:  # the sequence gave other ids than it showed
            raise IntegrityError(
                "the import's ids did not come as one block from events_id_seq; "
                "nothing was imported"
            )
        conn.execute(BUMP)
    restore_derived(store, events, appended)
    return store.verify(user_id=user)
