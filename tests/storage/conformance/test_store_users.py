"""PMMStore with ``namespace_user``: the published suite
(:mod:`pmm.testing.conformance.store_users`) on PMM's backends, and on SQLite no byte of an
erased user's items left in the file."""

from __future__ import annotations

from pathlib import Path

from pmm import Mind
from pmm.integrations import PMMStore
from pmm.testing.conformance.store_users import *  # noqa: F403
from pmm.testing.conformance.store_users import _secret, fill


def test_the_erased_users_items_leave_no_byte_in_the_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(db) as mind:
        store = PMMStore(mind=mind, namespace_user=1)
        fill(store)
        mind.store.sync_search_index()
        store.mind.forget(user_id="u4", reason="asked")
    data = b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal", "-shm") if Path(str(db) + s).exists()
    )
    assert _secret("u4").encode() not in data and _secret("u4").lower().encode() not in data
    assert _secret("u5").encode() in data
