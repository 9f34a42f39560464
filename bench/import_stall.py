"""How long a rebased import on PostgreSQL stalls another user's appends (issue 21).

    python bench/import_stall.py                  # throwaway cluster, fsync on, 10,000 events
    python bench/import_stall.py --events 50000

Starts a durable throwaway cluster (tests/storage/pg_cluster.py), writes ``--events`` turns
of alice into a source database and exports them (her events and chain secret), then, for
each mode, into a fresh target database holding 100 of bob's turns: a thread appends bob's
turns one at a time (``PostgresEventStore.append_many``) for a second, during alice's
rebased import, and for a second after. Modes, in the same run:

- ``exclusive``: the baseline, the lock the import took before this change: its append
  also takes ``APPEND_LOCK`` exclusively (emulated by a store subclass, from the start of
  its append to its commit), so bob's appends wait for it;
- ``pmm``: PMM's import (an append's locks; bob's appends share none of them).

Prints per mode the import's time and bob's appends outside and during the import (count,
p50, longest), and the ratio of the longest waits.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "storage"))

import psycopg  # noqa: E402

from pmm.records import Event, NewEvent  # noqa: E402
from pmm.storage.postgres import PostgresEventStore  # noqa: E402
from pmm.storage.postgres.connection import APPEND_LOCK  # noqa: E402


class Exclusive(PostgresEventStore):
    """The baseline: the import's append holds ``APPEND_LOCK`` exclusively until commit."""

    def _append_locked(
        self, conn: Any, checked: Any, unique_meta: Any = None, seen: Any = None, ids: Any = None
    ) -> list[Event]:
        if ids is not None:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
        return super()._append_locked(conn, checked, unique_meta, seen, ids)


def _database(url: str, name: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def _turn(i: int, session: str, user: str) -> NewEvent:
    role = "user" if i % 2 else "assistant"
    kind = "prompt" if i % 2 else "response"
    return NewEvent(kind, f"turn {i} about Oslo and the fjords", session, role, None, None, user)


def _run(url: str, store_class: type[PostgresEventStore], events: list[Event], keys: Any) -> float:
    """One mode on a fresh target; returns the longest of bob's appends during the import."""
    with PostgresEventStore(url) as target:
        target.append_many([_turn(i, "bob-s", "bob") for i in range(100)])
    waits: list[tuple[float, float]] = []  # (start, seconds) of each of bob's appends
    stop = threading.Event()

    def bob() -> None:
        with PostgresEventStore(url, pool_size=1) as store:
            i = 0
            while not stop.is_set():
                start = time.perf_counter()
                store.append_many([_turn(i, "bob-s", "bob")])
                waits.append((start, time.perf_counter() - start))
                i += 1

    thread = threading.Thread(target=bob)
    thread.start()
    time.sleep(1)
    with store_class(url) as store:
        began = time.perf_counter()
        report = store.import_events(events, keys=keys)
        ended = time.perf_counter()
    time.sleep(1)
    stop.set()
    thread.join()
    assert report.ok
    during = [s for t, s in waits if t + s > began and t < ended]
    outside = [s for t, s in waits if not (t + s > began and t < ended)]
    print(f"  import of {len(events)} events: {ended - began:.2f} s")
    for name, values in (("outside the import", outside), ("during the import", during)):
        print(
            f"  bob's appends {name}: {len(values)}, p50 {statistics.median(values) * 1e3:.1f}"
            f" ms, longest {max(values) * 1e3:.0f} ms"
        )
    return max(during)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args()
    from pg_cluster import PostgresCluster

    cluster = PostgresCluster.start(durable=True)
    try:
        with PostgresEventStore(_database(cluster.url, "src")) as source:
            for b in range(0, args.events, 200):
                turns = range(b, min(args.events, b + 200))
                source.append_many([_turn(i, f"alice-{i // 1000}", "alice") for i in turns])
            events, keys = source.events(user_id="alice"), source.chain_keys("alice")
        longest = {}
        for mode, store_class in (("exclusive", Exclusive), ("pmm", PostgresEventStore)):
            print(f"{mode}:")
            longest[mode] = _run(_database(cluster.url, f"dst_{mode}"), store_class, events, keys)
        ratio = longest["exclusive"] / longest["pmm"]
        print(f"bob's longest wait during the import: exclusive / pmm = {ratio:.1f}x")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
