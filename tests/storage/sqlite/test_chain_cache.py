"""The per-store memo of chain secrets, heads and session owners (issue 21's append speed,
pmm/storage/sqlite/chains.py ``ChainCache``): it spares an append re-reading the chain, and
is dropped whenever anything else wrote, in this store, another store of this process or
another process, so every chain still links and verifies."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from store_helpers import REPO_ROOT

from pmm.events.chains import user_digest
from pmm.records import Event, NewEvent
from pmm.storage.sqlite import EventStore

ALICE = "alice@example.com"

OTHER_PROCESS = """
import sys
from pmm.storage.sqlite import EventStore
path, action, user = sys.argv[1:4]
with EventStore(path) as store:
    if action == "append":
        for i in range(int(sys.argv[4])):
            ev = store.append("prompt", f"from the other process {i}", session_id=user + "-t")
            print(ev.id, ev.hash)
    else:
        ids = [e.id for e in store.events(user_id=user)]
        store.forget(event_ids=ids, reason="account deleted", identifiers_of=user)
"""


def other_process(path: Path, *args: str) -> list[str]:
    """Run one action in a fresh interpreter on the same file; its printed lines."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(path), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[:-1]


def append(store: EventStore, text: str, user: str | None = ALICE) -> Event:
    thread = None if user is None else user + "-t"
    return store.append_many([NewEvent("prompt", text, thread, "user", None, None, user)])[0]


def stored_head(path: Path, chain: str) -> tuple[int, str] | None:
    with EventStore(path) as store:
        row = store._read("SELECT head_id, head_hash FROM chains WHERE chain = ?", (chain,))
    return None if not row else (int(row[0][0]), bytes(row[0][1]).hex())


def chain_reads(store: EventStore) -> list[str]:
    """Start recording the statements that read a chain's row (the cache's misses)."""
    seen: list[str] = []
    store._conn.set_trace_callback(lambda sql: seen.append(sql) if "FROM chains" in sql else None)
    return seen


def test_a_warm_append_reads_no_chain_row(tmp_path: Path) -> None:
    with EventStore(tmp_path / "pmm.db") as store:
        append(store, "first")
        reads = chain_reads(store)
        second = append(store, "second")
        third = append(store, "third")
        assert reads == []
        assert third.prev_hash == second.hash
        store.put_embeddings("m", 1, [(second.id, bytes(4))])  # a write outside the appends
        fourth = append(store, "fourth")
        assert len(reads) == 1  # re-read once, then trusted again
        assert fourth.prev_hash == third.hash
        assert store.verify().ok


def test_two_stores_of_one_process_alternate_on_one_user(tmp_path: Path) -> None:
    path = tmp_path / "pmm.db"
    with EventStore(path) as one, EventStore(path) as two:
        previous = append(one, "warm one")
        append(two, "warm two", user=None)  # the chain without a user too
        for i in range(20):
            store = one if i % 3 else two
            event = append(store, f"turn {i}")
            assert event.prev_hash == previous.hash, i
            previous = event
            if i % 5 == 0:
                append(two if store is one else one, f"no user {i}", user=None)
        report = one.verify()
        assert report.ok, report
        assert report.rows == one.count() == two.count()
        assert two.verify().root == report.root
    assert stored_head(path, ALICE) == (previous.id, previous.hash)


def test_another_process_appends_and_erases_between_cached_appends(tmp_path: Path) -> None:
    path = tmp_path / "pmm.db"
    with EventStore(path) as store:
        mine = append(store, "mine, before")
        append(store, "mine, cached")
        [*_, last_theirs] = other_process(path, "append", ALICE, "3")
        theirs_id, theirs_hash = last_theirs.split()
        after = append(store, "mine, after theirs")
        assert (after.id, after.prev_hash) == (int(theirs_id) + 1, theirs_hash)
        assert store.verify().ok
        old_digest = mine.user_digest

        other_process(path, "forget", ALICE)  # her chain's secret is deleted there
        back = append(store, "she came back")
        assert back.prev_hash is None  # a new chain, under a new secret
        assert back.user_digest is not None and back.user_digest != old_digest
        [(secret,)] = store._read("SELECT secret FROM chains WHERE chain = ?", (ALICE,))
        assert back.user_digest == user_digest(bytes(secret), ALICE)
        again = append(store, "and stayed")
        assert again.prev_hash == back.hash
        report = store.verify()
        assert report.ok, report
        assert store.verify(user_id=ALICE).user_head == again.hash
    assert stored_head(path, ALICE) == (again.id, again.hash)


def test_an_erasure_by_the_same_store_starts_her_a_new_chain(tmp_path: Path) -> None:
    with EventStore(tmp_path / "pmm.db") as store:
        first = append(store, "before")
        append(store, "cached head")
        ids = [e.id for e in store.events(user_id=ALICE)]
        store.forget(event_ids=ids, reason="account deleted", identifiers_of=ALICE)
        back = append(store, "back again")
        assert back.prev_hash is None and back.user_digest != first.user_digest
        assert store.verify().ok


def test_a_rolled_back_append_leaves_the_cache_behind(tmp_path: Path) -> None:
    with EventStore(tmp_path / "pmm.db") as store:
        kept = append(store, "kept")
        # An append inside a larger transaction that then fails (as an erasure or an
        # assignment could): its head must not be linked to afterwards.
        with pytest.raises(RuntimeError), store._lock, store._write() as conn:
            store._append_locked(
                conn,
                [
                    store._check(
                        NewEvent("prompt", "lost", "alice@example.com-t", None, None, None, ALICE)
                    )
                ],
            )
            raise RuntimeError("the rest of the transaction failed")
        after = append(store, "after the rollback")
        assert (after.id, after.prev_hash) == (kept.id + 1, kept.hash)
        assert store.verify().ok


def test_a_failed_insert_leaves_the_cache_behind(tmp_path: Path) -> None:
    with EventStore(tmp_path / "pmm.db") as store:
        kept = append(store, "kept")
        store._conn.execute(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON events WHEN new.content = 'boom'"
            " BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        with pytest.raises(Exception, match="refused"):
            append(store, "boom")
        after = append(store, "after the failure")
        assert after.prev_hash == kept.hash
        assert store.verify().ok


def test_assigning_a_cached_session_gives_later_appends_her_chain(tmp_path: Path) -> None:
    with EventStore(tmp_path / "pmm.db") as store:
        append(store, "no user yet", user=None)
        store.append("prompt", "a thread without a user", session_id="t")
        store.append("prompt", "its owner is cached", session_id="t")
        assigned = store.assign_user("t", ALICE)
        later = store.append("prompt", "now hers", session_id="t")
        assert later.user_id == ALICE and later.prev_hash == assigned.hash
        assert store.verify().ok


def test_a_file_restored_under_an_open_store_is_read_again(tmp_path: Path) -> None:
    # Another connection replaces the whole file with a copy that diverged from it at the
    # same newest id: only PRAGMA data_version tells the store its memo is stale.
    path, copy = tmp_path / "pmm.db", tmp_path / "copy.db"
    with EventStore(path) as store:
        append(store, "shared")
        with sqlite3.connect(path) as src, sqlite3.connect(copy) as dst:
            src.backup(dst)
        with EventStore(copy) as other:
            theirs = append(other, "only in the copy")
        mine = append(store, "only in the original")
        assert mine.id == theirs.id and mine.hash != theirs.hash
        with sqlite3.connect(copy) as src, sqlite3.connect(path) as dst:
            src.backup(dst)
        after = append(store, "after the restore")
        assert after.prev_hash == theirs.hash
        assert store.verify().ok
