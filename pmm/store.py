"""Where :class:`EventStore`, the SQLite event log, has always been imported from.

The code lives in :mod:`pmm.storage.sqlite` (one module per idea); this module re-exports it
so that ``from pmm.store import EventStore`` keeps working::

    from pmm.store import EventStore

    with EventStore("pmm.db") as store:
        store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
"""

from pmm.storage.sqlite import DEFAULT_MAX_CONTENT_BYTES, EventStore

__all__ = ["DEFAULT_MAX_CONTENT_BYTES", "EventStore"]
