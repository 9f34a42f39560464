"""Erasure and compaction on PostgreSQL: the same guarantees as SQLite where PostgreSQL
allows them (see :mod:`pmm.retention.erasure` and :mod:`pmm.retention.compaction` for the rules).

    store.forget(session_id="alice", reason="user asked")     # -> ErasureReport
    store.compact(older_than="30d")                            # -> CompactionReport
    forget(store, session_id="alice", reason="user asked")    # the same, as the store calls it

(``store``: a :class:`~pmm.storage.postgres.PostgresEventStore`, or anything with the
members of :class:`~pmm.storage.postgres.handles.ChainedDatabase`.)

In one transaction under the locks of the sessions and chains it touches (appends to them
wait; other users' go on; compaction, and an erasure whose ``match`` found rows of other
sessions once those locks were taken, hold the exclusive append lock instead): the text,
summary and keywords of the events (and of the session summaries built from them) become
NULL, so their ``search`` tsvector (a generated column) is recomputed without them; their
vectors, edges and window keys are deleted and the windows of their neighbouring turns
rewritten; one chained ``redaction`` event per session records the ids and the reason.
Compaction drops only the raw text of old digested turns and records one chained
``compaction`` event.

Then what held the erased rows is rewritten (:func:`rewrite`): ``events``, ``embeddings``
and ``event_windows`` are partitioned by user (migrations/0009), and only the partitions
that held erased rows are rewritten, each copied beside the live one while other users go
on appending to it and swapped in one short transaction (:mod:`pmm.storage.postgres.swap`:
appends wait for that swap alone, tens of milliseconds), and so is the no-user partition when
one of their sessions was moved out of it by ``assign_user`` (the move is an ``UPDATE`` of
the partition key, which leaves dead copies behind); the small unpartitioned tables
``edges``, ``chains`` and ``session_owners`` get ``VACUUM FULL`` (an exclusive lock for the
time of copying them). The dropped partition's files, TOAST and indexes (GIN included) are
unlinked, so the dead row versions that still held the text leave the data files;
``ANALYZE`` then replaces the column statistics and ``VACUUM FULL pg_statistic`` drops the
old ones (they sample values and lexemes; the database owner may rewrite that catalog,
other users get a warning). What PostgreSQL does not let PMM erase: the write-ahead log
(``pg_wal``) keeps the old bytes until its segments are recycled after later checkpoints,
and so do WAL archives, replicas' WAL and base backups; a row version still visible to a
transaction that was open during the rewrite is copied along (the copy reads the live
rows of its own snapshots, and old snapshots do not hold it back).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pmm.errors import DatabaseError
from pmm.events.chain import ASSIGN_KIND
from pmm.events.hashing import CHAIN_HASH_VERSION, LEGACY_HASH_VERSION
from pmm.records import Event
from pmm.retention.compaction import CompactionReport, compaction_marker, cutoff
from pmm.retention.erasure import (
    PROTECTED_KINDS,
    SUMMARIZES,
    ErasureReport,
    check_not_legacy,
    check_picked,
    check_targets,
    checked_request,
    matches,
    redaction_entries,
    unfinished,
)
from pmm.storage.postgres.chains import lock_chains, lock_sessions
from pmm.storage.postgres.connection import APPEND_LOCK, Database
from pmm.storage.postgres.rows import BUMP, TABLE_BYTES
from pmm.storage.postgres.swap import (
    PARTITIONED,
    checked_pause,
    older_snapshots_gone,
    rewrite_partition,
)
from pmm.storage.postgres.windows import sync_windows

if TYPE_CHECKING:
    import psycopg

    from pmm.storage.postgres.handles import ChainedDatabase

log = logging.getLogger(__name__)

UNPARTITIONED = ("edges", "chains", "session_owners")
"""The small tables that an erasure also rewrites (``VACUUM FULL``): the erased rows'
edges, her chain's secret and her sessions' owners."""
ALL_SHARDS = tuple(range(33))
_UNDONE = (
    "the tables could not be rewritten afterwards: until they are, dead row versions in "
    "their data files may still hold the {} text. Free some space on the server (each "
    "partition's copy needs room beside it), then run `pmm forget --scrub --db URL` to finish"
)


def table_bytes(db: Database) -> int:
    """Bytes of PMM's tables with their partitions, TOAST tables and indexes."""
    return int(db.read(TABLE_BYTES)[0][0])


def rewrite(db: Database, shards: Iterable[int] = ALL_SHARDS, *, pause: float = 0.0) -> None:
    """Rewrite the partitions ``shards`` of the tables partitioned by user (each copied
    and swapped, :func:`pmm.storage.postgres.swap.rewrite_partition`, ``pause`` seconds
    between its chunks), then the rest (:func:`rewrite_rest`). See the module docstring
    for what this does and does not remove."""
    pause = checked_pause(pause)
    for shard in sorted(set(shards)):
        for table in PARTITIONED:
            report = rewrite_partition(db, table, shard, pause=pause)
            log.debug("rewrote %s: %s", report.partition, report)
    rewrite_rest(db)


