"""Storing what a conversation holds, whatever it holds: the lenient append the LangChain
integrations use, and the linked parts of a message too big for one event.

    prepared = prepare(entries, max_content_bytes=1 << 20)
    prepared.entries      # what can be stored: oversized texts split into linked parts,
                          # NUL and lone surrogates replaced by U+FFFD, empty turns left out
    prepared.problems     # one line per message that was changed or left out
    join_parts(events)    # the parts of each split message read back as one event

:meth:`pmm.Mind.remember` and friends refuse such input with an
:class:`~pmm.errors.InvalidInputError` that says what to change (a caller can fix its own
call). A LangChain integration cannot: the message is already in the agent's thread, and
refusing it would fail that run and every later one on the thread. So
:meth:`pmm.Mind.remember_safely` (what ``PMMMiddleware``, ``PersistentMindMemory.save_context``
and ``PMMChatMessageHistory.add_messages`` call) stores what it can and logs one warning
per call naming every message it changed or left out:

- **Oversized text** (over ``max_content_bytes``, UTF-8) is stored in full as *linked
  parts*: consecutive events of the same session, kind and role, appended in one
  transaction (so their ids are consecutive), each at most ``max_content_bytes``, cut at
  character boundaries. Each part's meta is the message's meta plus ``part`` (1-based),
  ``parts`` (how many) and ``whole_sha256`` (SHA-256 of the whole text); part ``i``'s first
  part is the event ``id - (i - 1)``. :meth:`pmm.Mind.history` (and so
  ``PMMChatMessageHistory.messages``) returns them joined into one event with the first
  part's id; recall, digests and the context see each part as a turn of its own, and
  ``pmm export`` writes the raw log, part by part (the chain covers each part).
- **NUL and lone surrogates** (text that cannot be stored as UTF-8) become U+FFFD, in the
  text and in the meta's strings; the event's meta says ``"replaced": N`` characters.
- **Empty or whitespace-only turns** are left out (a turn of no text says nothing).
- An entry the store still refuses (meta that is not JSON, ...) is left out alone; the
  others of the call are stored.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pmm.errors import InvalidInputError
from pmm.events.chain import check_new_event
from pmm.events.turns import TURN_KINDS
from pmm.records import Event, NewEvent

if TYPE_CHECKING:
    from pmm.storage import EventLog

log = logging.getLogger("pmm")

PART = "part"
PARTS = "parts"
WHOLE_SHA256 = "whole_sha256"
REPLACED = "replaced"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""NUL, and surrogates: in a Python str every surrogate code point is a lone one."""


