"""What both backends do after a rebased import (one user's export written with new ids
into a log that already holds events, see :mod:`pmm.events.rebase`): the derived data
the file carried, through the store's own writers.

    appended = ...                     # the backend's append, in one transaction
    restore_derived(store, events, appended)
"""

from __future__ import annotations

from collections.abc import Sequence

from pmm.events.rebase import carried_digests, rebuilt_edges
from pmm.records import Event
from pmm.storage.base import EventLog


def restore_derived(store: EventLog, events: Sequence[Event], appended: Sequence[Event]) -> None:
    """Write the digests the file carried (``summary``, ``keywords``) onto the renumbered
    rows, and the edges their remapped meta calls for (summaries, supersessions). These
    are derived data, outside the chain: written after the import's transaction, they
    can be recomputed by ``dream`` should this step not complete."""
    digests = carried_digests(events, appended)
    if digests:
        store.set_digests(digests)
    edges = rebuilt_edges(appended)
    if edges:
        store.add_edges(edges)
