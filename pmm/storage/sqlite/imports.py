"""A rebased import on SQLite: one user's export into a file that already holds events
(see :mod:`pmm.events.rebase` and ``docs/design/chains.md``, "Import").

    report = import_user(store, events, keys)    # her chain's verify report in this file
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pmm.errors import IntegrityError
from pmm.events.rebase import rebased, refuse_taken, single_user, verify_export
from pmm.records import Event, VerifyReport
from pmm.storage.imports import restore_derived

if TYPE_CHECKING:
    from pmm.storage.sqlite.store import EventStore


def import_user(
    store: EventStore, events: Sequence[Event], keys: Sequence[tuple[str, bytes]]
) -> VerifyReport:
    """Verify the file on its own, then append its user's events with new ids in one
    write transaction (``BEGIN IMMEDIATE``: the ids after the newest, one block), through
    the store's own append; then the derived data. Returns ``verify(user_id=...)``."""
    report = verify_export(events, keys)
    user = single_user(events)
    sessions = sorted({e.session_id for e in events if e.session_id is not None})
    with store._lock, store._write() as conn:
        taken = [
            s
            for s in sessions
            if conn.execute("SELECT 1 FROM events WHERE session_id = ? LIMIT 1", (s,)).fetchone()
        ]
        refuse_taken(
            user,
            user_rows=int(
                conn.execute("SELECT count(*) FROM events WHERE user_id = ?", (user,)).fetchone()[0]
            ),
            has_chain=conn.execute("SELECT 1 FROM chains WHERE chain = ?", (user,)).fetchone()
            is not None,
            taken_sessions=taken,
        )
        first = int(conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]) + 1
        ids = list(range(first, first + len(events) + 1))
        appended = store._append_locked(conn, rebased(events, ids, report, store.max_content_bytes))
        if [e.id for e in appended] != ids:  # the append numbers after max(id), as read here
            raise IntegrityError(
                "the import's ids moved while it was written; nothing was imported"
            )
    restore_derived(store, events, appended)
    store.sync_search_index()
    return store.verify(user_id=user)