@dataclass
class Prepared:
    """Entries ready for one append, and what was changed or left out to get them."""

    entries: list[NewEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    left_out: list[int] = field(default_factory=list)
    """Indexes (in the given entries) of those left out."""


def split_text(text: str, max_bytes: int) -> list[str]:
    """``text`` cut into pieces of at most ``max_bytes`` UTF-8 bytes each, at character
    boundaries, in order (``"".join`` gives ``text`` back)::

        split_text("aé" * 3, 4)   # ['aéa', 'éaé']
    """
    if max_bytes < 4:
        raise InvalidInputError(f"max_bytes must be >= 4 (one character), got {max_bytes}")
    data = text.encode("utf-8")
    pieces: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + max_bytes, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # inside a character
            end -= 1
        pieces.append(data[start:end].decode("utf-8"))
        start = end
    return pieces


def storable_text(text: str) -> tuple[str, int]:
    """``text`` with NUL and lone surrogates replaced by U+FFFD, and how many were."""
    replaced, count = _UNSTORABLE.subn("\ufffd", text)
    return replaced, count


def prepare(entries: Sequence[NewEvent], max_content_bytes: int) -> Prepared:
    """What of ``entries`` can be stored (see the module docstring), in their order."""
    out = Prepared()
    for index, entry in enumerate(entries):
        label = _label(index, entry)
        content = entry.content
        if not isinstance(content, str):
            out.problems.append(f"{label}: content is {type(content).__name__}, not text: left out")
            out.left_out.append(index)
            continue
        meta, in_meta = _storable_meta(dict(entry.meta or {}))
        content, replaced = storable_text(content)
        replaced += in_meta
        if replaced:
            meta[REPLACED] = replaced
            out.problems.append(
                f"{label}: {replaced} NUL or lone-surrogate character(s) stored as U+FFFD"
            )
        if entry.kind in TURN_KINDS and not content.strip():
            out.problems.append(f"{label}: empty turn, left out")
            out.left_out.append(index)
            continue
        size = len(content.encode("utf-8"))
        pieces = [content] if size <= max_content_bytes else split_text(content, max_content_bytes)
        if len(pieces) > 1:
            whole = hashlib.sha256(content.encode("utf-8")).hexdigest()
            out.problems.append(
                f"{label}: {size:,} bytes, over the {max_content_bytes:,}-byte limit of one "
                f"event: stored in full as {len(pieces)} linked parts"
            )
            parted = [
                replace(
                    entry,
                    content=piece,
                    meta={**meta, PART: i, PARTS: len(pieces), WHOLE_SHA256: whole},
                )
                for i, piece in enumerate(pieces, 1)
            ]
        else:
            parted = [replace(entry, content=content, meta=meta or entry.meta)]
        try:
            for part in parted:
                check_new_event(part, max_content_bytes)
        except InvalidInputError as exc:
            out.problems.append(f"{label}: {exc}: left out")
            out.left_out.append(index)
            continue
        out.entries.extend(parted)
    return out


def _storable_meta(value: Any) -> tuple[Any, int]:
    """``value`` with NUL and lone surrogates replaced in every string of it (keys too)."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        count = 0
        for key, item in value.items():
            new_key, n = _storable_meta(key)
            out[new_key], m = _storable_meta(item)
            count += n + m
        return out, count
    if isinstance(value, (list, tuple)):
        items = [_storable_meta(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


def _label(index: int, entry: NewEvent) -> str:
    message_id = (entry.meta or {}).get("message_id")
    which = f"message {message_id}" if message_id else f"message {index + 1}"
    return f"{which} ({entry.role or entry.kind})"


def warn_once(problems: Sequence[str], where: str) -> None:
    """One warning for everything one call changed or left out (nothing when all was fine)."""
    if problems:
        log.warning(
            "%s: %d message(s) could not be stored as given: %s",
            where,
            len(problems),
            "; ".join(problems),
        )


def _part_of(event: Event) -> tuple[int, int, str] | None:
    meta = event.meta
    part, parts, whole = meta.get(PART), meta.get(PARTS), meta.get(WHOLE_SHA256)
    if isinstance(part, int) and isinstance(parts, int) and isinstance(whole, str):
        return part, parts, whole
    return None


def join_parts(events: Sequence[Event], store: EventLog | None = None) -> list[Event]:
    """``events`` (oldest first) with the linked parts of each split message joined into
    one event: the first part's id, ts, hash and meta (less ``part``), the whole text
    (None when any part was erased) and the whole text's SHA-256. With ``store``, parts
    missing at the start of ``events`` (a ``limit`` that cut a message) are read from it;
    parts that stay incomplete are returned as they are."""
    events = list(events)
    if store is not None and events:
        head = _part_of(events[0])
        if head is not None and head[0] > 1:
            first = events[0].id - (head[0] - 1)
            found = store.get_many(range(first, events[0].id))
            events[:0] = [found[i] for i in sorted(found)]
    joined: list[Event] = []
    i = 0
    while i < len(events):
        event = events[i]
        info = _part_of(event)
        if info is None or info[0] != 1:
            joined.append(event)
            i += 1
            continue
        _, parts, whole = info
        group = events[i : i + parts]
        if len(group) != parts or any(
            _part_of(e) != (n, parts, whole) or e.id != event.id + n - 1
            for n, e in enumerate(group, 1)
        ):
            joined.append(event)
            i += 1
            continue
        texts = [e.content for e in group]
        content = None if any(t is None for t in texts) else "".join(t or "" for t in texts)
        meta: dict[str, Any] = {k: v for k, v in event.meta.items() if k != PART}
        joined.append(replace(event, content=content, content_sha256=whole, meta=meta))
        i += parts
    return joined
