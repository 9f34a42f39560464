"""Many writers, one chain: processes, threads, racing migrations and a SIGKILLed writer."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from store_helpers import (
    N_MIGRATIONS,
    REPO_ROOT,
    WRITER_SCRIPT,
    append_worker,
    open_worker,
)

from pmm.storage.sqlite import EventStore

CTX = multiprocessing.get_context("spawn")


def test_four_processes_append_to_one_file(tmp_path: Path):
    db = str(tmp_path / "pmm.db")
    EventStore(db).close()  # created up front; the racing-open case has its own test
    workers, per_worker = 4, 500
    with CTX.Pool(workers) as pool:
        results = pool.starmap(append_worker, [(db, w, per_worker) for w in range(workers)])
    all_ids = sorted(i for ids in results for i in ids)
    assert all_ids == list(range(1, workers * per_worker + 1))
    for ids in results:
        assert ids == sorted(ids) and len(ids) == per_worker
    with EventStore(db) as store:
        assert store.count() == 2000
        assert [e.id for e in store.iter_events()] == list(range(1, 2001))
        for w in range(workers):
            mine = store.events(session_id=f"w{w}")
            assert [e.content for e in mine] == [f"w{w}-{i}" for i in range(per_worker)]
        report = store.verify()
    assert report.ok, report
    assert report.rows == 2000 and report.head_id == 2000


def test_eight_threads_share_one_store(tmp_path: Path):
    threads, per_thread = 8, 200
    with EventStore(tmp_path / "pmm.db") as store:
        start = threading.Barrier(threads)

        def work(t: int) -> list[int]:
            start.wait()
            return [
                store.append("event", f"t{t}-{i}", session_id=f"t{t}").id for i in range(per_thread)
            ]

        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(work, range(threads)))
        assert sorted(i for ids in results for i in ids) == list(range(1, 1601))
        assert store.count() == threads * per_thread
        for t in range(threads):
            assert [e.content for e in store.events(session_id=f"t{t}")] == [
                f"t{t}-{i}" for i in range(per_thread)
            ]
        report = store.verify()
    assert report.ok and report.rows == 1600, report


def test_threads_reading_while_others_write(tmp_path: Path):
    with EventStore(tmp_path / "pmm.db") as store:
        errors: list[BaseException] = []
        done = threading.Event()

        def reader() -> None:
            try:
                while not done.is_set():
                    head = store.head()
                    if head is not None:
                        assert store.get(head.id) == head
                        assert store.count() >= head.id
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        readers = [threading.Thread(target=reader) for _ in range(2)]
        for r in readers:
            r.start()
        try:
            with ThreadPoolExecutor(4) as pool:
                list(
                    pool.map(
                        lambda t: [store.append("event", f"{t}") for _ in range(100)], range(4)
                    )
                )
        finally:
            done.set()
            for r in readers:
                r.join()
        assert errors == []
        assert store.verify().ok and store.count() == 400


def test_processes_opening_a_new_file_apply_each_migration_once(tmp_path: Path):
    """Four processes open the same brand-new file at once, 40 times over (one file each
    round): every open succeeds and each migration is applied by exactly one of them."""
    openers, rounds = 4, 40
    paths = [str(tmp_path / f"new-{r}.db") for r in range(rounds)]
    barrier = CTX.Barrier(openers)
    results = CTX.Queue()
    procs = [
        CTX.Process(target=open_worker, args=(paths, barrier, results)) for _ in range(openers)
    ]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    for r, path in enumerate(paths):
        applied = [outcome[r] for outcome in outcomes]
        assert all(isinstance(a, list) for a in applied), (path, applied)  # nobody failed
        flat = sorted(v for versions in applied for v in versions)
        assert flat == list(range(1, N_MIGRATIONS + 1)), (path, applied)  # each exactly once
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == N_MIGRATIONS
        assert conn.execute("PRAGMA user_version").fetchone()[0] == N_MIGRATIONS
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()


def test_sigkilled_writer_loses_nothing_acknowledged(tmp_path: Path):
    db = tmp_path / "pmm.db"
    EventStore(db).close()
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    acknowledged: list[int] = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            acknowledged.append(int(line))
            if len(acknowledged) >= 300:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        # lines printed before the kill landed (read through the same buffered reader)
        rest = proc.stdout.read()
        proc.wait(timeout=30)
        errors = proc.stderr.read() if proc.stderr else ""
    acknowledged += [int(x) for x in rest.split()]
    assert proc.returncode == -signal.SIGKILL, errors
    assert len(acknowledged) >= 300, errors
    assert acknowledged == list(range(1, len(acknowledged) + 1))
    with EventStore(db) as store:
        stored = store.get_many(acknowledged)
        assert sorted(stored) == acknowledged
        for i in acknowledged:
            assert stored[i].content == f"payload {i} " + "x" * (i % 50)
        assert store.count() >= len(acknowledged)  # at most one unacknowledged extra
        assert store.count() <= len(acknowledged) + 1
        report = store.verify()
        assert report.ok, report
        # the log carries on after the crash
        ev = store.append("event", "after the crash")
        assert ev.prev_hash == report.head
        assert store.verify().ok
