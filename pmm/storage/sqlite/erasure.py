"""The SQLite part of erasure (:mod:`pmm.erasure`): picking the rows, erasing their text,
digests, vectors and edges in one write transaction, and scrubbing the file.

    targets, derived, skipped, markers, truncated = erase(
        store, {3, 4}, None, None, "user asked", require_text=False
    )
    scrub(store)       # VACUUM + wal_checkpoint(TRUNCATE); False while another reader holds it

:func:`pmm.erasure.forget` checks the arguments, calls :func:`erase` and builds the report.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ...erasure import (
    PROTECTED_KINDS,
    SUMMARIZES,
    check_not_legacy,
    check_picked,
    check_targets,
    matches,
    redaction_entries,
)
from ...hashing import LEGACY_HASH_VERSION
from ...records import Event
from .compression import retrain_after_erasure
from .connection import translate

if TYPE_CHECKING:
    from .store import EventStore

log = logging.getLogger("pmm.erasure")  # the logger erasure always warned on
_CHUNK = 500


def erase(
    store: EventStore,
    ids: set[int],
    session_id: str | None,
    match: str | None,
    reason: str,
    require_text: bool,
) -> tuple[set[int], set[int], list[int], list[Event], bool]:
    """Erase what ``ids``, ``session_id`` and ``match`` pick (arguments already checked) and
    scrub the file: ``(targets, derived summaries, skipped ids, redaction events,
    whether the -wal file was emptied)``. Nothing is written when it raises."""
    with store._lock:
        conn = store._conn
        secure = conn.execute("PRAGMA secure_delete").fetchone()[0]
        conn.execute("PRAGMA secure_delete = ON")
        try:
            with store._write() as wconn:
                targets, derived, skipped = _select(wconn, ids, session_id, match, require_text)
                markers = _erase(store, wconn, targets, derived, reason)
                store.rebuild_search_indexes(wconn)
            truncated = scrub(store)
        finally:
            conn.execute(f"PRAGMA secure_delete = {int(secure)}")
    return targets, derived, skipped, markers, truncated


def picked(
    store: EventStore,
    ids: set[int],
    session_id: str | None,
    match: str | None,
    require_text: bool,
) -> tuple[set[int], set[int], list[int]]:
    """What :func:`erase` would erase, read in one read transaction that writes nothing:
    ``(targets, derived summaries, skipped ids)``."""
    with store._lock:
        conn = store._conn
        try:
            conn.execute("BEGIN")  # deferred: a snapshot, no write lock
            try:
                return _select(conn, ids, session_id, match, require_text)
            finally:
                conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise translate(exc, store.path) from exc


def scrub(store: EventStore) -> bool:
    """Rewrite the file without free pages (``VACUUM``) and empty the -wal file
    (``wal_checkpoint(TRUNCATE)``); returns whether the -wal file was emptied.

    Call it with ``secure_delete`` on after erasing rows. Another connection reading the
    file can keep the checkpoint from finishing: SQLite waits for it up to the busy
    timeout, and then this returns False and logs one warning.
    """
    if store.path == ":memory:":
        return True
    with store._lock:
        conn = store._conn
        try:
            conn.execute("VACUUM")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            raise translate(exc, store.path) from exc
    if busy:
        log.warning(
            "%s: another connection is reading the file, so the rewritten pages could not "
            "all be copied back and its -wal file emptied: until then the erased text may "
            "remain in the file's free space. Close the other PMM processes and run "
            "`pmm forget --scrub` to finish",
            store.path,
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
    session_id: str | None,
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
    if session_id is not None:
        for id_, kind in conn.execute(
            "SELECT id, kind FROM events WHERE session_id = ?", (session_id,)
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
    check_targets(targets, session_id, match)
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
    store: EventStore,
    conn: sqlite3.Connection,
    targets: set[int],
    derived: set[int],
    reason: str,
) -> list[Event]:
    erased = targets | derived
    sessions: dict[str | None, list[int]] = {}
    for chunk in _chunks(erased):
        for id_, session in conn.execute(
            f"SELECT id, session_id FROM events WHERE id IN ({_in(chunk)})", chunk
        ):
            sessions.setdefault(session, []).append(id_)
        marks = _in(chunk)
        conn.execute(
            "UPDATE events SET content = NULL, summary = NULL, keywords = NULL,"
            f" digest_method = 'redacted' WHERE id IN ({marks})",
            chunk,
        )
        conn.execute(f"DELETE FROM embeddings WHERE event_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM edges WHERE src IN ({marks}) OR dst IN ({marks})", chunk * 2)
    # A compression dictionary trained on erased text holds pieces of it: retrain it.
    retrain_after_erasure(store, conn, sorted(erased))
    entries = [store._check(e) for e in redaction_entries(sessions, reason)]
    return store._append_locked(conn, entries)
