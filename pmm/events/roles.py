"""Who said a turn: role names normalised, and the ``User: `` / ``Assistant: `` label that
local and heuristic summaries start with (LLM summaries say it in words: "The user ...").

    >>> speaker_label("human"), speaker_label("ai"), speaker_label(None)
    ('User', 'Assistant', '')
    >>> with_speaker("ai", "Suggested the 8:15 train.")
    'Assistant: Suggested the 8:15 train.'
"""

from __future__ import annotations

from collections.abc import Sequence

from pmm.errors import InvalidInputError

_ALIASES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
}


def normalize_role(role: str | None) -> str | None:
    """``human`` → ``user``, ``ai`` → ``assistant``; other names lower-cased; None stays None."""
    if role is None or not role.strip():
        return None
    key = role.strip().lower()
    return _ALIASES.get(key, key)


def speaker_label(role: str | None) -> str:
    """The label of a role as shown in a summary (``User``, ``Assistant``, ...), or ``""``."""
    normalized = normalize_role(role)
    return normalized.capitalize() if normalized else ""


def with_speaker(role: str | None, summary: str) -> str:
    """``summary`` prefixed by who said it (``User: ...``); unchanged when the role is unknown
    or ``summary`` is empty."""
    label = speaker_label(role)
    return f"{label}: {summary}" if label and summary else summary


def roles_for(texts: Sequence[str], roles: Sequence[str | None] | None) -> list[str | None]:
    """``roles`` as a list as long as ``texts`` (all None when not given); a length mismatch
    raises :class:`~pmm.errors.InvalidInputError`."""
    if roles is None:
        return [None] * len(texts)
    if len(roles) != len(texts):
        raise InvalidInputError(f"digest_many got {len(texts)} texts but {len(roles)} roles")
    return list(roles)


def without_speaker(role: str | None, summary: str) -> str:
    """``summary`` without the ``User: `` / ``Assistant: `` label :func:`with_speaker` added
    (for displays that label turns themselves); other text is returned unchanged."""
    label = speaker_label(role)
    prefix = f"{label}: "
    return summary[len(prefix) :] if label and summary.startswith(prefix) else summary
