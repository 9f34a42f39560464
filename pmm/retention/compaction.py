"""Lossy compaction on request: drop the raw text of old, digested turns, keep the rest.

Usage::

    from pmm.storage.sqlite import EventStore
    from pmm.storage.sqlite.compaction import compact, count_compacted

    with EventStore("pmm.db") as store:
        plan = compact(store, older_than="30d", dry_run=True)   # what would go, nothing written
        report = compact(store, older_than="30d", session_id="alice")
        report.compacted, report.bytes_before, report.bytes_after
        count_compacted(store)          # rows that hold a summary but no raw text any more

A compacted row keeps ``content_sha256`` (so its hash and the chain verify), its summary,
keywords, embeddings and edges; only ``content`` becomes NULL. Turns without a digest are
never compacted (their text is all there is), nor rows of the earlier PMM (their hash covers
the text). One chained ``compaction`` event records the ids (as runs) and one SHA-256 over
the SHA-256 of each kept summary (:func:`check_compaction` re-checks it); the search index
is rebuilt and the file vacuumed. The context shows a compacted turn by its summary, and
keyword recall finds it by its summary and keywords.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from pmm.errors import InvalidInputError
from pmm.events.hashing import sha256_hex
from pmm.records import Event, NewEvent
from pmm.retention.compression import AGE_PATTERN, AGE_UNITS


class EventSource(Protocol):
    """What :func:`check_compaction` reads: any event log's ``get_many``."""

    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]: ...


COMPACTION_KIND = "compaction"


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """What :func:`compact` dropped (or, with ``dry_run``, would drop)."""

    compacted: list[int]
    raw_bytes: int
    """UTF-8 bytes of the raw text dropped."""
    marker: Event | None
    dry_run: bool
    bytes_before: int
    bytes_after: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "compacted": self.compacted,
            "raw_bytes": self.raw_bytes,
            "marker": self.marker.to_dict() if self.marker else None,
            "dry_run": self.dry_run,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
        }


def parse_age(text: str | timedelta) -> timedelta:
    """``"30d"``, ``"12h"``, ``"2w"``, ``"90m"``, ``"0s"`` (or a timedelta) as a timedelta."""
    if isinstance(text, timedelta):
        age = text
    else:
        found = AGE_PATTERN.match(text) if isinstance(text, str) else None
        if found is None:
            raise InvalidInputError(
                f"an age is a number and a unit (s, m, h, d or w), e.g. 30d; got {text!r}"
            )
        age = timedelta(**{AGE_UNITS[found[2]]: int(found[1])})
    if age < timedelta(0):
        raise InvalidInputError(f"an age cannot be negative, got {text!r}")
    return age


def cutoff(
    older_than: str | timedelta, session_id: str | None, now: datetime | None = None
) -> tuple[str, str]:
    """A :func:`compact` request's arguments checked (every backend runs this): the
    ``ts`` before which turns are compacted and the age as the marker records it::

        cutoff("30d", None, now)   # ('2026-10-26T12:00:00.000000Z', '30d')
    """
    age = parse_age(older_than)
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        raise InvalidInputError(f"session_id must be a non-empty string, got {session_id!r}")
    when = ((now or datetime.now(UTC)) - age).astimezone(UTC)
    label = older_than if isinstance(older_than, str) else f"{age.total_seconds():g}s"
    return when.isoformat(timespec="microseconds")[:-6] + "Z", label


def compaction_marker(label: str, session_id: str | None, rows: list[tuple[int, str]]) -> NewEvent:
    """The chained ``compaction`` event recording that the raw text of ``rows``
    (``(id, summary)``) was dropped: the ids as runs and one digest of their summaries."""
    ids = [r[0] for r in rows]
    meta = {
        "older_than": label,
        "session_id": session_id,
        "count": len(rows),
        "ids": id_ranges(ids),
        "summaries_sha256": summaries_digest(rows),
    }
    return NewEvent(COMPACTION_KIND, f"compacted {len(rows)} events", None, "system", meta)


def id_ranges(ids: Iterable[int]) -> list[list[int]]:
    """Ascending ids as ``[first, last]`` runs: ``[1, 2, 3, 7]`` -> ``[[1, 3], [7, 7]]``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return runs


def summaries_digest(rows: Iterable[tuple[int, str]]) -> str:
    """SHA-256 of the ``"<id>:<sha256 of summary>"`` lines of ``(id, summary)`` rows in id
    order: the ``compaction`` event holds it, so a summary changed later is detected by
    :func:`check_compaction` (one hash instead of one per row keeps the event small)."""
    lines = "".join(f"{i}:{sha256_hex(summary)}\n" for i, summary in sorted(rows))
    return sha256_hex(lines)


def check_compaction(store: EventSource, marker: Event) -> bool:
    """Whether the summaries of the turns a ``compaction`` event covers are still the ones
    kept when their raw text was dropped."""
    if marker.kind != COMPACTION_KIND:
        raise InvalidInputError(f"event {marker.id} is a {marker.kind!r}, not a compaction")
    ids = [i for first, last in marker.meta.get("ids", []) for i in range(first, last + 1)]
    events = store.get_many(ids)
    if len(events) != len(ids) or any(e.summary is None for e in events.values()):
        return False
    digest = summaries_digest((e.id, e.summary or "") for e in events.values())
    return bool(digest == marker.meta.get("summaries_sha256"))
