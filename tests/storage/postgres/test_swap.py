"""Erasing a user on PostgreSQL copies her partitions beside the live ones and swaps them
(pmm/storage/postgres/swap.py): other users' appends, in her partition and in others,
complete while she is being erased, what they wrote meanwhile survives the swap, every
chain verifies, her words leave the data files, and a swap that cannot get its lock gives
up with a clear error, leaving the partition as it was."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psycopg
import pytest
from pg_cluster import PostgresCluster
from pg_partitions import SECRET, append, holding, pg_files, shard, users_apart

from pmm.errors import DatabaseError
from pmm.storage.postgres import PostgresEventStore
from pmm.storage.postgres import swap as pg_swap


def _has_trigger(url: str, partition: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgname = 'pmm_swap'"
            " AND tgrelid = to_regclass(%s)",
            (partition,),
        ).fetchone()
    return bool(row and row[0])


def _fill(store: PostgresEventStore, users: tuple[str, str, str], turns: int) -> None:
    victim, apart, beside = users
    for i in range(turns):
        append(store, victim, f"{SECRET} {i}", f"{victim}/t1")
        append(store, apart, f"note {i} of the other user", f"{apart}/t1")
        append(store, beside, f"note {i} of her neighbour", f"{beside}/t1")


def _erase_in_thread(url: str, session: str, done: dict[str, Any]) -> threading.Thread:
    def erase() -> None:
        try:
            with PostgresEventStore(url, pool_size=1) as eraser:
                done["report"] = eraser.forget(session_ids=[session], reason="asked")
        except BaseException as exc:  # surfaced by the test's assertions
            done["error"] = exc

    thread = threading.Thread(target=erase)
    thread.start()
    return thread


def test_appends_go_on_during_an_erasure_and_what_they_wrote_survives_the_swap(
    pg_cluster: PostgresCluster, pg_url: str
) -> None:
    store = PostgresEventStore(pg_url, pool_size=4)
    users = users_apart(pg_url)
    victim, apart, beside = users
    _fill(store, users, 30)
    partition = f"events_s{shard(pg_url, victim):02d}"
    # A long reader of her partition holds the swap back (DETACH needs it alone): the
    # erasure copies her partition, then retries the swap's lock while the reader stays.
    holder = psycopg.connect(pg_url)
    holder.execute(f"SELECT count(*) FROM {partition}")
    done: dict[str, Any] = {}
    eraser = _erase_in_thread(pg_url, f"{victim}/t1", done)
    deadline = time.monotonic() + 60
    while not _has_trigger(pg_url, partition):  # the copy has begun
        assert time.monotonic() < deadline and eraser.is_alive(), done
        time.sleep(0.02)

    written: dict[int, str] = {}
    for round_ in range(3):  # during the copy, then while the swap waits for its lock
        for user in (beside, apart):
            text = f"{user} writes during the erasure, round {round_}"
            written[append(store, user, text, f"{user}/t1")] = text
            assert eraser.is_alive() and not done, done  # completed before the erasure
        time.sleep(0.5)
    holder.rollback()  # the swap gets its lock
    holder.close()
    eraser.join(timeout=120)

    assert not eraser.is_alive() and "error" not in done, done
    assert len(done["report"].erased) == 30
    for event_id, text in written.items():  # rows written meanwhile were not lost
        assert store.get(event_id).content == text
    assert len(store.events(user_id=beside)) == 33 and len(store.events(user_id=apart)) == 33
    assert store.verify().ok
    for user in (victim, apart, beside):
        assert store.verify(user_id=user).ok
    assert [i for i, _ in store.search_text("neighbour")]  # the swapped indexes answer
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    assert holding(pg_files(pg_cluster, pg_url), ("QX77TRELLIS",)) == set()
    append(store, beside, "and after the swap", f"{beside}/t1")
    assert store.verify().ok
    store.close()


def test_a_swap_that_cannot_get_its_lock_gives_up_and_leaves_the_partition_as_it_was(
    pg_cluster: PostgresCluster, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_swap, "TRIES", 3)
    store = PostgresEventStore(pg_url, pool_size=2)
    users = users_apart(pg_url)
    victim, _, beside = users
    _fill(store, users, 5)
    partition = f"events_s{shard(pg_url, victim):02d}"
    holder = psycopg.connect(pg_url)
    holder.execute(f"SELECT count(*) FROM {partition}")
    with pytest.raises(DatabaseError, match="lock was not granted"):
        store.forget(session_ids=[f"{victim}/t1"], reason="asked")
    kept = append(store, beside, "written while the rewrite is pending", f"{beside}/t1")
    holder.rollback()
    holder.close()

    store.rewrite_tables()  # the rewrite again: its leftovers go, the swap happens

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        left = conn.execute(
            "SELECT (SELECT count(*) FROM pmm_swap_log),"
            " (SELECT count(*) FROM pg_class WHERE relname LIKE '%%_swap')"
        ).fetchone()
        assert left == (0, 0)
    assert not _has_trigger(pg_url, partition)
    assert holding(pg_files(pg_cluster, pg_url), ("QX77TRELLIS",)) == set()
    assert store.get(kept).content == "written while the rewrite is pending"
    assert store.verify().ok
    store.close()


def test_an_erasure_whose_rows_spread_meanwhile_takes_the_exclusive_lock_instead(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pmm.storage.postgres.erasure as pg_erasure

    calls: list[bool] = []

    def widened(needed: Any, held: Any) -> bool:  # as if a match found a new session
        calls.append(True)
        return False

    monkeypatch.setattr(pg_erasure, "_within", widened)
    with PostgresEventStore(pg_url) as store:
        users = users_apart(pg_url)
        _fill(store, users, 3)
        report = store.forget(match="locker code", reason="asked")
        assert len(report.erased) == 3 and calls == [True]
        assert all(store.get(i).content is None for i in report.erased)
        assert store.verify().ok


def test_the_partitioned_tables_are_analyzed_only_when_they_have_statistics_of_their_own(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Their own statistics sample every partition (erased rows included); autovacuum never
    # makes them, and without them an ANALYZE of every partition would be wasted work.
    def analyzed() -> str:
        lines = [r.getMessage() for r in caplog.records if "s: ANALYZE " in r.getMessage()]
        return lines[-1].split("ANALYZE ", 1)[1]

    caplog.set_level(logging.DEBUG, logger="pmm.storage.postgres.erasure")
    with PostgresEventStore(pg_url) as store:
        users = users_apart(pg_url)
        _fill(store, users, 2)
        store.forget(session_ids=[f"{users[0]}/t1"], reason="asked")
        assert analyzed() == "edges, chains, session_owners"
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE events")
        store.forget(session_ids=[f"{users[1]}/t1"], reason="asked")
        assert analyzed() == "events, edges, chains, session_owners"
