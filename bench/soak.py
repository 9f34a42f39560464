"""Soak test: many threads in several processes share one SQLite file for a bounded time.

    python bench/soak.py                         # 4 processes x 8 threads, 30 s
    python bench/soak.py --seconds 5 --processes 2 --threads 2 --json

Each process opens one :class:`pmm.Mind` (summaries on, deferred, heuristic summarizer) and
runs ``--threads`` threads; each thread drives its own LangChain ``PersistentMindMemory``
session through a fixed rotation until the time is up: ``save_context`` (one acknowledged
turn pair), ``load_memory_variables``, ``recall`` (keyword, all sessions) and, every
``--dream-every`` rounds, ``dream``. Every call is timed and every failure kept.

Afterwards, in the parent: the turn rows in the file must equal 2 x the acknowledged
``save_context`` calls, no call may have failed, and the hash chain must verify. It prints
operations per second per kind and exits 1 if any of those checks fails.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

KINDS = ("save_context", "load_memory_variables", "recall", "dream")
TOPICS = ("garden", "invoice", "passport", "train", "recipe", "server", "violin", "harbour")


def _thread_loop(
    mind: Any, memory: Any, session: str, deadline: float, dream_every: int, out: dict
) -> None:
    ops: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    errors: list[str] = []
    acked = 0
    n = 0
    while time.monotonic() < deadline:
        topic = TOPICS[n % len(TOPICS)]
        steps: list[tuple[str, Any]] = [
            (
                "save_context",
                partial(
                    memory.save_context,
                    {"input": f"{session} turn {n}: tell me about the {topic} " * 4},
                    {"output": f"here is what I know about the {topic}, round {n}. " * 4},
                ),
            ),
            ("load_memory_variables", partial(memory.load_memory_variables, {"input": topic})),
            ("recall", partial(mind.recall, topic, 5, mode="keyword")),
        ]
        if dream_every and n % dream_every == dream_every - 1:
            steps.append(("dream", partial(mind.dream, limit=32)))
        for kind, call in steps:
            started = time.perf_counter()
            try:
                call()
            except Exception as exc:  # counted and reported: the soak fails on any
                errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                continue
            seconds[kind] += time.perf_counter() - started
            ops[kind] += 1
            if kind == "save_context":
                acked += 1
        n += 1
    out.update(ops=dict(ops), seconds=dict(seconds), errors=errors, acked=acked)


def _process(db: str, index: int, threads: int, dream_every: int, sync: tuple, queue) -> None:
    from pmm import Mind
    from pmm.integrations.memory import PersistentMindMemory  # imported before the clock starts

    mind = Mind(
        db,
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        dream_on_close=False,
    )
    sessions = [f"p{index}-t{t}" for t in range(threads)]
    memories = [PersistentMindMemory(mind=mind, session_id=s) for s in sessions]
    memories[0].load_memory_variables({"input": "warm up"})
    ready, go, start_at = sync
    ready.put(index)
    go.wait(timeout=300)  # every process starts the clock together
    deadline = time.monotonic() + (start_at.value - time.time())
    results: list[dict] = [{} for _ in range(threads)]
    workers = [
        threading.Thread(
            target=_thread_loop,
            args=(mind, memories[t], sessions[t], deadline, dream_every, results[t]),
        )
        for t in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    mind.close()
    queue.put(results)


def run_soak(
    db: str, *, seconds: float, processes: int, threads: int, dream_every: int = 10
) -> dict[str, Any]:
    """Run the soak on ``db`` and return counts, rates, errors and the checks."""
    from pmm import Mind

    Mind(db).close()  # create and migrate once, before the processes race
    ctx = mp.get_context("spawn")
    queue, ready, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    end_at = ctx.Value("d", 0.0)  # wall-clock end, set once every process is ready
    procs = [
        ctx.Process(target=_process, args=(db, i, threads, dream_every, (ready, go, end_at), queue))
        for i in range(processes)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=300)
    end_at.value = time.time() + seconds
    go.set()
    results = [r for _ in procs for r in queue.get(timeout=seconds + 300)]
    for p in procs:
        p.join(timeout=60)
    ops: Counter[str] = Counter()
    busy: Counter[str] = Counter()
    errors: list[str] = []
    acked = 0
    for r in results:
        ops.update(r.get("ops", {}))
        busy.update(r.get("seconds", {}))
        errors += r.get("errors", [])
        acked += r.get("acked", 0)
    with Mind(db) as mind:
        turns = mind.store.count(kinds=("prompt", "response"))
        report = mind.verify()
    exit_codes = [p.exitcode for p in procs]
    return {
        "seconds": seconds,
        "processes": processes,
        "threads_per_process": threads,
        "ops": {k: ops[k] for k in KINDS},
        "ops_per_second": {k: round(ops[k] / seconds, 1) for k in KINDS},
        "mean_ms": {k: round(1000 * busy[k] / ops[k], 2) if ops[k] else None for k in KINDS},
        "acknowledged_turns": 2 * acked,
        "turn_rows": turns,
        "rows_match": turns == 2 * acked,
        "chain_ok": report.ok,
        "chain_rows": report.rows,
        "errors": errors[:20],
        "error_count": len(errors),
        "process_exit_codes": exit_codes,
        "ok": turns == 2 * acked and report.ok and not errors and exit_codes == [0] * processes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8, help="threads per process")
    parser.add_argument("--dream-every", type=int, default=10, help="rounds between dreams")
    parser.add_argument("--db", help="file to use (default: a fresh temporary file)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pmm-soak-") as folder:
        db = args.db or os.path.join(folder, "soak.db")
        result = run_soak(
            db,
            seconds=args.seconds,
            processes=args.processes,
            threads=args.threads,
            dream_every=args.dream_every,
        )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"soak: {args.processes} processes x {args.threads} threads, {args.seconds:g} s, "
            "one SQLite file"
        )
        for kind in KINDS:
            print(
                f"  {kind:22} {result['ops'][kind]:>7,} ops  "
                f"{result['ops_per_second'][kind]:>8,.1f} ops/s  "
                f"mean {result['mean_ms'][kind]} ms"
            )
        print(
            f"acknowledged turns {result['acknowledged_turns']:,}, rows {result['turn_rows']:,}"
            f" ({'match' if result['rows_match'] else 'MISMATCH'}); chain "
            f"{'verifies' if result['chain_ok'] else 'BROKEN'} ({result['chain_rows']:,} rows);"
            f" errors {result['error_count']}"
        )
        for error in result["errors"]:
            print("  error:", error)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
