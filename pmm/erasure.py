"""Erasure that erases: forget events so that no byte of their text stays in the file.

Usage::

    from pmm.store import EventStore
    from pmm.erasure import forget

    with EventStore("pmm.db") as store:
        report = forget(store, session_id="alice", reason="user asked (GDPR art. 17)")
        report.erased          # [1, 2, 3, ...]  ids whose text, digest, vectors, edges are gone
        report.markers         # the chained ``redaction`` events that record it (ids + reason)
        report.wal_truncated   # True: the -wal file was checkpointed and cut to 0 bytes

``Mind.forget(...)`` and ``pmm forget`` call this; ``EventStore.redact`` is its one-event form.

What is erased, in one write transaction: the raw ``content``, ``summary``, ``keywords``
(the row's ``digest_method`` becomes ``'redacted'``), every embedding, every edge touching
the events, and the text of session-summary events that ``SUMMARIZES`` them (their text was
built from the erased text). The chained columns stay: the row's hash covers
``content_sha256``, not the text, so the chain keeps verifying. One ``redaction`` event per
affected session records the ids and the reason, never the text or the ``match`` string.

Then the file is scrubbed: every full-text index is rebuilt from the remaining text
(:meth:`EventStore.rebuild_search_indexes`: FTS5 keeps deleted terms in its segments until
a merge), ``secure_delete`` zeroes freed cells, ``VACUUM`` rewrites the file without free
pages, and ``wal_checkpoint(TRUNCATE)`` empties the -wal file. Not erasable: ``meta`` (it is
hashed; keep secrets out of meta and out of the ``reason``), rows of the earlier PMM
(``hash_version`` 0, whose hash covers the text itself), and copies outside the file
(backups, exports, ``.bak-*`` files of a legacy upgrade).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import EventNotFoundError, InvalidInputError
from .hashing import LEGACY_HASH_VERSION
from .records import Event, NewEvent

if TYPE_CHECKING:
    from .store import EventStore

log = logging.getLogger(__name__)

REDACTION_KIND = "redaction"
PROTECTED_KINDS = ("redaction", "compaction")
"""Records of earlier erasures and compactions: they hold no text and are never erased."""
SUMMARIZES = "SUMMARIZES"
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class ErasureReport:
    """What :func:`forget` erased and how the file was scrubbed."""

    erased: list[int]
    """Every event whose text and derived data were erased, ascending."""
    derived: list[int]
    """Of those, the session summaries erased because they summarized an erased event."""
    markers: list[Event]
    """The chained ``redaction`` events recording the erasure (one per session)."""
    reason: str
    wal_truncated: bool
    """False when another connection kept the file from being fully rewritten and the
    -wal file from being emptied (see :func:`scrub`): the erased text may stay in free
    space until :func:`scrub` (``pmm forget --scrub``) runs with no other reader."""
    bytes_before: int
    bytes_after: int
    skipped: list[int] = field(default_factory=list)
    """Ids matched by ``session_id``/``match`` but kept: redaction/compaction records."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "erased": self.erased,
            "derived": self.derived,
            "markers": [m.to_dict() for m in self.markers],
            "reason": self.reason,
            "wal_truncated": self.wal_truncated,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "skipped": self.skipped,
        }


