"""Storage backends of the event log, picked by the target's form.

    from pmm.storage import open_store

    store = open_store("pmm.db")                              # SQLite (the default)
    store = open_store("postgresql://app@db.internal/pmm")    # PostgreSQL ([postgres] extra)

    register_backend("mystore://", MyStore)                  # a backend of your own
    store = open_store("mystore://bucket/pmm")               # MyStore("mystore://...", **options)

Every backend implements :class:`pmm.storage.base.EventLog`; nothing above this package
needs to know which one it talks to. A backend in its own package can also register itself
by an entry point in the ``pmm.backends`` group, named by its scheme (``mystore``) and
pointing at its opener; it is loaded the first time a target of that scheme is opened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from pmm.errors import InvalidInputError
from pmm.storage.base import EventLog

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
ENTRY_POINT_GROUP = "pmm.backends"
"""Where an installed package names its backend: ``mystore = "my_pkg.store:MyStore"``."""

_openers: dict[str, Callable[..., EventLog]] = {}


def register_backend(scheme: str, opener: Callable[..., EventLog]) -> None:
    """Open targets that start with ``scheme`` (``"mystore://"``) with
    ``opener(target, **options)``: ``Mind``, ``PMMStore``, the middleware and the ``pmm``
    command then use that backend for such a target (``PMM_DB_URL=mystore://...``).

    ``options`` are what PMM passes every backend (``max_content_bytes``, ``timeout``,
    ``window_radius``, ``synchronous``): accept them, and ignore the ones that mean nothing
    to yours. A scheme of PMM's own, or one without ``://``, is refused.
    """
    if not scheme.endswith("://") or len(scheme) <= 3:
        raise InvalidInputError(
            f"a backend scheme ends with '://', e.g. 'mystore://' (got {scheme!r})"
        )
    if scheme.lower() in POSTGRES_SCHEMES:
        raise InvalidInputError(f"{scheme} is PostgreSQL's, opened by PMM itself")
    _openers[scheme.lower()] = opener


def _registered(target: str) -> Callable[..., EventLog] | None:
    """The opener of ``target``'s scheme: registered, else from an installed entry point."""
    scheme = target.split("://", 1)[0].lower() + "://"
    if scheme not in _openers:
        found = entry_points(group=ENTRY_POINT_GROUP, name=scheme[:-3])
        for point in found:
            register_backend(scheme, point.load())
    return _openers.get(scheme)


def is_url(target: str | os.PathLike[str]) -> bool:
    """True for a target a backend opens by URL (PostgreSQL's, or a registered scheme's),
    False for a SQLite file path."""
    if is_postgres_url(target):
        return True
    return isinstance(target, str) and "://" in target and _registered(target) is not None


def is_postgres_url(target: str | os.PathLike[str]) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def open_store(target: str | os.PathLike[str], **options: Any) -> EventLog:
    """The event log at ``target``: a PostgreSQL URL, a registered backend's URL (see
    :func:`register_backend`), else a SQLite file path. A ``scheme://`` target that no
    backend knows is refused, not taken for a file name."""
    if is_postgres_url(target):
        from pmm.storage.postgres import PostgresEventStore

        # SQLite's durability knob: a PostgreSQL commit is durable (synchronous_commit).
        options.pop("synchronous", None)
        return PostgresEventStore(str(target), **options)
    if isinstance(target, str) and "://" in target:
        opener = _registered(target)
        if opener is None:
            scheme = target.split("://", 1)[0]
            raise InvalidInputError(
                f"no backend opens {scheme}:// targets: install the package that provides it "
                f"(entry point group {ENTRY_POINT_GROUP!r}) or call "
                f"pmm.storage.register_backend({scheme + '://'!r}, opener)"
            )
        return opener(target, **options)
    from pmm.storage.sqlite import EventStore

    return EventStore(target, **options)


__all__ = [
    "ENTRY_POINT_GROUP",
    "POSTGRES_SCHEMES",
    "EventLog",
    "is_postgres_url",
    "is_url",
    "open_store",
    "register_backend",
]
