"""How PMMStore keeps items: the session that holds a namespace, and an item read back
from its ``store_put`` event::

    namespace_session(("users", "a/b"))        # 'lgstore/users/a%2Fb'
    session_namespace("lgstore/users/a%2Fb")   # ('users', 'a/b')
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

from langgraph.store.base import SearchItem
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from pmm.context.checks import STORE_SESSION_ROOT
from pmm.errors import InvalidInputError
from pmm.records import Event

DELETE_KIND = "store_delete"
SESSION_ROOT = STORE_SESSION_ROOT


def namespace_session(namespace: Sequence[str]) -> str:
    """The PMM session that holds a namespace: ``("users", "a/b")`` → ``lgstore/users/a%2Fb``."""
    return "/".join([SESSION_ROOT, *(quote(label, safe="") for label in namespace)])


def session_namespace(session: str) -> tuple[str, ...]:
    """The inverse of :func:`namespace_session`."""
    parts = session.split("/")
    return tuple(unquote(p) for p in parts[1:])


def item_value(event: Event) -> dict[str, Any]:
    """The item's value: the event's JSON content."""
    value: dict[str, Any] = json.loads(event.content or "{}")
    return value


def search_item(event: Event, score: float | None = None) -> SearchItem:
    """The item an event holds, as LangGraph's ``SearchItem`` (``score`` from a search)."""
    if event.session_id is None:  # every store event has one; keeps mypy sure
        raise InvalidInputError(f"event {event.id} has no session")
    updated = datetime.fromisoformat(event.ts.replace("Z", "+00:00"))
    created_raw = event.meta.get("created_at")
    created = datetime.fromisoformat(created_raw) if isinstance(created_raw, str) else updated
    return SearchItem(
        namespace=session_namespace(event.session_id),
        key=str(event.meta["key"]),
        value=item_value(event),
        created_at=created,
        updated_at=updated,
        score=score,
    )


def texts_at(value: dict[str, Any], path: str) -> list[str]:
    """The text at an index field path (``"$"``: the whole value as JSON) to embed."""
    if path == "$":
        return [json.dumps(value, ensure_ascii=False, sort_keys=True)]
    return get_text_at_path(value, tokenize_path(path))
