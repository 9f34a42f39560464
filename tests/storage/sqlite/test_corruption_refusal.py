"""A store that saw its file report damage refuses every later write (StoreRefusedError,
naming `pmm check` and `pmm recover`) until the file is opened again after it passes the
check; reads still work for salvage (issue 36)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from damage_helpers import damaged_log

from pmm import Mind
from pmm.errors import CorruptDatabaseError, StoreRefusedError
from pmm.storage.sqlite import EventStore
from pmm.storage.sqlite.backup import check, recover


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _bytes(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name)}


def test_a_write_after_damage_was_seen_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    damaged_log(db)
    mind = Mind(str(db))
    try:
        with pytest.raises(CorruptDatabaseError):  # the sequence: context, remember
            mind.context("s1", query="lorem turn 150")
        before = _bytes(db)
        with pytest.raises(StoreRefusedError) as refused:
            mind.remember("one more turn", role="user", session_id="s9")
        assert "pmm check" in str(refused.value) and "pmm recover" in str(refused.value)
        with pytest.raises(StoreRefusedError):  # every write, not only the next one
            mind.store.append("prompt", "and another", session_id="s9", role="user")
        assert mind.store.get(300).content.startswith("turn 299")  # reads still work
        assert mind.store.sync_search_index() == 0  # searched as the file holds it
        assert _bytes(db) == before
    finally:
        mind.close()


def test_the_refusal_holds_for_every_store_on_the_file_until_it_passes_the_check(
    tmp_path: Path,
) -> None:
    db = tmp_path / "pmm.db"
    damaged_log(db)
    first, second = EventStore(db), EventStore(db)
    try:
        with pytest.raises(CorruptDatabaseError):
            list(first.iter_events())
        with pytest.raises(StoreRefusedError):  # opened before, on the same file
            second.append("prompt", "x", session_id="s", role="user")
        with EventStore(db) as again, pytest.raises(StoreRefusedError):
            again.append("prompt", "x", session_id="s", role="user")  # still damaged
    finally:
        first.close()
        second.close()
    assert not check(db).ok


def test_reopening_after_recover_replaced_the_file_writes_again(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    damaged_log(db)
    mind = Mind(str(db))
    with pytest.raises(CorruptDatabaseError):
        list(mind.store.iter_events())
    with pytest.raises(StoreRefusedError):
        mind.remember("lost?", role="user", session_id="s9")
    mind.close()
    report = recover(db, tmp_path / "new.db")
    assert report.salvaged > 0
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.move(tmp_path / "new.db", db)
    assert check(db).ok
    with Mind(str(db)) as reopened:
        event = reopened.remember("back in business", role="user", session_id="s9")
        assert reopened.store.get(event.id).content == "back in business"


def test_a_healthy_file_is_not_refused(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(str(db)) as mind:
        mind.remember("fine", role="user", session_id="s")
        assert mind.store.refusal() is None
