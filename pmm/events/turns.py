"""What a conversation turn is in the log: the kinds that hold turns, the role each kind
stands for, and how to read a row's role and text (also of legacy rows).

    from pmm.events.turns import TURN_KINDS, kind_for_role, turn_role

    kind_for_role("user")        # 'prompt'
    turn_role(event)             # ('user', 'I moved to Lisbon')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pmm.errors import InvalidInputError

if TYPE_CHECKING:
    from pmm.records import Event, TurnRow

TURN_KINDS = ("prompt", "response")
"""Kinds that hold conversation turns (and are digested, embedded and recalled). A turn is
ONE message (a user prompt or an assistant reply) everywhere in PMM: stats, ``pmm``, the
chat and the docs count messages; :meth:`pmm.Mind.remember_turn` stores an exchange, i.e.
two turns."""
CLEAR_KIND = "clear"
REDACTION_KIND = "redaction"
SUPERSEDES_EDGE = "SUPERSEDES"
"""Edge kind: ``(newer, older)``, the newer event replaces the older one (pmm/consolidate)."""
ROLE_KINDS = {"user": "prompt", "assistant": "response", "system": "event", "tool": "event"}
LEGACY_PREFIXES = (("User said:", "user"), ("I responded:", "assistant"))


def turn_role(event: Event | TurnRow) -> tuple[str, str]:
    """``(role, text)`` of an event: the stored role, or for legacy rows without one, the
    role their ``User said:`` / ``I responded:`` prefix gives (the prefix removed)."""
    text = event.content or ""
    if event.role:
        return event.role, text
    for prefix, role in LEGACY_PREFIXES:
        if text.startswith(prefix):
            return role, text[len(prefix) :].lstrip()
    return (
        "user" if event.kind == "prompt" else "assistant" if event.kind == "response" else "system"
    ), text


def kind_for_role(role: str) -> str:
    """The event kind a turn of ``role`` is stored as; an unknown role is an InvalidInputError."""
    kind = ROLE_KINDS.get(role) if isinstance(role, str) else None
    if kind is None:
        raise InvalidInputError(f"role must be one of {', '.join(ROLE_KINDS)}, got {role!r}")
    return kind
