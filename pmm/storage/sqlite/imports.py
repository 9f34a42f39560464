"""A rebased import on SQLite: one user's export into a file that already holds events
(see :mod:`pmm.events.rebase` and ``docs/design/chains.md``, "Import").

    report = import_user(store, events, keys)    # her chain's verify report in this file

:func:`rebase_user` is its write: it needs only what
:class:`~pmm.storage.sqlite.handles.ChainedFile` names (a connection, its lock and write
transaction, the chained append); :func:`import_user` adds the derived data and the
verify report, through the log's public methods (:class:`~pmm.storage.base.EventLog`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pmm.errors import IntegrityError
from pmm.events.rebase import rebased, refuse_taken, single_user, verify_export
from pmm.records import Event, VerifyReport
from pmm.storage.imports import restore_derived

if TYPE_CHECKING:
    from pmm.storage.sqlite.handles import ChainedFile, ImportTarget


def import_user(
    store: ImportTarget, events: Sequence[Event], keys: Sequence[tuple[str, bytes]]
) -> VerifyReport:
    """Verify the file on its own and append its user's events with new ids
    (:func:`rebase_user`); then the derived data. Returns ``verify(user_id=...)``."""
    user, appended = rebase_user(store, events, keys)
    restore_derived(store, events, appended)
    store.sync_search_index()
    return store.verify(user_id=user)


def rebase_user(
    file: ChainedFile, events: Sequence[Event], keys: Sequence[tuple[str, bytes]]
) -> tuple[str, list[Event]]:
    """Verify the export ``events`` on its own (``keys``: its chain secrets), then append
    its one user's events with new ids in one write transaction (``BEGIN IMMEDIATE``: the
    ids after the newest, one block), through the file's own chained append. Returns her
    user id and the events as appended. Refuses (writing nothing) a user or a session the
    file holds already."""
    report = verify_export(events, keys)
    user = single_user(events)
    sessions = sorted({e.session_id for e in events if e.session_id is not None})
    with file._lock, file._write() as conn:
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
        appended = file._append_locked(conn, rebased(events, ids, report, file.max_content_bytes))
        if [e.id for e in appended] != ids:  # the append numbers after max(id), as read here
            raise IntegrityError(
                "the import's ids moved while it was written; nothing was imported"
            )
    return user, appended