def rewrite_rest(db: Database) -> None:
    """After the partitions: ``VACUUM FULL`` of the small tables of :data:`UNPARTITIONED`,
    ``ANALYZE`` of them (and of the partitioned tables that have statistics of their own),
    then ``VACUUM FULL`` of ``pg_statistic``, whose replaced rows held samples of the
    erased text (allowed to the database's owner; anyone else gets one warning)::

        rewrite_rest(store._db)
    """
    # A partitioned table's own statistics sample every partition, so its ANALYZE reads
    # them all (tens of seconds at a million events); autovacuum never makes them, and
    # without them there is nothing of the erased rows to replace (the copies were
    # analyzed before their swap).
    sampled = {
        str(r[0])
        for r in db.read(
            "SELECT DISTINCT tablename FROM pg_stats WHERE inherited"
            " AND schemaname = current_schema() AND tablename = ANY(%s)",
            (list(PARTITIONED),),
        )
    }
    analyzed = [t for t in PARTITIONED if t in sampled] + list(UNPARTITIONED)
    older_snapshots_gone(db, warn=True)
    for sql in (
        *(f"VACUUM FULL {table}" for table in UNPARTITIONED),
        f"ANALYZE {', '.join(analyzed)}",
    ):
        started = time.perf_counter()
        db.run(sql)
        log.debug("%.3f s: %s", time.perf_counter() - started, sql)
    may = db.read(
        "SELECT pg_has_role(current_user, datdba, 'MEMBER') OR"
        " (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
        " FROM pg_database WHERE datname = current_database()"
    )[0][0]
    if may:
        started = time.perf_counter()
        older_snapshots_gone(db, warn=True)  # again: ANALYZE has just replaced statistics
        db.run("VACUUM FULL pg_statistic")
        log.debug("%.3f s: VACUUM FULL pg_statistic", time.perf_counter() - started)
    else:
        log.warning(
            "%s: this user does not own the database, so it cannot rewrite pg_statistic: "
            "the column statistics replaced by ANALYZE may still hold samples of the erased "
            "text until the owner runs VACUUM FULL pg_statistic",
            db.where,
        )


def forget(
    pg: ChainedDatabase,
    *,
    event_ids: Iterable[int] | None = None,
    session_id: str | None = None,
    session_ids: Iterable[str] | None = None,
    match: str | None = None,
    reason: str,
    require_text: bool = False,
    dry_run: bool = False,
    identifiers_of: str | None = None,
    pause: float = 0.0,
) -> ErasureReport:
    """Erase the events picked by ``event_ids``, ``session_id``, ``session_ids`` and/or
    ``match`` (a case-insensitive substring of their text, summary or keywords), with one
    rewrite of the tables per request, as :func:`pmm.storage.sqlite.erasure.forget` does on
    SQLite (``require_text``: refuse events whose text is gone already, as ``redact``
    does); nothing is written when it raises. ``dry_run`` picks the same events in a
    transaction that writes nothing and is rolled back. ``identifiers_of``: the user whose
    every event this is; her user and session ids leave her rows of hash version 3 and her
    chain's secret is deleted, before the rewrite (as on SQLite). ``pause``: seconds
    between the chunks of each partition's copy
    (:func:`~pmm.storage.postgres.swap.checked_pause`; 0, the default, copies at full
    speed), which spreads the copy's WAL and CPU over a longer erasure."""
    ids, sessions = checked_request(event_ids, session_id, match, reason, session_ids)
    pause = checked_pause(pause)
    db = pg._db
    before = table_bytes(db)
    if dry_run:
        with db.write() as conn:
            conn.execute("SET TRANSACTION READ ONLY")
            targets, derived, skipped = _select(conn, ids, sessions, match, require_text)
        return ErasureReport.planned(targets, derived, skipped, reason, before)
    started = time.perf_counter()
    try:  # under the locks of the sessions and chains it touches: other users append on
        with db.write() as conn:
            picked = _select(conn, ids, sessions, match, require_text)
            touched = _touched(conn, picked[0], picked[1], identifiers_of)
            lock_sessions(conn, touched[0])
            lock_chains(conn, touched[1])
            targets, derived, skipped = _select(conn, ids, sessions, match, require_text)
            if not _within(_touched(conn, targets, derived, identifiers_of), touched):
                raise _Widened
            shards = _shards(conn, targets | derived)
            markers = _erase(pg, conn, targets | derived, reason, identifiers_of)
        how = "the locks of her sessions and chains"
    except _Widened:  # rows of other sessions matched meanwhile: hold every append back
        with db.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
            targets, derived, skipped = _select(conn, ids, sessions, match, require_text)
            shards = _shards(conn, targets | derived)
            markers = _erase(pg, conn, targets | derived, reason, identifiers_of)
        how = "the exclusive append lock"
    log.debug("%.3f s: erasure under %s", time.perf_counter() - started, how)
    try:
        rewrite(db, shards, pause=pause)
    except DatabaseError as exc:  # the erasure is committed: say so, and what is left
        raise unfinished(
            exc, db.where, len(targets | derived), markers, _UNDONE.format("erased")
        ) from exc
    report = ErasureReport(
        erased=sorted(targets | derived),
        derived=sorted(derived),
        markers=markers,
        reason=reason,
        wal_truncated=False,  # pg_wal keeps the old bytes until its segments are recycled
        bytes_before=before,
        bytes_after=table_bytes(db),
        skipped=skipped,
    )
    log.info("forgot %d events (markers %s)", len(report.erased), [m.id for m in markers])
    return report


