"""Checks of what callers name before the context is read: the session (non-empty,
storable, not one of PMMStore's reserved ``lgstore/...`` sessions) and the recall settings.

    checked_session(None, settings.session_id)   # -> the default session, checked
    checked_session("lgstore/notes", "default")  # raises InvalidInputError: reserved
    recall_weights(settings)                     # PMM_RECALL_WEIGHTS parsed and checked
    default_recall_mode(settings)                # "hybrid" with embeddings on, else "keyword"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pmm.errors import ConfigurationError, InvalidInputError

if TYPE_CHECKING:
    from pmm.settings import Settings

STORE_SESSION_ROOT = "lgstore"
"""Sessions ``lgstore/<namespace>`` hold the items of :class:`pmm.integrations.PMMStore`:
reserved, so that no other surface (remember, context, recall, history) reaches them by
naming the session; the store's own get/search (and its TTL) decide what they show."""
STORE_KINDS = ("store_put", "store_delete")
"""The event kinds of PMMStore items: recall refuses to search them."""


def is_store_session(session: str) -> bool:
    """Whether ``session`` is one of PMMStore's namespace sessions (``lgstore/...``)."""
    return session == STORE_SESSION_ROOT or session.startswith(STORE_SESSION_ROOT + "/")


def checked_session(session_id: str | None, default: str) -> str:
    """``session_id`` (None = ``default``), checked: a non-empty string UTF-8 can store,
    not one of PMMStore's reserved sessions."""
    session = default if session_id is None else session_id
    if not isinstance(session, str) or not session.strip():
        raise InvalidInputError(f"session_id must be a non-empty string, got {session!r}")
    if is_store_session(session):
        raise InvalidInputError(
            f"session_id {session!r} is reserved: sessions under '{STORE_SESSION_ROOT}/' hold "
            "PMMStore's items, which only PMMStore.get/search return"
        )
    try:
        session.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"session_id {session!r} holds a lone surrogate, which UTF-8 cannot store"
        ) from None
    return session


def recall_weights(settings: Settings) -> dict[str, float]:
    """The ranker weights of ``PMM_RECALL_WEIGHTS``, once the recall settings are checked."""
    from pmm.recall.recaller import parse_weights

    weights = parse_weights(settings.recall_weights)
    if settings.recall_window > 20:
        raise ConfigurationError(
            f"PMM_RECALL_WINDOW={settings.recall_window} is not valid: use 0..20 turns"
        )
    return weights


def default_recall_mode(settings: Settings) -> str:
    """Recall's mode when none is asked for: hybrid with embeddings on, else keyword."""
    return "hybrid" if settings.enable_embeddings else "keyword"
