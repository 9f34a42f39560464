"""The SQLite backend of the event log: :class:`EventStore`, split by idea into modules.

    from pmm.storage.sqlite import EventStore
    store = EventStore("pmm.db")

``store`` composes the mixins of ``log`` (append + chain, the one events query),
``search`` (FTS keys, with ``windows`` for the window/date key), ``derived`` (digests,
vectors), ``consolidation`` (edges, summaries, supersession), ``meta_keys`` and ``verify``
(verify, the figures of stats): the primitives below :class:`pmm.storage.shared.SharedLog`,
which writes the rest of the log's calls once;
``connection`` opens files and translates sqlite3 errors, ``readonly`` opens archives.
Its numbered SQL migrations live in ``migrations/`` beside it (see
:mod:`pmm.storage.sqlite.schema`).
"""

from pmm.storage.sqlite.store import DEFAULT_MAX_CONTENT_BYTES, EventStore

__all__ = ["DEFAULT_MAX_CONTENT_BYTES", "EventStore"]
