"""A database locked by another process: writes wait ``PMM_BUSY_TIMEOUT_MS`` and then raise
a clear PMM error naming the lock and the setting, while reads go on."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pmm import Mind
from pmm.errors import DatabaseError
from pmm.storage.sqlite import EventStore

HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()          # hold the write lock until the test says so
conn.execute("ROLLBACK")
"""


@pytest.fixture
def locked_db(tmp_path: Path):
    db = tmp_path / "pmm.db"
    with Mind(str(db)) as mind:
        mind.remember("the blue key is in the drawer", role="user", session_id="s")
        mind.store.sync_search_index()  # so that searching below needs no write
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    yield db
    assert holder.stdin is not None
    holder.stdin.write("\n")
    holder.stdin.close()
    holder.wait(timeout=10)


def test_write_waits_the_setting_then_names_lock_and_setting(locked_db: Path):
    mind = Mind(str(locked_db), busy_timeout_ms=300)
    try:
        started = time.monotonic()
        with pytest.raises(DatabaseError) as info:
            mind.remember("must wait for the lock", role="user", session_id="s")
        waited = time.monotonic() - started
        message = str(info.value)
        assert "locked" in message and "PMM_BUSY_TIMEOUT_MS" in message
        assert 0.25 <= waited < 5.0, waited
        # Reads go on while the other process holds the write lock.
        assert mind.store.count() == 1
        [(hit, _score)] = mind.store.search_text("drawer", session_id="s")
        assert mind.store.get(hit).content == "the blue key is in the drawer"
        assert mind.verify().ok
    finally:
        mind.close()


def test_store_reads_busy_timeout_from_environment(locked_db: Path, monkeypatch):
    monkeypatch.setenv("PMM_BUSY_TIMEOUT_MS", "200")
    with EventStore(locked_db) as store:
        started = time.monotonic()
        with pytest.raises(DatabaseError, match="PMM_BUSY_TIMEOUT_MS"):
            store.append("event", "blocked", session_id="s")
        assert time.monotonic() - started < 5.0
        assert store.verify().ok and store.count() == 1
