"""Window and date keys: the published suite (:mod:`pmm.testing.conformance.windows`) on
PMM's backends, and a PostgreSQL database from before window keys getting them on open."""

from __future__ import annotations

from pg_helpers import raw_execute

from pmm.storage import open_store
from pmm.testing.conformance.windows import *  # noqa: F403
from pmm.testing.conformance.windows import turn, window_hits


def test_a_database_from_before_window_keys_gets_them_on_open(pg_url: str) -> None:
    with open_store(pg_url) as old:
        ids = [turn(old, t) for t in ("I planted tomatoes", "how are they doing?", "great")]
    # As a database migrated from 0002 looks: no window rows, never built.
    raw_execute(pg_url, "DELETE FROM event_windows; UPDATE window_state SET radius = -1")
    with open_store(pg_url) as new:
        assert window_hits(new, "tomatoes") == ids
        assert new.verify().ok
