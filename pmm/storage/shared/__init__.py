"""The event log written once, above a small set of backend primitives.

:class:`SharedLog` implements every call of :class:`pmm.storage.base.EventLog` that reads
the same on every backend (reads by filter, derived-data lookups, expiry, stats, search's
word handling, the checks of appends and assignments, erasure requests) over the
primitives of :class:`~pmm.storage.shared.primitives.Primitives`, which each backend
writes in its own SQL. No code here knows which backend it runs on::

    from pmm.storage.shared import SharedLog

    class MyStore(SharedLog):
        ...   # the primitives: _query, get_many, _append_checked, _vectors, ...

    store.events(session_id="alice", limit=10)   # SharedLog -> MyStore._query(EventQuery)

A backend never overrides what is defined here (tests/storage/test_interface_size.py
checks it): a call that needs the backend's own behaviour is a primitive.
"""

from typing import Self

from pmm.storage.shared.derived import SharedDerived
from pmm.storage.shared.primitives import GROUPED, EdgeSide, Primitives
from pmm.storage.shared.query import EventQuery, Select, TextSearch, kind_tuple
from pmm.storage.shared.reads import SharedReads
from pmm.storage.shared.search import SEARCH_KEYS, SharedSearch
from pmm.storage.shared.writes import SharedWrites, check_assignable


class SharedLog(SharedReads, SharedWrites, SharedDerived, SharedSearch):
    """Everything of the event log but its primitives (see the module docstring).

    Besides the primitives, a backend writes what cannot be shared: ``close``, the
    transactions that read and write together (``append_summary``,
    ``append_supersession``, ``import_events``), its writes of derived data, ``verify``
    (a walk tuned to its driver), and its own extras."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"


__all__ = [
    "GROUPED",
    "SEARCH_KEYS",
    "EdgeSide",
    "EventQuery",
    "Primitives",
    "Select",
    "SharedLog",
    "TextSearch",
    "check_assignable",
    "kind_tuple",
]
