"""Storage backends of the event log, picked by the target's form.

    from pmm.storage import open_store

    store = open_store("pmm.db")                              # SQLite (the default)
    store = open_store("postgresql://app@db.internal/pmm")    # PostgreSQL ([postgres] extra)

Both implement :class:`pmm.storage.base.EventLog`; nothing above this package needs to
know which one it talks to.
"""

from __future__ import annotations

import os
from typing import Any

from pmm.storage.base import EventLog

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | os.PathLike[str]) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def open_store(target: str | os.PathLike[str], **options: Any) -> EventLog:
    """The event log at ``target``: a PostgreSQL URL, else a SQLite file path."""
    if is_postgres_url(target):
        from pmm.storage.postgres import PostgresEventStore

        # SQLite's durability knob: a PostgreSQL commit is durable (synchronous_commit).
        options.pop("synchronous", None)
        return PostgresEventStore(str(target), **options)
    from pmm.storage.sqlite import EventStore

    return EventStore(target, **options)


__all__ = ["POSTGRES_SCHEMES", "EventLog", "is_postgres_url", "open_store"]
