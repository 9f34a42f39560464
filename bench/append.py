"""Append and verify speed of PMM's event log, against LangChain's SQLChatMessageHistory.

    python bench/append.py                    # 20,000 events
    python bench/append.py --events 5000 --json /tmp/append.json
    python bench/append.py --quick            # 1,000 events, baseline 5 s at most

Appends N events, one transaction each, to a fresh temporary file with ``EventStore`` and
reports the per-event latency (p50/p99, microseconds) and events per second. Then makes the
same number of ``SQLChatMessageHistory.add_message`` calls on another fresh SQLite file (for
at most ``--baseline-seconds``: that baseline commits with SQLite's default rollback journal
and can be slow on some disks, so it may stop early, and says so), prints the ratio of the two
throughputs, and times ``verify()`` over the PMM file (rows per second).

The same appends run again on another fresh file with ``synchronous="full"``
(``PMM_SQLITE_SYNCHRONOUS=full``: every commit waits for the -wal file to reach the disk,
so an acknowledged append survives a power cut or an OS crash, not only a killed process)
for at most ``--full-events`` events, and its p50/p99 and throughput print beside the
default ``normal`` mode's. The default run's events carry no user (the chain without a
user); ``--user-events`` more (5000) go to a fresh file as one user's events (her own
chain: her keyed user digest in every hash), with their p50 and verify rate.

Targets: append p50 <= 100 us (issue 11's goal: 30 us); >= 2x SQLChatMessageHistory's
throughput; verify >= 100,000 rows/s. This is a report: it always exits 0.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Bench

from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

TARGET_P50_US = 100.0
GOAL_P50_US = 30.0
"""Issue 11's goal for the append p50 (lean rows: binary digests, no window-text copy)."""
TARGET_RATIO = 2.0
TARGET_VERIFY_ROWS_S = 100_000.0


