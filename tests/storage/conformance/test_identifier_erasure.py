"""Erasing a user's identifiers: the published suite
(:mod:`pmm.testing.conformance.identifier_erasure`) on PMM's backends, and on SQLite no
byte of her ids left in the file (plain, or hex-encoded as the search index's tags were)."""

from __future__ import annotations

from pathlib import Path

from pmm import Mind
from pmm.testing.conformance.identifier_erasure import *  # noqa: F403
from pmm.testing.conformance.identifier_erasure import ALICE, BOB, HER_THREADS, _fill


def test_no_byte_of_her_ids_stays_in_the_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(str(db)) as mind:
        _fill(mind)
        mind.store.sync_search_index()  # her ids are in the search index's tags now
        mind.forget(user_id=ALICE, reason="account deleted")
        mind.store.sync_search_index()  # the records of the erasure are indexed too
        assert mind.verify().ok
    data = b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal") if Path(str(db) + s).exists()
    )
    for text in (ALICE, *HER_THREADS):
        for form in (text.encode(), text.encode().hex().upper().encode()):
            assert form not in data, (text, form[:20])
    assert BOB.encode() in data  # the check can see ids: bob's are there
