"""A read-only copy (a 0444 file, a 0555 folder) is opened without writing a byte or
creating a -wal/-shm file beside it, even by root, and keyword search finds every event it
holds although its full-text index was never brought up to date (issue 36)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pmm.errors import ReadOnlyDatabaseError
from pmm.storage.sqlite import EventStore

N = 600


def _unindexed_log(path: Path) -> None:
    """``N`` turns never searched: the file's full-text index holds none of them."""
    with EventStore(path) as store:
        for i in range(N):
            store.append(
                "prompt", f"turn {i}: the harbour of Lisbon, pier{i}", session_id="s", role="user"
            )
        assert store.search_index_upto() == 0
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@pytest.fixture
def copy_0444(tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "pmm.db"
    _unindexed_log(db)
    db.chmod(0o444)
    yield db
    db.chmod(0o644)


@pytest.fixture
def copy_in_0555(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "archive"
    folder.mkdir()
    db = folder / "pmm.db"
    _unindexed_log(db)
    folder.chmod(0o555)
    yield db
    folder.chmod(0o755)


@pytest.mark.parametrize("copy", ["copy_0444", "copy_in_0555"])
def test_a_read_only_copy_is_searched_whole_and_left_untouched(
    copy: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    db: Path = request.getfixturevalue(copy)
    before = db.read_bytes()
    with EventStore(db) as store:
        assert store.read_only_reason is not None  # root too: the mode bits say so
        hits = store.search_text("Lisbon harbour", limit=10 * N)
        assert len(hits) == N
        [(best, _)] = store.search_text("pier417", limit=1)[:1] or [(None, 0)]
        assert best is not None and "turn 417:" in store.get(best).content
        assert sorted(os.listdir(db.parent)) == ["pmm.db"]
        with pytest.raises(ReadOnlyDatabaseError):
            store.append("prompt", "not here", session_id="s", role="user")
        with caplog.at_level(logging.WARNING):
            store.search_text("Lisbon", key="window")
        assert "not in the window/date index" in caplog.text  # that key is not rebuilt
    assert sorted(os.listdir(db.parent)) == ["pmm.db"]
    assert db.read_bytes() == before


def test_a_writable_file_still_indexes_in_the_file(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    _unindexed_log(db)
    with EventStore(db) as store:
        assert store.read_only_reason is None
        assert len(store.search_text("Lisbon", limit=10 * N)) == N
        assert store.search_index_upto() == N


def test_a_read_only_connection_beside_a_writer_sees_its_appends_and_erasures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened ``mode=ro`` (the file may be written by another process): the in-memory
    index follows the writer's commits, and an erasure by the writer leaves no match."""
    from pmm.storage.sqlite import store as store_module

    db = tmp_path / "pmm.db"
    with EventStore(db) as first:
        for i in range(50):
            first.append("prompt", f"turn {i} at pier{i}", session_id="s", role="user")
    writer = EventStore(db)
    monkeypatch.setattr(store_module, "read_only_reason", lambda path: "opened read-only")
    reader = EventStore(db)
    try:
        assert [i for i, _ in reader.search_text("pier7")] == [8]
        fresh = writer.append("prompt", "the lighthouse keeper", session_id="s", role="user")
        assert [i for i, _ in reader.search_text("lighthouse")] == [fresh.id]
        writer.forget(event_ids=[8], reason="asked")
        assert reader.search_text("pier7") == []
        assert [i for i, _ in reader.search_text("pier9")] == [10]
    finally:
        reader.close()
        writer.close()