def percentile(sorted_values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank."""
    if not sorted_values:
        return float("nan")
    rank = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[rank]


def message(i: int) -> str:
    return f"message {i}: I moved to Lisbon last spring and the trams are lovely " + "x" * (i % 64)


def bench_pmm(
    folder: Path, n: int, synchronous: str = "normal", user: str | None = None
) -> dict[str, Any]:
    path = folder / f"pmm-{synchronous}{'-user' if user else ''}.db"
    latencies: list[float] = []
    clock = time.perf_counter_ns
    with EventStore(path, synchronous=synchronous) as store:
        started = time.perf_counter()
        for i in range(n):
            t0 = clock()
            store.append_many(
                [
                    NewEvent(
                        "prompt" if i % 2 == 0 else "response",
                        message(i),
                        "bench",
                        "user" if i % 2 == 0 else "assistant",
                        user_id=user,
                    )
                ]
            )
            latencies.append((clock() - t0) / 1000)
        seconds = time.perf_counter() - started
        verify_runs = []
        report = None
        for _ in range(3):
            report = store.verify()
            verify_runs.append(report.seconds)
    latencies.sort()
    assert report is not None
    verify_s = statistics.median(verify_runs)
    return {
        "events": n,
        "seconds": seconds,
        "events_per_s": n / seconds,
        "p50_us": percentile(latencies, 50),
        "p99_us": percentile(latencies, 99),
        "max_us": latencies[-1] if latencies else float("nan"),
        "verify_ok": report.ok,
        "verify_rows": report.rows,
        "verify_s": verify_s,
        "verify_rows_per_s": report.rows / verify_s if verify_s else float("inf"),
        "bytes": sum(os.path.getsize(f) for f in (str(path), f"{path}-wal") if os.path.exists(f)),
        "synchronous": synchronous,
    }


def bench_langchain(folder: Path, n: int, budget_s: float) -> dict[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langchain_community.chat_message_histories import SQLChatMessageHistory
            from langchain_core.messages import HumanMessage
    except ImportError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    path = folder / "langchain.db"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            history = SQLChatMessageHistory(session_id="bench", connection=f"sqlite:///{path}")
            history.add_message(HumanMessage(content="warm-up"))  # creates the table
    except Exception as exc:  # e.g. a missing optional dependency of SQLAlchemy
        return {"error": f"{type(exc).__name__}: {exc}"}
    latencies: list[float] = []
    clock = time.perf_counter_ns
    started = time.perf_counter()
    deadline = started + budget_s
    done = 0
    for i in range(n):
        t0 = clock()
        history.add_message(HumanMessage(content=message(i)))
        latencies.append((clock() - t0) / 1000)
        done += 1
        if time.perf_counter() > deadline:
            break
    seconds = time.perf_counter() - started
    conn = sqlite3.connect(path)
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    latencies.sort()
    return {
        "events": done,
        "requested": n,
        "stopped_early": done < n,
        "seconds": seconds,
        "events_per_s": done / seconds,
        "p50_us": percentile(latencies, 50),
        "p99_us": percentile(latencies, 99),
        "journal_mode": journal,
    }


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: list[str] | None = None) -> int:
    bench = Bench("append", __doc__)
    parser = bench.parser
    parser.add_argument("--events", type=int, default=20_000, help="events to append (20000)")
    parser.add_argument(
        "--baseline-seconds",
        type=float,
        default=40.0,
        help="time budget for the SQLChatMessageHistory baseline (40 s)",
    )
    parser.add_argument(
        "--full-events",
        type=int,
        default=5_000,
        help="events appended with synchronous=full beside the default (5000; 0 = skip)",
    )
    parser.add_argument(
        "--user-events",
        type=int,
        default=5_000,
        help="events appended for one user (her own chain) beside the default (5000; 0 = skip)",
    )
    args = bench.parse(argv)
    if args.quick:
        args.events, args.full_events, args.user_events = 1000, 300, 300
        args.baseline_seconds = min(args.baseline_seconds, 5.0)
    n = max(1, args.events)
    n_full = min(n, max(0, args.full_events))
    n_user = min(n, max(0, args.user_events))

    with tempfile.TemporaryDirectory(prefix="pmm-bench-") as tmp:
        folder = Path(tmp)
        print(f"PMM EventStore: appending {n:,} events, one transaction each ...", flush=True)
        pmm = bench_pmm(folder, n)
        full: dict[str, Any] | None = None
        if n_full:
            print(f"PMM EventStore, synchronous=full: appending {n_full:,} events ...", flush=True)
            full = bench_pmm(folder, n_full, "full")
        mine: dict[str, Any] | None = None
        if n_user:
            print(f"PMM EventStore, one user's chain: appending {n_user:,} events ...", flush=True)
            mine = bench_pmm(folder, n_user, user="alice@example.com")
        print(f"SQLChatMessageHistory: up to {n:,} add_message calls ...", flush=True)
        base = bench_langchain(folder, n, args.baseline_seconds)

    ratio = pmm["events_per_s"] / base["events_per_s"] if base.get("events_per_s") else None
    rows: list[tuple[str, str, str, str]] = [
        ("metric", "value", "target", "result"),
        (
            "PMM append p50",
            f"{pmm['p50_us']:,.1f} us",
            f"<= {TARGET_P50_US:.0f} us",
            verdict(pmm["p50_us"] <= TARGET_P50_US),
        ),
        (
            "PMM append p50 (issue 11 goal)",
            f"{pmm['p50_us']:,.1f} us",
            f"<= {GOAL_P50_US:.0f} us",
            verdict(pmm["p50_us"] <= GOAL_P50_US),
        ),
        ("PMM append p99", f"{pmm['p99_us']:,.1f} us", "", ""),
        ("PMM append throughput", f"{pmm['events_per_s']:,.0f} events/s", "", ""),
    ]
    if full is not None:
        rows += [
            ("PMM append p50, synchronous=full", f"{full['p50_us']:,.1f} us", "", ""),
            ("PMM append p99, synchronous=full", f"{full['p99_us']:,.1f} us", "", ""),
            (
                "PMM throughput, synchronous=full",
                f"{full['events_per_s']:,.0f} events/s",
                "",
                f"{full['events_per_s'] / pmm['events_per_s']:.2f}x normal",
            ),
        ]
    if mine is not None:
        rows += [
            ("PMM append p50, events of one user", f"{mine['p50_us']:,.1f} us", "", ""),
            (
                "PMM verify, events of one user",
                f"{mine['verify_rows_per_s']:,.0f} rows/s",
                "",
                "ok" if mine["verify_ok"] else "FAILED",
            ),
        ]
    if "error" in base:
        rows.append(("SQLChatMessageHistory", "unavailable", "", ""))
        rows.append(("throughput ratio", "n/a", f">= {TARGET_RATIO:.0f}x", "MISS"))
    else:
        rows += [
            ("SQLChatMessageHistory p50", f"{base['p50_us']:,.1f} us", "", ""),
            ("SQLChatMessageHistory p99", f"{base['p99_us']:,.1f} us", "", ""),
            (
                "SQLChatMessageHistory throughput",
                f"{base['events_per_s']:,.0f} events/s",
                "",
                "",
            ),
            (
                "throughput ratio (PMM / LC)",
                f"{ratio:,.1f}x",
                f">= {TARGET_RATIO:.0f}x",
                verdict(ratio is not None and ratio >= TARGET_RATIO),
            ),
        ]
    rows.append(
        (
            f"verify() over {pmm['verify_rows']:,} rows",
            f"{pmm['verify_rows_per_s']:,.0f} rows/s",
            f">= {TARGET_VERIFY_ROWS_S:,.0f} rows/s",
            verdict(pmm["verify_ok"] and pmm["verify_rows_per_s"] >= TARGET_VERIFY_ROWS_S),
        )
    )
    bench.table(rows[0], rows[1:])
    print()
    print(
        f"PMM: {pmm['events']:,} events in {pmm['seconds']:.2f} s, {pmm['bytes']:,} bytes on "
        f"disk; verify ok={pmm['verify_ok']} in {pmm['verify_s'] * 1000:.1f} ms (median of 3)"
    )
    if full is not None:
        print(
            f"PMM synchronous=full: {full['events']:,} events in {full['seconds']:.2f} s "
            "(normal: survives a killed process; full: also a power cut or an OS crash)"
        )
    if "error" in base:
        print(f"SQLChatMessageHistory could not run: {base['error']}")
    else:
        note = (
            f" (stopped at the {args.baseline_seconds:.0f} s budget: fewer than the "
            f"{n:,} asked; the rate is per message, so the ratio still holds)"
            if base["stopped_early"]
            else ""
        )
        print(
            f"SQLChatMessageHistory: {base['events']:,} messages in {base['seconds']:.2f} s, "
            f"journal_mode={base['journal_mode']}{note}"
        )
    bench.finish(
        {
            "pmm": pmm,
            "pmm_synchronous_full": full,
            "pmm_one_user": mine,
            "sql_chat_message_history": base,
            "ratio": ratio,
            "targets": {
                "append_p50_us": TARGET_P50_US,
                "ratio": TARGET_RATIO,
                "verify_rows_per_s": TARGET_VERIFY_ROWS_S,
            },
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
