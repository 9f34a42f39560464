"""Erasure that erases: forget events so that no byte of their text stays in the file.

Usage (each backend drives the policy; this module holds no SQL)::

    from pmm.storage.sqlite import EventStore
    from pmm.storage.sqlite.erasure import forget

    with EventStore("pmm.db") as store:
        report = forget(store, session_id="alice", reason="user asked (GDPR art. 17)")
        forget(store, session_ids=["bob/t1", "bob/t2"], reason="account deleted")  # one scrub
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

Then the indexes and the file are scrubbed, once per request however many sessions it
names (``session_ids``: every thread of a user): the turn index deletes the erased rows
and the window index rewrites the windows of their sessions (nothing else is re-read), and
both merge their segments into one (FTS5 ``optimize``: a deleted term stays in the old
segments until they are merged); ``secure_delete`` zeroes freed cells and pages,
``VACUUM`` rewrites the file without free pages, and ``wal_checkpoint(TRUNCATE)`` empties
the -wal file. The VACUUM stays: SQLite's ``secure_delete`` alone leaves copies of rows
that b-tree rebalancing moved earlier in the unallocated part of pages (measured: about
1% of erased rows' text survived without it). Not erasable: ``meta`` (it is hashed; keep
secrets out of meta and out of the ``reason``), rows of the earlier PMM (``hash_version``
0, whose hash covers the text itself), and copies outside the file (backups, exports,
``.bak-*`` files of a legacy upgrade).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pmm.errors import EventNotFoundError, InvalidInputError, PMMError
from pmm.records import Event, NewEvent

log = logging.getLogger(__name__)

REDACTION_KIND = "redaction"
PROTECTED_KINDS = ("redaction", "compaction")
"""Records of earlier erasures and compactions: they hold no text and are never erased."""
SUMMARIZES = "SUMMARIZES"


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
    dry_run: bool = False
    """True: nothing was written; ``erased`` says what a real run would erase."""

    @classmethod
    def planned(
        cls, targets: set[int], derived: set[int], skipped: list[int], reason: str, size: int
    ) -> ErasureReport:
        """What a ``dry_run`` reports: the events it would erase, nothing written, no
        marker, the storage's ``size`` unchanged."""
        return cls(
            erased=sorted(targets | derived),
            derived=sorted(derived),
            markers=[],
            reason=reason,
            wal_truncated=False,
            bytes_before=size,
            bytes_after=size,
            skipped=skipped,
            dry_run=True,
        )

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
            "dry_run": self.dry_run,
        }


def file_bytes(path: str) -> int:
    """Bytes of the database file and its -wal and -shm files."""
    if path == ":memory:":
        return 0
    return sum(
        os.path.getsize(path + suffix)
        for suffix in ("", "-wal", "-shm")
        if os.path.exists(path + suffix)
    )