def _select(
    conn: psycopg.Connection[Any],
    ids: set[int],
    sessions: list[str],
    match: str | None,
    require_text: bool,
) -> tuple[set[int], set[int], list[int]]:
    """``(targets, derived session summaries, skipped protected ids)``."""
    rows = {
        int(r[0]): (r[1], bool(r[2]))
        for r in conn.execute(
            "SELECT id, kind, content IS NOT NULL FROM events WHERE id = ANY(%s)", (sorted(ids),)
        )
    }
    check_picked(rows, ids, require_text=require_text)
    targets = set(ids)
    skipped: set[int] = set()
    if sessions:
        for event_id, kind in conn.execute(
            "SELECT id, kind FROM events WHERE session_id = ANY(%s)", (sessions,)
        ):
            (skipped if kind in PROTECTED_KINDS else targets).add(int(event_id))
    if match is not None:
        needle = match.casefold()
        with conn.cursor(name="pmm_forget_match") as cur:
            cur.itersize = 2000
            cur.execute(
                "SELECT id, content, summary, keywords FROM events"
                " WHERE kind <> ALL(%s)"
                " AND (content IS NOT NULL OR summary IS NOT NULL OR keywords IS NOT NULL)",
                (list(PROTECTED_KINDS),),
            )
            for event_id, *texts in cur:
                if matches(needle, texts):
                    targets.add(int(event_id))
    check_targets(targets, sessions, match)
    derived = {
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT src FROM edges WHERE kind = %s AND dst = ANY(%s)",
            (SUMMARIZES, sorted(targets)),
        )
    } - targets
    legacy = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM events WHERE hash_version = %s AND id = ANY(%s) ORDER BY id",
            (LEGACY_HASH_VERSION, sorted(targets | derived)),
        )
    ]
    check_not_legacy(legacy)
    return targets, derived, sorted(skipped)


class _Widened(Exception):
    """The erasure's rows span sessions or chains that it did not lock."""


_Keys = tuple[set[str | None], set[str | None]]


def _touched(
    conn: psycopg.Connection[Any], targets: set[int], derived: set[int], user: str | None
) -> _Keys:
    """``(sessions, users)`` whose locks erasing ``targets`` and ``derived`` (and, with
    ``user``, her ids from all her rows) takes: those of their rows, and no session and no
    user (the markers of an erasure of a user's ids are written without them), so that the
    markers' append takes no lock it lacks."""
    rows = conn.execute(
        "SELECT DISTINCT session_id, user_id FROM events WHERE id = ANY(%s)"
        " OR (user_id = %s AND shard = pmm_shard(%s::text))",
        (sorted(targets | derived), user, user),
    ).fetchall()
    return {r[0] for r in rows} | {None}, {r[1] for r in rows} | {None}


def _within(needed: _Keys, held: _Keys) -> bool:
    return needed[0] <= held[0] and needed[1] <= held[1]


def _shards(conn: psycopg.Connection[Any], ids: set[int]) -> list[int]:
    """The partitions that hold the events ``ids`` (and their vectors and window keys),
    and every partition that ever held them: the no-user partition (0) when one of their
    sessions was given its user later (``assign_user``), whose ``UPDATE`` of the partition
    key left dead copies of the rows, text and thread id included, in partition 0's heap
    and indexes (a ``VACUUM`` frees them for reuse but leaves the bytes)."""
    held = {
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT shard FROM events WHERE id = ANY(%s)", (sorted(ids),)
        ).fetchall()
    }
    if 0 not in held:
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM events WHERE kind = %s AND session_id IN"
            " (SELECT session_id FROM events WHERE id = ANY(%s)))",
            (ASSIGN_KIND, sorted(ids)),
        ).fetchone()
        if row is not None and row[0]:
            held.add(0)
    return sorted(held)