def forget(
    store: EventStore,
    *,
    event_ids: Iterable[int] | None = None,
    session_id: str | None = None,
    match: str | None = None,
    reason: str,
    require_text: bool = False,
) -> ErasureReport:
    """Erase the events picked by ``event_ids``, ``session_id`` and/or ``match`` (a
    case-insensitive substring of their text, summary or keywords; the union of all
    given), record it as chained ``redaction`` events, and scrub the file.

    Raises :class:`InvalidInputError` for a missing reason or selector, a protected or
    legacy event among ``event_ids``; :class:`EventNotFoundError` when an id does not exist
    or nothing matched. ``require_text`` refuses events whose text is already gone (the
    behaviour of ``redact``). Nothing is written when it raises.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInputError("forget() needs a reason, e.g. reason='user asked'")
    ids = _checked_ids(event_ids)
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        raise InvalidInputError(f"session_id must be a non-empty string, got {session_id!r}")
    if match is not None and (not isinstance(match, str) or not match.strip()):
        raise InvalidInputError(f"match must be a non-empty text, got {match!r}")
    if not ids and session_id is None and match is None:
        raise InvalidInputError("forget() needs event_ids, session_id or match")
    before = file_bytes(store.path)
    with store._lock:  # erasure is part of the storage layer
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
    report = ErasureReport(
        erased=sorted(targets | derived),
        derived=sorted(derived),
        markers=markers,
        reason=reason,
        wal_truncated=truncated,
        bytes_before=before,
        bytes_after=file_bytes(store.path),
        skipped=skipped,
    )
    log.info("forgot %d events (markers %s)", len(report.erased), [m.id for m in markers])
    return report


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
            from .storage.sqlite.connection import translate

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


def file_bytes(path: str) -> int:
    """Bytes of the database file and its -wal and -shm files."""
    if path == ":memory:":
        return 0
    return sum(
        os.path.getsize(path + suffix)
        for suffix in ("", "-wal", "-shm")
        if os.path.exists(path + suffix)
    )


# -- internals -------------------------------------------------------------------------


def _checked_ids(event_ids: Iterable[int] | None) -> set[int]:
    if event_ids is None:
        return set()
    if not isinstance(event_ids, (list, tuple, set, frozenset, range)):
        raise InvalidInputError(f"event_ids must be a list of ints, got {event_ids!r}")
    ids = set()
    for value in event_ids:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
            raise InvalidInputError(f"event ids are positive ints, got {value!r}")
        ids.add(value)
    return ids


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
    rows: dict[int, tuple[str, int, bool]] = {}
    for chunk in _chunks(ids):
        for id_, kind, version, has_text in conn.execute(
            f"SELECT id, kind, hash_version, content IS NOT NULL FROM events"
            f" WHERE id IN ({_in(chunk)})",
            chunk,
        ):
            rows[id_] = (kind, version, bool(has_text))
    missing = sorted(ids - rows.keys())
    if missing:
        raise EventNotFoundError(f"no event with id {', '.join(map(str, missing[:10]))}")
    protected = sorted(i for i, (kind, _, _) in rows.items() if kind in PROTECTED_KINDS)
    if protected:
        raise InvalidInputError(
            f"events {protected} record earlier erasures or compactions and hold no text: "
            "they are kept"
        )
    if require_text:
        empty = sorted(i for i, (_, _, has_text) in rows.items() if not has_text)
        if empty:
            raise EventNotFoundError(f"no event with id {empty[0]} holding text to redact")
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
            "SELECT id, content, summary, keywords FROM events"
            f" WHERE kind NOT IN ({kinds})"
            " AND (content IS NOT NULL OR summary IS NOT NULL OR keywords IS NOT NULL)",
            PROTECTED_KINDS,
        ):
            if any(needle in (t or "").casefold() for t in (content, summary, keywords)):
                targets.add(id_)
    if not targets:
        raise EventNotFoundError(
            "nothing to forget: no event matched"
            + (f" session {session_id!r}" if session_id is not None else "")
            + (" the given text" if match is not None else "")
        )
    derived = _summaries_of(conn, targets) - targets
    legacy = _legacy(conn, targets | derived)
    if legacy:
        raise InvalidInputError(
            f"events {legacy[:10]} were written by the earlier PMM, whose hash covers the "
            "text itself: erasing them would break the chain for good; nothing was erased"
        )
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
    entries = []
    for session, ids in sorted(sessions.items(), key=lambda item: min(item[1])):
        ids.sort()
        meta: dict[str, Any] = (
            {"target": ids[0], "reason": reason}
            if len(ids) == 1
            else {"targets": ids, "reason": reason}
        )
        text = f"redacted event {ids[0]}" if len(ids) == 1 else f"redacted {len(ids)} events"
        entries.append(store._check(NewEvent(REDACTION_KIND, text, session, "system", meta)))
    return store._append_locked(conn, entries)