def checked_request(
    event_ids: Iterable[int] | None,
    session_id: str | None,
    match: str | None,
    reason: str,
    session_ids: Iterable[str] | None = None,
) -> tuple[set[int], list[str]]:
    """The ids and sessions (``session_id`` and ``session_ids`` together, in order, each
    once) of a :func:`forget` request once its arguments are checked (every backend runs
    these checks); raises :class:`InvalidInputError` for a bad one."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInputError("forget() needs a reason, e.g. reason='user asked'")
    ids = _checked_ids(event_ids)
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        raise InvalidInputError(f"session_id must be a non-empty string, got {session_id!r}")
    sessions = _checked_sessions(session_ids)
    if session_id is not None and session_id not in sessions:
        sessions.insert(0, session_id)
    if match is not None and (not isinstance(match, str) or not match.strip()):
        raise InvalidInputError(f"match must be a non-empty text, got {match!r}")
    if not ids and not sessions and match is None and session_ids is None:
        raise InvalidInputError("forget() needs event_ids, session_id(s) or match")
    return ids, sessions


def check_picked(
    rows: Mapping[int, tuple[str, bool]], ids: set[int], *, require_text: bool
) -> None:
    """Check the events a :func:`forget` request names by id, as every backend read them
    (``{id: (kind, holds text)}``): raises :class:`EventNotFoundError` for an id that does
    not exist (or, with ``require_text``, holds no text any more) and
    :class:`InvalidInputError` for a protected record."""
    missing = sorted(ids - rows.keys())
    if missing:
        raise EventNotFoundError(f"no event with id {', '.join(map(str, missing[:10]))}")
    protected = sorted(i for i, (kind, _) in rows.items() if kind in PROTECTED_KINDS)
    if protected:
        raise InvalidInputError(
            f"events {protected} record earlier erasures or compactions and hold no text: "
            "they are kept"
        )
    if require_text:
        empty = sorted(i for i, (_, has_text) in rows.items() if not has_text)
        if empty:
            raise EventNotFoundError(f"no event with id {empty[0]} holding text to redact")


def check_targets(targets: set[int], sessions: list[str], match: str | None) -> None:
    """Raise :class:`EventNotFoundError` when a :func:`forget` request picked nothing."""
    if not targets:
        named = ", ".join(repr(s) for s in sessions[:5]) + (", ..." if len(sessions) > 5 else "")
        raise EventNotFoundError(
            "nothing to forget: no event matched"
            + (f" session{'s' if len(sessions) > 1 else ''} {named}" if sessions else "")
            + (" the given text" if match is not None else "")
        )


def check_not_legacy(legacy: list[int]) -> None:
    """Raise :class:`InvalidInputError` when events picked for erasure were written by the
    earlier PMM (``legacy``: their ids, ascending)."""
    if legacy:
        raise InvalidInputError(
            f"events {legacy[:10]} were written by the earlier PMM, whose hash covers the "
            "text itself: erasing them would break the chain for good; nothing was erased"
        )


def matches(needle: str, texts: Iterable[str | None]) -> bool:
    """Whether any of ``texts`` holds ``needle`` (already casefolded), case-insensitively
    by Python's casefold on every backend (PostgreSQL's lower() differs for a few letters)."""
    return any(needle in (t or "").casefold() for t in texts)


def redaction_entries(sessions: dict[str | None, list[int]], reason: str) -> list[NewEvent]:
    """The chained ``redaction`` events recording an erasure: one per session of the erased
    ``{session: [ids]}``, ordered by their first id, holding the ids and the reason."""
    entries = []
    for session, ids in sorted(sessions.items(), key=lambda item: min(item[1])):
        ids.sort()
        meta: dict[str, Any] = (
            {"target": ids[0], "reason": reason}
            if len(ids) == 1
            else {"targets": ids, "reason": reason}
        )
        text = f"redacted event {ids[0]}" if len(ids) == 1 else f"redacted {len(ids)} events"
        entries.append(NewEvent(REDACTION_KIND, text, session, "system", meta))
    return entries


def unfinished(
    exc: PMMError,
    where: str,
    erased: int,
    markers: Sequence[Event],
    undone: str,
    *,
    compaction: bool = False,
) -> PMMError:
    """The error to raise when the rewrite after a committed erasure failed (a full disk:
    SQLite's ``VACUUM`` and PostgreSQL's partition copies need room for a copy): of the
    class of ``exc``, saying that the erasure was committed, what was ``undone`` and how
    to finish it; never "retry" (nothing is left to erase: a retry only says so). With
    ``compaction`` it says the same of a committed compaction (``erased``: turns whose
    text was dropped)::

        raise unfinished(exc, store.path, 60, markers, "the file could not be rewritten ...")
    """
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    what, done, command = (
        ("compaction", "turns' text dropped", "compact")
        if compaction
        else ("erasure", "events erased", "forget")
    )
    return type(exc)(
        f"{where}: the {what} was committed ({erased} {done}, recorded as event(s) "
        f"{', '.join(str(m.id) for m in markers)}), but {undone} ({cause}). Do not repeat "
        f"the {command}: there is nothing left to {command if compaction else 'erase'}"
    )


# -- internals -------------------------------------------------------------------------


def _checked_sessions(session_ids: Iterable[str] | None) -> list[str]:
    if session_ids is None:
        return []
    if isinstance(session_ids, (str, bytes)) or not isinstance(
        session_ids, (list, tuple, set, frozenset)
    ):
        raise InvalidInputError(
            f"session_ids must be a list of session ids, got {type(session_ids).__name__}"
        )
    sessions: dict[str, None] = {}
    for value in session_ids:
        if not isinstance(value, str) or not value:
            raise InvalidInputError(f"session ids are non-empty strings, got {value!r}")
        sessions[value] = None
    return list(sessions)


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