def _erase(
    pg: ChainedDatabase,
    conn: psycopg.Connection[Any],
    erased: set[int],
    reason: str,
    identifiers_of: str | None = None,
) -> list[Event]:
    ids = sorted(erased)
    placed = conn.execute("SELECT id, session_id FROM events WHERE id = ANY(%s)", (ids,)).fetchall()
    conn.execute(
        "UPDATE events SET content = NULL, summary = NULL, keywords = NULL,"
        " digest_method = 'redacted' WHERE id = ANY(%s)",
        (ids,),
    )
    conn.execute("DELETE FROM embeddings WHERE event_id = ANY(%s)", (ids,))
    conn.execute("DELETE FROM store_expiry WHERE event_id = ANY(%s)", (ids,))
    conn.execute("DELETE FROM edges WHERE src = ANY(%s) OR dst = ANY(%s)", (ids, ids))
    marked = [(r[1], int(r[0])) for r in placed]
    if identifiers_of is not None:
        # Her ids leave her rows whose hash covers digests of them (version 3); her
        # sessions' window rows go, and her rows join the windows of rows without a session.
        gone = conn.execute(
            "UPDATE events SET user_id = NULL, session_id = NULL"
            " WHERE user_id = %s AND hash_version = %s RETURNING id, session_id",
            (identifiers_of, CHAIN_HASH_VERSION),
        ).fetchall()
        named = sorted({r[1] for r in gone if r[1] is not None})
        conn.execute("DELETE FROM event_windows WHERE session_id = ANY(%s)", (named,))
        conn.execute(
            "DELETE FROM session_owners WHERE user_id = %s AND NOT EXISTS"
            " (SELECT 1 FROM events WHERE events.session_id = session_owners.session_id)",
            (identifiers_of,),
        )
        marked = [(None, int(r[0])) for r in gone]
    sync_windows(conn, marked, pg.window_radius)
    conn.execute(BUMP)
    sessions: dict[str | None, list[int]] = {}
    for event_id, session in placed:
        sessions.setdefault(session, []).append(int(event_id))
    entries = [pg._checked(e) for e in redaction_entries(sessions, reason)]
    if identifiers_of is None:
        return pg._append_locked(conn, entries)
    # The records of this erasure stay in her chain, named by no session; then her id
    # leaves them and her chain's secret goes.
    entries = [
        c._replace(entry=replace(c.entry, session_id=None, user_id=identifiers_of)) for c in entries
    ]
    markers = pg._append_locked(conn, entries)
    conn.execute("UPDATE events SET user_id = NULL WHERE id = ANY(%s)", ([m.id for m in markers],))
    conn.execute("DELETE FROM chains WHERE chain = %s", (identifiers_of,))
    return [replace(m, user_id=None) for m in markers]


def compact(
    pg: ChainedDatabase,
    *,
    older_than: str | timedelta,
    session_id: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> CompactionReport:
    """Drop the raw text of digested turns older than ``older_than``, as
    :func:`pmm.storage.sqlite.compaction.compact` does on SQLite; ``dry_run`` only reports."""
    cutoff_ts, label = cutoff(older_than, session_id, now)
    db = pg._db
    before = table_bytes(db)
    sql = (
        "SELECT id, summary, octet_length(content), session_id FROM events"
        " WHERE content IS NOT NULL AND summary IS NOT NULL AND digest_method IS NOT NULL"
        " AND digest_method <> 'redacted' AND hash_version <> %s AND ts < %s"
        " AND kind <> ALL(%s)"
    )
    params: list[Any] = [LEGACY_HASH_VERSION, cutoff_ts, list(PROTECTED_KINDS)]
    if session_id is not None:
        sql += " AND session_id = %s"
        params.append(session_id)
    marker = None
    shards: list[int] = []
    with db.write() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
        rows = conn.execute(sql + " ORDER BY id FOR UPDATE", params).fetchall()
        ids = [int(r[0]) for r in rows]
        if rows and not dry_run:
            shards = _shards(conn, set(ids))
            conn.execute("UPDATE events SET content = NULL WHERE id = ANY(%s)", (ids,))
            sync_windows(conn, [(r[3], int(r[0])) for r in rows], pg.window_radius)
            conn.execute(BUMP)
            entry = compaction_marker(label, session_id, [(int(r[0]), r[1]) for r in rows])
            marker = pg._append_locked(conn, [pg._checked(entry)])[0]
    if marker is not None:
        try:
            rewrite(db, shards)
        except DatabaseError as exc:  # the compaction is committed: say so, and what is left
            undone = _UNDONE.format("compacted")
            raise unfinished(exc, db.where, len(ids), [marker], undone, compaction=True) from exc
    raw = sum(int(r[2]) for r in rows)
    return CompactionReport(ids, raw, marker, dry_run, before, table_bytes(db))
