"""The erasure's throttle on PostgreSQL: ``forget(..., pause=...)`` pauses between the
chunks of each partition's copy (pmm/storage/postgres/swap.py). A paused copy still ends
while the partition's writers go on (it copies up to the last key there when its change
trigger was in place, and replays the rest), what they wrote survives, her words leave the
data files, and a pause that is not a number of seconds from 0 to 10 is refused before
anything is written."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from pg_cluster import PostgresCluster
from pg_partitions import SECRET, append, holding, pg_files, shard, users_apart

from pmm.storage.postgres import PostgresEventStore
from pmm.storage.postgres import swap as pg_swap

CAP = 3000
"""The most appends a writer makes: the bound that keeps a copy that chased the writers
from running for ever (it would end only once they stop)."""


def _writer(url: str, user: str, stop: threading.Event, written: dict[int, str]) -> None:
    with PostgresEventStore(url, pool_size=1) as store:
        for i in range(CAP):
            if stop.is_set():
                return
            text = f"{user} writes during the copy, {i}"
            written[append(store, user, text, f"{user}/t1")] = text


def test_a_paused_copy_ends_while_the_partition_is_written_to(pg_url: str) -> None:
    store = PostgresEventStore(pg_url, pool_size=2)
    victim, _, beside = users_apart(pg_url)
    for i in range(40):
        append(store, beside, f"note {i} of her neighbour", f"{beside}/t1")
        append(store, victim, f"{SECRET} {i}", f"{victim}/t1")
    written: dict[int, str] = {}
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(pg_url, beside, stop, written))
    writer.start()
    while len(written) < 5:  # the writer is under way
        assert writer.is_alive()
        threading.Event().wait(0.01)

    # 5 keys a chunk, 50 ms apart: slower than the writer, who adds rows all along.
    report = pg_swap.rewrite_partition(
        store._db, "events", shard(pg_url, beside), pause=0.05, chunk=5
    )
    still_writing = writer.is_alive() and len(written) < CAP
    stop.set()
    writer.join()

    assert still_writing, "the copy ended only once the writer had stopped"
    assert report.copied >= 80 and report.replayed >= 1  # the writer's rows were replayed
    for event_id, text in written.items():
        assert store.get(event_id).content == text
    assert len(store.events(user_id=beside)) == 40 + len(written)
    assert store.verify().ok
    store.close()


def test_forget_with_a_pause_erases_her_and_keeps_what_others_wrote(
    pg_cluster: PostgresCluster, pg_url: str
) -> None:
    store = PostgresEventStore(pg_url, pool_size=2)
    victim, apart, beside = users_apart(pg_url)
    for i in range(30):
        append(store, victim, f"{SECRET} {i}", f"{victim}/t1")
        append(store, beside, f"note {i} of her neighbour", f"{beside}/t1")
        append(store, apart, f"note {i} of the other user", f"{apart}/t1")
    written: dict[int, str] = {}
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(pg_url, beside, stop, written))
    writer.start()

    report = store.forget(session_ids=[f"{victim}/t1"], reason="asked", pause=0.02)
    stop.set()
    writer.join()

    assert len(report.erased) == 30
    assert all(store.get(i).content is None for i in report.erased)
    for event_id, text in written.items():
        assert store.get(event_id).content == text
    assert store.verify().ok
    for user in (victim, apart, beside):
        assert store.verify(user_id=user).ok
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    assert holding(pg_files(pg_cluster, pg_url), ("QX77TRELLIS",)) == set()
    store.close()


@pytest.mark.parametrize("pause", [-0.01, float("nan"), float("inf"), 10.5, "0.1", True, None])
def test_a_pause_that_is_not_seconds_from_0_to_10_is_refused_before_anything_is_written(
    pg_url: str, pause: Any
) -> None:
    with PostgresEventStore(pg_url) as store:
        victim, _, _ = users_apart(pg_url)
        kept = append(store, victim, f"{SECRET} kept", f"{victim}/t1")
        with pytest.raises(ValueError, match="pause must be"):
            store.forget(session_ids=[f"{victim}/t1"], reason="asked", pause=pause)
        assert store.get(kept).content == f"{SECRET} kept"
        assert [e.kind for e in store.events()] == ["prompt"]


def test_the_rewrite_waits_for_snapshots_older_than_the_erasure(pg_url: str) -> None:
    """VACUUM FULL keeps what an older snapshot could still see (the erased rows' old
    versions, the dropped partitions' statistics): the erasure's last step waits until no
    session of the database holds one, and says False when one outlives the wait."""
    with PostgresEventStore(pg_url) as store:
        append(store, "ann", "hello", "ann/t1")
        assert pg_swap.older_snapshots_gone(store._db, timeout=1.0)
        with psycopg.connect(pg_url) as old:
            old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            old.execute("SELECT count(*) FROM events").fetchone()  # the snapshot is taken
            assert not pg_swap.older_snapshots_gone(store._db, timeout=0.3)
            old.execute("COMMIT")
            assert pg_swap.older_snapshots_gone(store._db, timeout=1.0)
