"""Many writers, one chain: processes and connections appending to one PostgreSQL log."""

from __future__ import annotations

import multiprocessing as mp
import threading

from pmm.records import NewEvent
from pmm.storage.postgres import PostgresEventStore

PROCESSES = 4
CONNECTIONS = 2
APPENDS = 60


def _writer(url: str, worker: int) -> int:
    """One process: CONNECTIONS threads, each with its own connection, appending."""
    done = [0] * CONNECTIONS

    def run(slot: int) -> None:
        with PostgresEventStore(url, pool_size=1) as store:
            for n in range(APPENDS):
                if n % 10 == 0:  # a batch now and then: all of it or none of it
                    store.append_many(
                        [NewEvent("event", f"w{worker}c{slot} batch {n} {i}") for i in range(3)]
                    )
                    done[slot] += 3
                else:
                    store.append("prompt", f"w{worker}c{slot} n{n}", session_id=f"w{worker}")
                    done[slot] += 1

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done)


def test_four_processes_with_two_connections_each_keep_one_chain(pg_url: str) -> None:
    PostgresEventStore(pg_url).close()  # migrate once up front
    with mp.get_context("spawn").Pool(PROCESSES) as pool:
        acknowledged = sum(pool.starmap(_writer, [(pg_url, w) for w in range(PROCESSES)]))
    with PostgresEventStore(pg_url) as store:
        assert store.count() == acknowledged == PROCESSES * CONNECTIONS * (APPENDS + 12)
        report = store.verify()
        assert report.ok, report
        assert store.event_ids() == list(range(1, acknowledged + 1))


def _open(url: str) -> list[int]:
    with PostgresEventStore(url) as store:
        return store.applied_migrations


def test_concurrent_first_opens_apply_each_migration_once(pg_url: str) -> None:
    with mp.get_context("spawn").Pool(4) as pool:
        applied = pool.map(_open, [pg_url] * 4)
    flat = [v for versions in applied for v in versions]
    assert sorted(flat) == sorted(set(flat)) and flat, applied
