"""Bytes on disk per turn: PMM raw only, compressed, with digests, compacted, beside
SQLChatMessageHistory; and keyword recall@10 before and after compaction.

    python bench/storage.py                  # 2,000 turns (1,000 exchanges)
    python bench/storage.py --turns 10000 --seed 3
    python bench/storage.py --dbstat         # + where each file's bytes go (SQLite dbstat)
    python bench/storage.py --quick          # 400 turns, recall on 1 conversation
    python bench/storage.py --recall-conversations 0   # skip the recall part
    python bench/storage.py --json docs/benchmarks/data/storage-bytes.json  # + figures as JSON
    python bench/storage.py --append         # append and verify speed instead (below)
    python bench/storage.py --append --events 5000 --quick

The corpus is a chat of short user turns and long (~1,500-character) assistant turns,
generated from a fixed seed. Each configuration writes the same turns to a fresh file, which
is then checkpointed and vacuumed (as is the baseline), so the figures are the bytes the data
needs, not free pages:

- ``pmm raw only``: summaries off (the default): events + hash chain + the full-text
  indexes (since migrations/0011 the turn index keeps no token positions and the window
  index holds each term of a window at most twice, without stopwords);
- ``pmm compressed``: the raw-only file after ``pmm compress --after 0`` (every text kept
  zstd-compressed with a dictionary trained on the file's own text; lossless);
- ``pmm + digests``: heuristic summaries and keywords on every turn (``pmm dream``);
- ``pmm compacted``: the same file after ``pmm compact --older-than 0s`` (raw text dropped,
  summaries, keywords and hashes kept);
- ``SQLChatMessageHistory``: langchain_community's SQL history, one row per message.

Targets (issue 11): compressed <= 0.6x and compacted <= 0.3x the summaries-off file.

Recall after compaction: each conversation of bench/recall.py's ``chat`` and ``paraphrase``
datasets is ingested with
heuristic digests (as bench/recall.py does), and every question is asked in keyword mode
across the conversation's sessions (k = 10), before and after ``compact --older-than 0s``
of the whole file; printed: recall@10 (share of the answer turns in the top 10) of both.
Target: compacted within 2 points of uncompacted.

``--append``: append and verify speed of PMM's event log, against LangChain's
SQLChatMessageHistory (``--quick``: 1,000 events, baseline 5 s at most). It appends
``--events`` events (20,000), one transaction each, to a fresh temporary file with
``EventStore`` and reports the per-event latency (p50/p99, microseconds) and events per
second. Then makes the same number of ``SQLChatMessageHistory.add_message`` calls on another
fresh SQLite file (for at most ``--baseline-seconds``: that baseline commits with SQLite's
default rollback journal and can be slow on some disks, so it may stop early, and says so),
prints the ratio of the two throughputs, and times ``verify()`` over the PMM file (rows per
second).

The same appends run again on another fresh file with ``synchronous="full"``
(``PMM_SQLITE_SYNCHRONOUS=full``: every commit waits for the -wal file to reach the disk, so
an acknowledged append survives a power cut or an OS crash, not only a killed process) for
at most ``--full-events`` events, and its p50/p99 and throughput print beside the default
``normal`` mode's. The default run's events carry no user (the chain without a user);
``--user-events`` more (5000) go to a fresh file as one user's events (her own chain: her
keyed user digest in every hash), with their p50 and verify rate.

Targets: append p50 <= 100 us (issue 11's goal: 30 us); >= 2x SQLChatMessageHistory's
throughput; verify >= 100,000 rows/s. This is a report: it always exits 0.
"""

from __future__ import annotations

import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import Bench, nearest_rank  # noqa: E402

TOPICS = [
    "the database migration",
    "the marathon training plan",
    "the kitchen renovation",
    "the quarterly sales report",
    "the trip to Kyoto",
    "the new espresso machine",
    "the garden irrigation system",
    "the job offer in Berlin",
]
SENTENCES = [
    "First, check that {t} has a clear owner and a written goal for the next two weeks.",
    "A common mistake with {t} is to change too many things at once and lose track of why.",
    "If the budget for {t} is tight, start with the cheapest option and measure the result.",
    "Keep a short log of what you tried for {t}, what happened, and what you would change.",
    "Most people underestimate how long {t} takes, so add a buffer of about thirty percent.",
    "Ask someone who has done {t} before; ten minutes of advice can save you a weekend.",
    "When {t} stalls, split the next step into something you can finish in one afternoon.",
    "Write down the risks of {t} and decide in advance what you will do if one happens.",
    "Review {t} at the end of each week and drop anything that no longer helps the goal.",
    "Remember that {t} will look different in a month, so avoid decisions you cannot undo.",
]


