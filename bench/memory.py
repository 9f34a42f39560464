"""save_context / load_memory_variables latency with 100,000 events already in the file.

    python bench/memory.py                 # 100,000 events in 1,000 sessions, 300 rounds
    python bench/memory.py --events 20000 --rounds 100
    python bench/memory.py --json docs/benchmarks/data/memory-100000.json   # + JSON
    python bench/memory.py --quick         # 2,000 events in 20 sessions, 30 rounds

Prints p50/p95/p99 per call for PersistentMindMemory (summaries off, the default; with and
without the "Relevant memories" search, with that search through SQLite FTS5 as before the
in-memory session ranker, pmm/recall/session_index.py, and with that ranker brought up to date at
the next read instead of at the write, as before: the write pays for the index upkeep the
read no longer does, and both calls are printed) and, in the same run on the same data,
for langchain-classic's ConversationBufferMemory over langchain-community's
SQLChatMessageHistory. Each PMM run gets its own session of the same size (they grow by
two events a round). Targets: save_context p50 <= 0.5 ms, load_memory_variables p50 <= 1 ms
with relevant memories on (issue 8).
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
import sqlite3
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
from harness import Bench

warnings.filterwarnings("ignore")

SYLLABLES = "ka lo mi ra ten sor vel dan pri mo lu shi ber gan tor el an is or um".split()


class Vocabulary:
    """20,000 made-up words drawn with Zipf's law (exponent 1.07), like words in real chat:
    a few in most turns, a long tail of rare ones. Deterministic for a given seed."""

    def __init__(self, size: int = 20_000, seed: int = 0) -> None:
        rng = random.Random(seed)
        words: dict[str, None] = {}
        while len(words) < size:
            words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
        self.words = list(words)
        self.cumulative = list(itertools.accumulate(1 / (r + 1) ** 1.07 for r in range(size)))

    def sentence(self, rng: random.Random, n: int = 18) -> str:
        total = self.cumulative[-1]
        picks = (self.words[bisect.bisect(self.cumulative, rng.random() * total)] for _ in range(n))
        return " ".join(picks).capitalize() + "."


VOCABULARY = Vocabulary()


def sentence(rng: random.Random, n: int = 18) -> str:
    return VOCABULARY.sentence(rng, n)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(samples: list[float], fn: Callable[..., Any], *args: Any) -> Any:
    start = time.perf_counter()
    result = fn(*args)
    samples.append(time.perf_counter() - start)
    return result


def fill_pmm(path: Path, events: int, sessions: int, rng: random.Random) -> None:
    from pmm.records import NewEvent
    from pmm.storage.sqlite import EventStore

    with EventStore(path) as store:
        batch: list[NewEvent] = []
        for i in range(events // 2):
            session = f"session-{i % sessions}"
            batch.append(NewEvent("prompt", sentence(rng), session, "user"))
            batch.append(NewEvent("response", sentence(rng, 30), session, "assistant"))
            if len(batch) >= 2000:
                store.append_many(batch)
                batch = []
        store.append_many(batch)
        store.sync_search_index()


def fill_sql_history(path: Path, events: int, sessions: int, rng: random.Random) -> str:
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_core.messages import AIMessage, HumanMessage, message_to_dict

    url = f"sqlite:///{path}"
    SQLChatMessageHistory(session_id="setup", connection=url).clear()  # creates the table
    rows = []
    for i in range(events // 2):
        session = f"session-{i % sessions}"
        rows.append((session, json.dumps(message_to_dict(HumanMessage(sentence(rng))))))
        rows.append((session, json.dumps(message_to_dict(AIMessage(sentence(rng, 30))))))
    with sqlite3.connect(path) as conn:
        conn.executemany("INSERT INTO message_store(session_id, message) VALUES (?, ?)", rows)
    return url


def run_rounds(memory: Any, rounds: int, rng: random.Random) -> dict[str, list[float]]:
    saves: list[float] = []
    loads: list[float] = []
    for _ in range(rounds):
        user, reply = sentence(rng), sentence(rng, 30)
        timed(loads, memory.load_memory_variables, {"input": user})
        timed(saves, memory.save_context, {"input": user}, {"output": reply})
    return {"save_context": saves, "load_memory_variables": loads}


def main(argv: list[str] | None = None) -> None:
    bench = Bench("memory", __doc__)
    parser = bench.parser
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--max-tokens", type=int, default=2000)
    args = bench.parse(argv)
    if args.quick:
        args.events, args.sessions, args.rounds = 2000, 20, 30

    from langchain_classic.memory import ConversationBufferMemory
    from langchain_community.chat_message_histories import SQLChatMessageHistory

    from pmm import PersistentMindMemory

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        fill_pmm(folder / "pmm.db", args.events, args.sessions, random.Random(1))
        url = fill_sql_history(folder / "baseline.db", args.events, args.sessions, random.Random(1))
        print(
            f"filled {args.events:,} events in {args.sessions:,} sessions per store "
            f"({time.perf_counter() - started:.1f}s)"
        )
        session = "session-7"

        runs: dict[str, dict[str, list[float]]] = {}
        for label, extra, own in (
            ("PMM", {}, "session-7"),
            ("PMM, index upkeep at read", {}, "session-10"),
            ("PMM, FTS5 session search", {}, "session-8"),
            ("PMM, PMM_RECALL_K=0", {"recall_k": 0}, "session-9"),
        ):
            pmm_memory = PersistentMindMemory(
                db_path=str(folder / "pmm.db"),
                session_id=own,
                max_token_limit=args.max_tokens,
                **extra,
            )
            if "FTS5" in label:  # the baseline: every keyword ranker asks SQLite
                pmm_memory.pmm._get_recaller().session_ranker = None
            if "at read" in label:  # as before: writes leave the session ranker stale
                pmm_memory.pmm._contexts.appended = lambda events: None  # type: ignore[method-assign]
            pmm_memory.load_memory_variables({"input": "warm up"})
            runs[label] = run_rounds(pmm_memory, args.rounds, random.Random(2))
            counter = pmm_memory.token_counter
            pmm_memory.close()

        baseline_memory = ConversationBufferMemory(
            chat_memory=SQLChatMessageHistory(session_id=session, connection=url)
        )
        baseline_memory.load_memory_variables({"input": "warm up"})
        base = run_rounds(baseline_memory, args.rounds, random.Random(2))

    print(
        f"\n{args.rounds} rounds on one session of ~{args.events // args.sessions} events; "
        f"PMM budget {args.max_tokens} tokens ({counter})\n"
    )
    print(f"{'memory':<26}{'call':<24}{'p50':>10}{'p95':>11}{'p99':>11}")
    figures: dict[str, dict[str, dict[str, float]]] = {}
    targets = {"save_context": 0.5, "load_memory_variables": 1.0}
    runs["ConversationBufferMemory"] = base
    for label, samples in runs.items():
        for call in ("save_context", "load_memory_variables"):
            p50, p95, p99 = (percentile(samples[call], q) * 1e3 for q in (0.5, 0.95, 0.99))
            figures.setdefault(label, {})[call] = {"p50_ms": p50, "p95_ms": p95, "p99_ms": p99}
            verdict = ""
            if label.startswith("PMM"):
                verdict = f"  target p50 <= {targets[call]} ms: "
                verdict += "PASS" if p50 <= targets[call] else "MISS"
            print(f"{label:<26}{call:<24}{p50:>8.3f}ms{p95:>9.3f}ms{p99:>9.3f}ms{verdict}")
    print(
        "\nPMM_RECALL_K=0 leaves out the 'Relevant memories' search of the session's older"
        " turns;\nthe buffer memory returns the whole session, unbudgeted."
    )
    bench.finish(
        {
            "events": args.events,
            "sessions": args.sessions,
            "rounds": args.rounds,
            "figures": figures,
        }
    )


if __name__ == "__main__":
    main()
