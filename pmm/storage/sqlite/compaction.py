"""The SQLite part of compaction (:mod:`pmm.retention.compaction`): dropping the raw text of old
digested turns in one write transaction with their chained marker, and counting them.

    ids, raw_bytes, marker = compact_rows(
        store, cutoff_ts="2026-10-01T00:00:00.000000Z", session_id=None, dry_run=True,
        marker=lambda rows: pmm.retention.compaction.compaction_marker("30d", None, rows),
    )

``store``: an :class:`~pmm.storage.sqlite.EventStore`, or anything with the members of
:class:`~pmm.storage.sqlite.handles.CompactableFile`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pmm.errors import DatabaseError
from pmm.events.hashing import LEGACY_HASH_VERSION
from pmm.records import Event, NewEvent
from pmm.retention.compaction import CompactionReport, compaction_marker, cutoff
from pmm.retention.erasure import PROTECTED_KINDS, file_bytes, unfinished
from pmm.storage.sqlite.connection import translated
from pmm.storage.sqlite.erasure import UNDONE, scrub

if TYPE_CHECKING:
    from pmm.storage.sqlite.handles import CompactableFile, LogFile


def compact(
    file: CompactableFile,
    *,
    older_than: str | timedelta,
    session_id: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> CompactionReport:
    """Drop the raw text of digested turns older than ``older_than`` (see the module
    docstring); ``dry_run`` only reports what would be dropped."""
    cutoff_ts, label = cutoff(older_than, session_id, now)
    before = file_bytes(file.path)
    ids, raw, marker = compact_rows(
        file,
        cutoff_ts=cutoff_ts,
        session_id=session_id,
        dry_run=dry_run,
        marker=lambda rows: compaction_marker(label, session_id, rows),
    )
    return CompactionReport(ids, raw, marker, dry_run, before, file_bytes(file.path))


def compact_rows(
    file: CompactableFile,
    *,
    cutoff_ts: str,
    session_id: str | None,
    dry_run: bool,
    marker: Callable[[list[tuple[int, str]]], NewEvent],
) -> tuple[list[int], int, Event | None]:
    """Drop the text of the digested turns written before ``cutoff_ts`` (in ``session_id``
    only, when given) and append ``marker(rows)`` (``(id, summary)`` rows) in the same
    transaction, then scrub the file: ``(ids, raw UTF-8 bytes, marker event)``. With
    ``dry_run`` nothing is written and the marker is None."""
    sql = (
        "SELECT id, summary, length(CAST(pmm_text(content) AS BLOB)) FROM events"
        " WHERE content IS NOT NULL AND summary IS NOT NULL AND digest_method IS NOT NULL"
        f" AND digest_method != 'redacted' AND hash_version <> ? AND ts < ?"
        f" AND kind NOT IN ({','.join('?' * len(PROTECTED_KINDS))})"
    )
    params: list[Any] = [LEGACY_HASH_VERSION, cutoff_ts, *PROTECTED_KINDS]
    if session_id is not None:
        sql += " AND session_id = ?"
        params.append(session_id)
    with file._lock, file._write() as conn:
        rows = conn.execute(sql + " ORDER BY id", params).fetchall()
        ids = [r[0] for r in rows]
        raw = sum(r[2] for r in rows)
        event = None
        if rows and not dry_run:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                conn.execute(
                    f"UPDATE events SET content = NULL WHERE id IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
            entry = file._check(marker([(r[0], r[1]) for r in rows]))
            event = file._append_locked(conn, [entry])[0]
            file.rebuild_search_indexes(conn)
    if event is not None:
        try:
            scrub(file)
        except DatabaseError as exc:  # the compaction is committed: say so, and what is left
            undone = UNDONE.format("compacted")
            raise unfinished(exc, file.path, len(ids), [event], undone, compaction=True) from exc
    return ids, raw, event


def count_compacted(file: LogFile) -> int:
    """Rows whose raw text was compacted away (they keep a summary)."""
    with file._lock, translated(file.path):
        row = file._conn.execute(
            "SELECT count(*) FROM events WHERE content IS NULL AND summary IS NOT NULL"
        ).fetchone()
    return int(row[0])