def corpus(turns: int, seed: int) -> list[tuple[str, str]]:
    """``turns // 2`` exchanges of a short question and a ~1,500-character answer."""
    rng = random.Random(seed)
    pairs = []
    for i in range(turns // 2):
        topic = rng.choice(TOPICS)
        question = (
            f"Question {i}: what should I do next about {topic}, given {rng.randint(2, 99)} days?"
        )
        answer = " ".join(s.format(t=topic) for s in rng.sample(SENTENCES, 10))
        answer += f" (That was reply number {i}, with {rng.randint(100, 999)} notes.)"
        while len(answer) < 1500:
            answer += " " + rng.choice(SENTENCES).format(t=topic)
        pairs.append((question, answer))
    return pairs


def settle(path: Path) -> int:
    """Checkpoint and vacuum ``path``; returns the bytes of the file (and any -wal left)."""
    conn = sqlite3.connect(path)
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(
        Path(str(path) + s).stat().st_size for s in ("", "-wal") if Path(str(path) + s).exists()
    )


def dbstat(path: Path, top: int = 8) -> list[tuple[str, int]]:
    """The ``top`` largest tables and indexes of ``path`` by bytes (SQLite's dbstat)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT ?", (top,)
        ).fetchall()
    finally:
        conn.close()


def pmm_files(
    pairs: list[tuple[str, str]], folder: Path, stats: dict[str, list[tuple[str, int]]] | None
) -> dict[str, int]:
    import shutil

    from pmm import Mind
    from pmm.storage.sqlite.compaction import compact

    sizes: dict[str, int] = {}
    raw = folder / "raw.db"
    with Mind(raw, enable_summary=False) as mind:
        for q, a in pairs:
            mind.remember_turn(q, a, session_id="bench")
        mind.store.sync_search_index()
        assert mind.verify().ok
    sizes["pmm raw only"] = settle(raw)
    packed = folder / "compressed.db"
    shutil.copy(raw, packed)
    with Mind(packed, enable_summary=False) as mind:
        done = mind.compress(after="0")
        assert done.compressed >= len(pairs), done  # short questions stay plain
        assert mind.verify().ok
    sizes["pmm compressed"] = settle(packed)
    digested = folder / "digests.db"
    with Mind(digested, enable_summary=True, summary_mode="deferred", summarizer="heuristic") as m:
        for q, a in pairs:
            m.remember_turn(q, a, session_id="bench")
        m.dream()
        assert m.verify().ok
    sizes["pmm + digests"] = settle(digested)
    with Mind(digested, enable_summary=True, summary_mode="deferred") as m:
        report = compact(m.store, older_than="0s")
        assert m.verify().ok and len(report.compacted) == 2 * len(pairs)
    sizes["pmm compacted"] = settle(digested)
    if stats is not None:
        for name, path in [("pmm raw only", raw), ("pmm compressed", packed)]:
            stats[name] = dbstat(path)
        stats["pmm compacted"] = dbstat(digested)
    return sizes


def compacted_recall(dataset: str, conversations: int) -> tuple[float, float, int, float]:
    """Keyword recall@10 on a bench/recall.py dataset before and after compacting every
    turn; returns (before, after, questions, mean characters per turn)."""
    from recall import ingest, load_dataset, make_digester, resolve_data

    from pmm.recall.recaller import Recaller
    from pmm.storage.sqlite import EventStore
    from pmm.storage.sqlite.compaction import compact

    data = load_dataset(resolve_data(dataset), conversations)
    digester = make_digester()
    scores: dict[str, list[float]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for conversation in data["conversations"]:
            questions = [q for q in data["questions"] if q["conversation"] == conversation["id"]]
            with EventStore(Path(tmp) / f"{conversation['id']}.db") as store:
                to_turn = ingest(store, conversation, digester)
                recaller = Recaller(store)
                for phase in ("before", "after"):
                    if phase == "after":
                        report = compact(store, older_than="0s")
                        assert report.compacted and store.verify().ok
                    for q in questions:
                        hits = recaller.recall(q["question"], 10, mode="keyword")
                        found = {to_turn.get(h.event.id) for h in hits[:10]}
                        answers = set(q["answer_ids"])
                        scores[phase].append(len(answers & found) / len(answers))
    count = len(scores["before"])
    lengths = [
        len(t["text"]) for c in data["conversations"] for s in c["sessions"] for t in s["turns"]
    ]
    mean = sum(lengths) / len(lengths)
    return sum(scores["before"]) / count, sum(scores["after"]) / count, count, mean


def operation_times(pairs: list[tuple[str, str]], folder: Path) -> list[tuple[str, float, str]]:
    """Seconds of forget (one event), backup, check, recover and compact on one file."""
    import time

    from pmm import Mind
    from pmm.storage.sqlite.backup import backup, check, recover
    from pmm.storage.sqlite.compaction import compact

    path = folder / "ops.db"
    with Mind(path, enable_summary=True, summary_mode="deferred", summarizer="heuristic") as m:
        for q, a in pairs:
            m.remember_turn(q, a, session_id="bench")
        m.dream()
        size = settle(path)
        rows: list[tuple[str, float, str]] = []
        started = time.perf_counter()
        report = m.forget(event_ids=[len(pairs)], reason="bench")
        rows.append(("forget 1 event", time.perf_counter() - started, f"{size:,} B file"))
        started = time.perf_counter()
        report = m.forget(match="reply number 1", reason="bench")
        rows.append(
            ("forget --match", time.perf_counter() - started, f"{len(report.erased)} events")
        )
    started = time.perf_counter()
    copy = backup(path, folder / "copy.db")
    rows.append(("backup (+ verify)", time.perf_counter() - started, f"{copy.bytes:,} B"))
    started = time.perf_counter()
    ok = check(path, full=True).ok
    rows.append(("check --full", time.perf_counter() - started, f"ok={ok}"))
    started = time.perf_counter()
    salvage = recover(path, folder / "salvaged.db")
    rows.append(("recover", time.perf_counter() - started, f"{salvage.salvaged:,} rows"))
    with Mind(path, enable_summary=True, summary_mode="deferred") as m:
        started = time.perf_counter()
        done = compact(m.store, older_than="0s")
        rows.append(("compact", time.perf_counter() - started, f"{len(done.compacted):,} turns"))
    return rows


def baseline_file(pairs: list[tuple[str, str]], folder: Path) -> int:
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_core.messages import AIMessage, HumanMessage

    path = folder / "sqlchat.db"
    history = SQLChatMessageHistory(session_id="bench", connection=f"sqlite:///{path}")
    messages = []
    for q, a in pairs:
        messages += [HumanMessage(q), AIMessage(a)]
    history.add_messages(messages)
    return settle(path)


JSON_LABELS = {
    "pmm raw only": "PMM, summaries off",
    "pmm compressed": "PMM compressed",
    "pmm + digests": "PMM with digests",
    "pmm compacted": "PMM compacted",
    "SQLChatMessageHistory": "SQLChatMessageHistory (baseline)",
}


def storage(args: Any) -> dict[str, Any]:
    """Bytes per turn of each configuration, recall after compaction, operation times."""
    pairs = corpus(args.turns, args.seed)
    turns = 2 * len(pairs)
    text = sum(len(q.encode()) + len(a.encode()) for q, a in pairs)
    with tempfile.TemporaryDirectory() as tmp:
        stats: dict[str, list[tuple[str, int]]] | None = {} if args.dbstat else None
        sizes = pmm_files(pairs, Path(tmp), stats)
        try:
            sizes["SQLChatMessageHistory"] = baseline_file(pairs, Path(tmp))
        except ImportError as exc:
            print(f"SQLChatMessageHistory unavailable: {exc}")
    raw_only = sizes["pmm raw only"]
    base = sizes.get("SQLChatMessageHistory")
    print(f"{turns:,} turns, {text / turns:,.0f} bytes of raw text per turn (seed {args.seed})")
    print(
        f"{'file':<24}{'bytes':>12}{'bytes/turn':>12}{'x raw text':>11}{'x raw-only':>11}"
        f"{'x SQLChat':>10}"
    )
    for name, size in sizes.items():
        print(
            f"{name:<24}{size:>12,}{size / turns:>12,.0f}{size / text:>11.2f}"
            f"{size / raw_only:>11.2f}" + (f"{size / base:>10.2f}" if base else "")
        )
    for name, target in [("pmm compressed", 0.6), ("pmm compacted", 0.3)]:
        ratio = sizes[name] / raw_only
        verdict = "met" if ratio <= target else "MISSED"
        print(f"target: {name} <= {target:.2f}x the raw-only file: {ratio:.2f}x, {verdict}")
    for name, rows in (stats or {}).items():
        print(f"\ndbstat {name}: " + ", ".join(f"{t} {b / turns:,.0f}" for t, b in rows))
    for dataset in ("chat", "paraphrase") if args.recall_conversations else ():
        before, after, count, chars = compacted_recall(dataset, args.recall_conversations)
        points = 100 * (before - after)
        print(
            f"keyword recall@10, {dataset} dataset ({count:,} questions, {chars:.0f} chars per "
            f"turn): uncompacted {before:.3f}, compacted {after:.3f} ({points:+.1f} points lost;"
            " target <= 2: " + ("met)" if points <= 2 else "MISSED)")
        )
    with tempfile.TemporaryDirectory() as tmp:
        print(f"\n{'operation':<22}{'seconds':>9}  note")
        for name, seconds, note in operation_times(pairs, Path(tmp)):
            print(f"{name:<22}{seconds:>9.3f}  {note}")
    return {
        "corpus": f"{turns:,} turns, {text / turns:,.0f} B of raw text per turn (seed "
        f"{args.seed}); half short questions, half ~1,500-character replies; each file "
        "vacuumed",
        "bytes_per_turn": {JSON_LABELS.get(k, k): round(v / turns) for k, v in sizes.items()},
    }


# -- append and verify (--append) ----------------------------------------------------

TARGET_P50_US = 100.0
GOAL_P50_US = 30.0
"""Issue 11's goal for the append p50 (lean rows: binary digests, no window-text copy)."""
TARGET_RATIO = 2.0
TARGET_VERIFY_ROWS_S = 100_000.0


def message(i: int) -> str:
    return f"message {i}: I moved to Lisbon last spring and the trams are lovely " + "x" * (i % 64)


def bench_pmm(
    folder: Path, n: int, synchronous: str = "normal", user: str | None = None
) -> dict[str, Any]:
    path = folder / f"pmm-{synchronous}{'-user' if user else ''}.db"
    latencies: list[float] = []
    clock = time.perf_counter_ns
    from pmm.records import NewEvent
    from pmm.storage.sqlite import EventStore

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
        "p50_us": nearest_rank(latencies, 50),
        "p99_us": nearest_rank(latencies, 99),
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
        "p50_us": nearest_rank(latencies, 50),
        "p99_us": nearest_rank(latencies, 99),
        "journal_mode": journal,
    }


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def append(args: Any) -> dict[str, Any]:
    """Append and verify speed beside SQLChatMessageHistory (``--append``)."""
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
    Bench.table(rows[0], rows[1:])
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
    return {
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


def main(argv: list[str] | None = None) -> int:
    bench = Bench("storage", __doc__)
    parser = bench.parser
    parser.add_argument("--turns", type=int, default=2000, help="turns to store (2000)")
    parser.add_argument("--dbstat", action="store_true", help="print where the bytes go")
    parser.add_argument(
        "--recall-conversations",
        type=int,
        default=12,
        help="conversations per dataset for recall after compaction (12 = all; 0 = skip)",
    )
    parser.add_argument("--append", action="store_true", help="append and verify speed")
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
        args.turns, args.recall_conversations = 400, 1
        args.events, args.full_events, args.user_events = 1000, 300, 300
        args.baseline_seconds = min(args.baseline_seconds, 5.0)
    bench.finish(append(args) if args.append else storage(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
