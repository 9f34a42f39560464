"""Bytes on disk per turn: PMM raw only, compressed, with digests, compacted, beside
SQLChatMessageHistory; and keyword recall@10 before and after compaction.

    python bench/storage.py                  # 2,000 turns (1,000 exchanges)
    python bench/storage.py --turns 10000 --seed 3
    python bench/storage.py --dbstat         # + where each file's bytes go (SQLite dbstat)
    python bench/storage.py --quick          # 400 turns, recall on 1 conversation
    python bench/storage.py --recall-conversations 0   # skip the recall part
    python bench/storage.py --json docs/benchmarks/data/storage-bytes.json  # + figures as JSON

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
"""

from __future__ import annotations

import random
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import Bench  # noqa: E402

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
    args = bench.parse(argv)
    if args.quick:
        args.turns, args.recall_conversations = 400, 1
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
    bench.finish(
        {
            "corpus": f"{turns:,} turns, {text / turns:,.0f} B of raw text per turn (seed "
            f"{args.seed}); half short questions, half ~1,500-character replies; each file "
            "vacuumed",
            "bytes_per_turn": {JSON_LABELS.get(k, k): round(v / turns) for k, v in sizes.items()},
        }
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
