"""PMMStore's namespaces and TTL: the published suite
(:mod:`pmm.testing.conformance.store_scope_ttl`) on PMM's backends, and on SQLite no byte of
a swept item left in the file."""

from __future__ import annotations

import time
from pathlib import Path

from pmm import Mind
from pmm.integrations import PMMStore
from pmm.testing.conformance.store_scope_ttl import *  # noqa: F403


def test_the_sweep_leaves_no_byte_in_the_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(db) as mind:
        store = PMMStore(mind=mind)
        for i in range(30):
            store.put(("users", f"u{i}"), "doc", {"text": f"filler note number {i}"})
        store.put(("users", "ann"), "otp", {"code": "QX81726354Z"}, ttl=0.01)
        mind.store.sync_search_index()
        time.sleep(0.8)
        assert store.sweep_ttl() == 1
        assert mind.verify().ok
    data = b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal", "-shm") if Path(str(db) + s).exists()
    )
    assert b"QX81726354Z" not in data and b"qx81726354z" not in data
    assert b"filler note number 7" in data
