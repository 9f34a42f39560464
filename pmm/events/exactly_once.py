"""Exactly-once appends: entries that name a message id already stored in their session are
skipped inside the append's transaction, so a retried or raced write stores a message once::

    pairs = unique_pairs(checked, "message_id")       # what to look up, under the lock
    checked = skip_stored(checked, "message_id", stored_pairs)
"""

from __future__ import annotations

from collections.abc import Iterable

from pmm.events.chain import CheckedEvent


def unique_pairs(checked: Iterable[CheckedEvent], field: str | None) -> set[tuple[str, str]]:
    """The ``(session, meta[field])`` pairs of the entries that have both (none when
    ``field`` is None): what :func:`skip_stored` looks up in the log."""
    if field is None:
        return set()
    return {
        (c.entry.session_id, str(c.entry.meta[field]))
        for c in checked
        if c.entry.session_id is not None and c.entry.meta and c.entry.meta.get(field) is not None
    }


def skip_stored(
    checked: list[CheckedEvent], field: str | None, stored: set[tuple[str, str]]
) -> list[CheckedEvent]:
    """``checked`` without the entries whose ``(session, meta[field])`` is in ``stored``:
    what makes an append with ``unique_meta="message_id"`` store each message once however
    many writers try: the store looks the pairs up in the append's transaction, under the
    lock that orders the session's appends, so a second writer sees the first one's rows.
    Linked parts of one message share its id: all of them are stored, or none. Entries
    of one call are not checked against each other::

        skip_stored(checked, "message_id", {("t1", "m1")})   # without t1's m1
    """
    if field is None or not stored:
        return checked
    return [c for c in checked if not (unique_pairs([c], field) & stored)]
