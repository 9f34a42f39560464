"""A rebased import on PostgreSQL: one user's export into a database that already holds
events (see :mod:`pmm.events.rebase` and ``docs/design/chains.md``, "Import").

    report = import_user(store, events, keys)    # her chain's verify report there

:func:`rebase_user` is its write: it needs only what
:class:`~pmm.storage.postgres.handles.ChainedDatabase` names (the database, the chained
append); :func:`import_user` adds the derived data and the verify report, through the
log's public methods (:class:`~pmm.storage.base.EventLog`).

The import takes the locks an append of hers takes, in the same order
(:data:`~pmm.storage.postgres.connection.APPEND_LOCK` shared, her sessions' locks, her
chain's lock; see :mod:`pmm.storage.postgres.chains`), then refuses a user or a session
the log holds already: no first append of hers or of one of her sessions can slip in
between, and a second import of hers waits, then is refused. Her ids are taken from
``events_id_seq`` up front; other users' appends go on meanwhile, so their ids may fall
between hers (every reader of an id range also filters by session). One transaction:
all of it, or nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pmm.errors import IntegrityError
from pmm.events.rebase import rebased, refuse_taken, single_user, verify_export
from pmm.records import Event, VerifyReport
from pmm.storage.imports import restore_derived
from pmm.storage.postgres.chains import OWNERS, lock_chains, lock_sessions
from pmm.storage.postgres.rows import BUMP

if TYPE_CHECKING:
    from pmm.storage.postgres.handles import ChainedDatabase, ImportTarget

_USER_ROWS = "SELECT count(*) FROM events WHERE shard = pmm_shard(%s::text) AND user_id = %s"
_TAKE_IDS = "SELECT nextval('events_id_seq') FROM generate_series(1, %s)"


def import_user(
    store: ImportTarget, events: Sequence[Event], keys: Sequence[tuple[str, bytes]]
) -> VerifyReport:
    """Verify the file on its own and append its user's events with new ids
    (:func:`rebase_user`); then the derived data. Returns ``verify(user_id=...)``."""
    user, appended = rebase_user(store, events, keys)
    restore_derived(store, events, appended)
    return store.verify(user_id=user)


def rebase_user(
    pg: ChainedDatabase, events: Sequence[Event], keys: Sequence[tuple[str, bytes]]
) -> tuple[str, list[Event]]:
    """Verify the export ``events`` on its own (``keys``: its chain secrets), then append
    its one user's events with new ids in one transaction, under her sessions' and her
    chain's locks, through the log's own append (rows, chain head, session owners, window
    keys). Returns her user id and the events as appended. Refuses (writing nothing) a
    user or a session the log holds already."""
    report = verify_export(events, keys)
    user = single_user(events)
    sessions = sorted({e.session_id for e in events if e.session_id is not None})
    # The sessions the append locks: hers, and none (the provenance record's).
    locked = {*sessions, None}
    with pg._db.write() as conn:
        lock_sessions(conn, locked)
        lock_chains(conn, [user])
        rows = conn.execute(_USER_ROWS, (user, user)).fetchone()
        chain = conn.execute("SELECT 1 FROM chains WHERE chain = %s", (user,)).fetchone()
        refuse_taken(
            user,
            user_rows=0 if rows is None else int(rows[0]),
            has_chain=chain is not None,
            taken_sessions=sorted(str(r[0]) for r in conn.execute(OWNERS, (sessions,))),
        )
        ids = sorted(int(r[0]) for r in conn.execute(_TAKE_IDS, (len(events) + 1,)))
        planned = rebased(events, ids, report, pg.max_content_bytes)
        if {c.entry.session_id for c in planned} != locked:
            raise IntegrityError("the import would append to a session it did not lock")
        appended = pg._append_locked(conn, planned, ids=ids)
        if [e.id for e in appended] != ids:
            raise IntegrityError(
                "the import's rows did not get the ids taken for them; nothing was imported"
            )
        conn.execute(BUMP)
    return user, appended
