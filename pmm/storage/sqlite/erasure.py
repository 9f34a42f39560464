"""The SQLite part of erasure (:mod:`pmm.retention.erasure`): picking the rows, erasing their text,
digests, vectors and edges in one write transaction, and scrubbing the file.

    targets, derived, skipped, markers, truncated = erase(
        store, {3, 4}, None, None, "user asked", require_text=False
    )
    scrub(store)       # VACUUM + wal_checkpoint(TRUNCATE); False while another reader holds it

:func:`forget` checks the arguments with :mod:`pmm.retention.erasure`'s policy, calls
:func:`erase` and builds the report::

    report = forget(store, session_id="alice", reason="user asked (GDPR art. 17)")

``store`` is an :class:`~pmm.storage.sqlite.EventStore` or anything with the members of
:class:`~pmm.storage.sqlite.handles.ErasableFile` (:func:`scrub`: of
:class:`~pmm.storage.sqlite.handles.LogFile`).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pmm.errors import DatabaseError
from pmm.events.hashing import CHAIN_HASH_VERSION, LEGACY_HASH_VERSION
from pmm.records import Event
from pmm.retention.erasure import (
    PROTECTED_KINDS,
    SUMMARIZES,
    ErasureReport,
    check_not_legacy,
    check_picked,
    check_targets,
    checked_request,
    file_bytes,
    matches,
    redaction_entries,
    unfinished,
)
from pmm.storage.sqlite.compression import retrain_after_erasure
from pmm.storage.sqlite.connection import translate
from pmm.storage.sqlite.search import FTS_DELETE, FTS_INSERT

if TYPE_CHECKING:
    from pmm.storage.sqlite.handles import ErasableFile, LogFile

log = logging.getLogger("pmm.retention.erasure")  # the logger erasure always warned on
_CHUNK = 500
_SCRUB_CACHE_KIB = 65_536
UNDONE = (
    "the file could not be rewritten afterwards: until it is, pieces of the {} text may "
    "remain in its free pages and its -wal file. Free some space (the rewrite needs room for "
    "a copy of the file), then run `pmm forget --scrub` to finish"
)
"""What a failed rewrite leaves, for :func:`pmm.retention.erasure.unfinished` (``{}``: the
text's fate, "erased" or "compacted")."""


def forget(
    file: ErasableFile,
    *,
    event_ids: Iterable[int] | None = None,
    session_id: str | None = None,
    session_ids: Iterable[str] | None = None,
    match: str | None = None,
    reason: str,
    require_text: bool = False,
    dry_run: bool = False,
    identifiers_of: str | None = None,
) -> ErasureReport:
    """Erase the events picked by ``event_ids``, ``session_id``, ``session_ids`` (every
    event of each of these sessions: all the threads of a user in one request) and/or
    ``match`` (a case-insensitive substring of their text, summary or keywords; the union
    of all given), record it as chained ``redaction`` events, and scrub the file once,
    however many sessions the request names.

    Raises :class:`InvalidInputError` for a missing reason or selector, a protected or
    legacy event among ``event_ids``; :class:`EventNotFoundError` when an id does not exist
    or nothing matched. ``require_text`` refuses events whose text is already gone (the
    behaviour of ``redact``). Nothing is written when it raises. ``dry_run`` picks the
    same events and writes nothing (the report's ``markers`` is empty).

    ``identifiers_of``: the user whose every event the request erases; her user and session
    ids leave her rows too (those of hash version 3, whose hash covers keyed digests of the
    ids), with her chain's secret, before the scrub: see :func:`drop_identifiers`.
    """
    ids, sessions = checked_request(event_ids, session_id, match, reason, session_ids)
    before = file_bytes(file.path)
    if dry_run:
        targets, derived, skipped = picked(file, ids, sessions, match, require_text)
        return ErasureReport.planned(targets, derived, skipped, reason, before)
    targets, derived, skipped, markers, truncated = erase(
        file, ids, sessions, match, reason, require_text, identifiers_of
    )
    report = ErasureReport(
        erased=sorted(targets | derived),
        derived=sorted(derived),
        markers=markers,
        reason=reason,
        wal_truncated=truncated,
        bytes_before=before,
        bytes_after=file_bytes(file.path),
        skipped=skipped,
    )
    log.info("forgot %d events (markers %s)", len(report.erased), [m.id for m in markers])
    return report


def erase(
    file: ErasableFile,
    ids: set[int],
    sessions: list[str],
    match: str | None,
    reason: str,
    require_text: bool,
    identifiers_of: str | None = None,
) -> tuple[set[int], set[int], list[int], list[Event], bool]:
    """Erase what ``ids``, ``sessions`` and ``match`` pick (arguments already checked) and
    scrub the file once: ``(targets, derived summaries, skipped ids, redaction events,
    whether the -wal file was emptied)``. Nothing is written when it raises."""
    with file._lock:
        conn = file._conn
        secure = conn.execute("PRAGMA secure_delete").fetchone()[0]
        cache = conn.execute("PRAGMA cache_size").fetchone()[0]
        conn.execute("PRAGMA secure_delete = ON")
        # the segment merges and the VACUUM rewrite whole indexes: a larger page cache for
        # them (about a sixth less time at 100,000 events), given back afterwards
        conn.execute(f"PRAGMA cache_size = {min(int(cache), -_SCRUB_CACHE_KIB)}")
        try:
            with file._write() as wconn:
                targets, derived, skipped = _select(wconn, ids, sessions, match, require_text)
                markers = _erase(file, wconn, targets, derived, reason, identifiers_of)
            try:
                truncated = scrub(file)
            except DatabaseError as exc:  # the erasure is committed: say so, and what is left
                raise unfinished(
                    exc, file.path, len(targets | derived), markers, UNDONE.format("erased")
                ) from exc
        finally:
            conn.execute(f"PRAGMA secure_delete = {int(secure)}")
            conn.execute(f"PRAGMA cache_size = {int(cache)}")
    return targets, derived, skipped, markers, truncated


def picked(
    file: LogFile,
    ids: set[int],
    sessions: list[str],
    match: str | None,
    require_text: bool,
) -> tuple[set[int], set[int], list[int]]:
    """What :func:`erase` would erase, read in one read transaction that writes nothing:
    ``(targets, derived summaries, skipped ids)``."""
    with file._lock:
        conn = file._conn
        try:
            conn.execute("BEGIN")  # deferred: a snapshot, no write lock
            try:
                return _select(conn, ids, sessions, match, require_text)
            finally:
                conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise translate(exc, file.path) from exc


def scrub(file: LogFile) -> bool:
    """Rewrite the file without free pages (``VACUUM``) and empty the -wal file
    (``wal_checkpoint(TRUNCATE)``); returns whether the -wal file was emptied.

    Call it with ``secure_delete`` on after erasing rows. Another connection reading the
    file can keep the checkpoint from finishing: SQLite waits for it up to the busy
    timeout, and then this returns False and logs one warning.
    """
    if file.path == ":memory:":
        return True
    with file._lock:
        conn = file._conn
        try:
            conn.execute("VACUUM")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            raise translate(exc, file.path) from exc
    if busy:
        log.warning(
            "%s: another connection is reading the file, so the rewritten pages could not "
            "all be copied back and its -wal file emptied: until then the erased text may "
            "remain in the file's free space. Close the other PMM processes and run "
            "`pmm forget --scrub` to finish",
            file.path,
        )
    return not busy


# -- internals -------------------------------------------------------------------------


def _in(ids: Sequence[object]) -> str:
    return ",".join("?" * len(ids))


def _chunks(ids: Iterable[int]) -> list[list[int]]:
    ordered = sorted(ids)
    return [ordered[i : i + _CHUNK] for i in range(0, len(ordered), _CHUNK)]


def _select(
    conn: sqlite3.Connection,
    ids: set[int],
    sessions: list[str],
    match: str | None,
    require_text: bool,
) -> tuple[set[int], set[int], list[int]]:
    """``(targets, derived summaries, skipped protected ids)`` under the write lock."""
    rows: dict[int, tuple[str, bool]] = {}
    for chunk in _chunks(ids):
        for id_, kind, has_text in conn.execute(
            f"SELECT id, kind, content IS NOT NULL FROM events WHERE id IN ({_in(chunk)})",
            chunk,
        ):
            rows[id_] = (kind, bool(has_text))
    check_picked(rows, ids, require_text=require_text)
    targets = set(ids)
    skipped: set[int] = set()
    kinds = _in(PROTECTED_KINDS)
    for session in sessions:
        for id_, kind in conn.execute(
            "SELECT id, kind FROM events WHERE session_id = ?", (session,)
        ):
            (skipped if kind in PROTECTED_KINDS else targets).add(id_)
    if match is not None:
        needle = match.casefold()
        for id_, content, summary, keywords in conn.execute(
            "SELECT id, pmm_text(content), summary, keywords FROM events"
            f" WHERE kind NOT IN ({kinds})"
            " AND (content IS NOT NULL OR summary IS NOT NULL OR keywords IS NOT NULL)",
            PROTECTED_KINDS,
        ):
            if matches(needle, (content, summary, keywords)):
                targets.add(id_)
    check_targets(targets, sessions, match)
    derived = _summaries_of(conn, targets) - targets
    check_not_legacy(_legacy(conn, targets | derived))
    return targets, derived, sorted(skipped)


def _summaries_of(conn: sqlite3.Connection, targets: set[int]) -> set[int]:
    found: set[int] = set()
    for chunk in _chunks(targets):
        found.update(
            r[0]
            for r in conn.execute(
                f"SELECT DISTINCT src FROM edges WHERE kind = ? AND dst IN ({_in(chunk)})",
                [SUMMARIZES, *chunk],
            )
        )
    return found


def _legacy(conn: sqlite3.Connection, ids: set[int]) -> list[int]:
    found: list[int] = []
    for chunk in _chunks(ids):
        found.extend(
            r[0]
            for r in conn.execute(
                f"SELECT id FROM events WHERE hash_version = ? AND id IN ({_in(chunk)})",
                [LEGACY_HASH_VERSION, *chunk],
            )
        )
    return sorted(found)


def _erase(
    file: ErasableFile,
    conn: sqlite3.Connection,
    targets: set[int],
    derived: set[int],
    reason: str,
    identifiers_of: str | None = None,
) -> list[Event]:
    erased = targets | derived
    placed: dict[str | None, list[int]] = {}
    for chunk in _chunks(erased):
        for id_, session in conn.execute(
            f"SELECT id, session_id FROM events WHERE id IN ({_in(chunk)})", chunk
        ):
            placed.setdefault(session, []).append(id_)
    # Her ids leave the erased rows in the same UPDATE that clears their text, so the turn
    # index's update trigger re-indexes them without their session and user tags.
    v3 = CHAIN_HASH_VERSION
    drop_ids = (
        f", user_id = CASE WHEN hash_version = {v3} THEN NULL ELSE user_id END,"
        f" session_id = CASE WHEN hash_version = {v3} THEN NULL ELSE session_id END"
        if identifiers_of is not None
        else ""
    )

    def erase_text() -> None:
        for chunk in _chunks(erased):
            marks = _in(chunk)
            conn.execute(
                "UPDATE events SET content = NULL, summary = NULL, keywords = NULL,"
                f" digest_method = 'redacted'{drop_ids} WHERE id IN ({marks})",
                chunk,
            )
            conn.execute(f"DELETE FROM embeddings WHERE event_id IN ({marks})", chunk)
            conn.execute(f"DELETE FROM store_expiry WHERE event_id IN ({marks})", chunk)
            conn.execute(f"DELETE FROM edges WHERE src IN ({marks}) OR dst IN ({marks})", chunk * 2)
        if identifiers_of is not None:
            drop_identifiers(conn, identifiers_of)

    # Only the erased rows and the windows of their sessions are rewritten in the indexes
    # (with her ids dropped, her rows join the rows without a session: their windows too).
    windowed = placed if identifiers_of is None else {**placed, None: placed.get(None, [])}
    file.erase_search_terms(conn, windowed, erase_text)
    # A compression dictionary trained on erased text holds pieces of it: retrain it.
    retrain_after_erasure(file._text.codec, conn, sorted(erased))
    entries = [file._check(e) for e in redaction_entries(placed, reason)]
    if identifiers_of is None:
        return file._append_locked(conn, entries)
    # The records of this erasure stay in her chain (hashed with her digests), named by
    # no session; then her id leaves them and her chain's secret goes.
    entries = [
        c._replace(entry=replace(c.entry, session_id=None, user_id=identifiers_of)) for c in entries
    ]
    markers = file._append_locked(conn, entries)
    ids = [m.id for m in markers]
    conn.execute(f"UPDATE events SET user_id = NULL WHERE id IN ({_in(ids)})", ids)
    conn.execute("DELETE FROM chains WHERE chain = ?", (identifiers_of,))
    return [replace(m, user_id=None) for m in markers]


def drop_identifiers(conn: sqlite3.Connection, user: str) -> int:
    """Null ``user``'s user and session ids in her remaining rows of hash version 3 (the
    records of earlier erasures and compactions, which the erasure keeps), keeping the turn
    index exact; returns how many rows. Rows of older hash versions cover the ids
    themselves, so they keep them (the erasure's report does not list them)."""
    rows = [
        (int(r[0]),)
        for r in conn.execute(
            "SELECT id FROM events WHERE user_id = ? AND hash_version = ?",
            (user, CHAIN_HASH_VERSION),
        )
    ]
    upto = int(conn.execute("SELECT indexed_upto FROM fts_state").fetchone()[0])
    indexed = [r for r in rows if r[0] <= upto]
    conn.executemany(FTS_DELETE, indexed)  # with the tags they were indexed with
    conn.executemany("UPDATE events SET user_id = NULL, session_id = NULL WHERE id = ?", rows)
    conn.executemany(FTS_INSERT, indexed)
    return len(rows)
