"""save_context / load_memory_variables latency with 100,000 events already in the file.

    python bench/memory.py                 # 100,000 events in 1,000 sessions, 300 rounds
    python bench/memory.py --events 20000 --rounds 100
    python bench/memory.py --json docs/benchmarks/data/memory-100000.json   # + JSON
    python bench/memory.py --quick         # 2,000 events in 20 sessions, 30 rounds
    python bench/memory.py --middleware    # PMMMiddleware's hooks instead (below), 200 rounds

Prints p50/p95/p99 per call for PersistentMindMemory (summaries off, the default; with and
without the "Relevant memories" search, with that search through SQLite FTS5 as before the
in-memory session ranker, pmm/recall/session_index.py, and with that ranker brought up to date at
the next read instead of at the write, as before: the write pays for the index upkeep the
read no longer does, and both calls are printed) and, in the same run on the same data,
for langchain-classic's ConversationBufferMemory over langchain-community's
SQLChatMessageHistory. Each PMM run gets its own session of the same size (they grow by
two events a round). Targets: save_context p50 <= 0.5 ms, load_memory_variables p50 <= 1 ms
with relevant memories on (issue 8).

``--middleware``: the cost of PMMMiddleware's hooks with N events in the file, beside baselines
(``--thread-events 20000``: one long session of 20,000 events; ``--quick``: 2,000 events, 20
rounds). The file gets N events (prompt/response turns of Zipf-distributed made-up words, 50 turns
per session, each with a LangChain message id in its meta, as the middleware stores them),
then one "bench" thread is driven for R rounds. Each round times, on that thread:

- before-model: ``PMMMiddleware.context_text`` (what ``wrap_model_call`` adds to the system
  message: key facts, recall of older turns for the new human message, earlier turns that
  are not in the thread's messages), with the thread's newest 20 messages in the state;
- after-agent: ``PMMMiddleware.remember_messages`` over those 20 messages plus the round's
  new human and AI message (the exactly-once check by message id, then two appends);
- baselines measured in the same run: ``Mind.context`` alone on the same thread (what the
  classic ``PersistentMindMemory`` loads), a whole agent step (``create_agent`` + a fake chat
  model, no memory), the same step with PMMMiddleware, and LangGraph's ``InMemoryStore``
  ``search`` (filter, limit 10) over N items.

Prints p50 and p90 in milliseconds.
"""

from __future__ import annotations

import bisect
import itertools
import json
import platform
import random
import sqlite3
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
from harness import Bench, percentile

ROOT = Path(__file__).resolve().parent.parent

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


def memory(args: Any) -> dict[str, Any]:
    """PersistentMindMemory beside ConversationBufferMemory (the module doc)."""

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
    return {
        "events": args.events,
        "sessions": args.sessions,
        "rounds": args.rounds,
        "figures": figures,
    }


WINDOW = 20
"""Messages the bench thread keeps in its state (what a trimmed thread would hold)."""


def fill_thread(path: Path, events: int, rng: random.Random, thread_events: int = 0) -> None:
    """``events`` turns, 50 per session, the first ``thread_events`` of them in "bench"."""
    from pmm.records import NewEvent
    from pmm.storage.sqlite import EventStore

    with EventStore(path) as store:
        batch: list[NewEvent] = []
        for i in range(events // 2):
            session = "bench" if i < thread_events // 2 else f"session-{i // 25}"
            for kind, role, n in (("prompt", "user", 18), ("response", "assistant", 30)):
                meta = {"message_id": str(uuid.UUID(int=rng.getrandbits(128))), "source": "agent"}
                batch.append(NewEvent(kind, sentence(rng, n), session, role, meta))
            if len(batch) >= 2000:
                store.append_many(batch)
                batch = []
        store.append_many(batch)
        store.sync_search_index()


def row(name: str, samples: list[float]) -> str:
    return (
        f"| {name} | {percentile(samples, 0.5) * 1e3:.2f} | {percentile(samples, 0.9) * 1e3:.2f} "
        f"| {len(samples)} |"
    )


def middleware(args: Any) -> dict[str, Any]:
    """PMMMiddleware's hooks beside their baselines (``--middleware``)."""
    sys.path.insert(0, str(ROOT / "tests" / "integrations"))

    from fake_models import fake_model  # tests/integrations/fake_models.py
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
    from langgraph.store.memory import InMemoryStore

    from pmm.integrations import PMMMiddleware

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        started = time.perf_counter()
        fill_thread(path, args.events, rng, args.thread_events)
        fill_s = time.perf_counter() - started

        middleware = PMMMiddleware(db_path=str(path), session_id="bench")
        state: list[AnyMessage] = []
        before: list[float] = []
        after: list[float] = []
        core: list[float] = []
        for _ in range(args.rounds):
            human = HumanMessage(sentence(rng), id=str(uuid.uuid4()))
            messages = [*state, human]
            timed(core, middleware.mind.context, "bench", str(human.text))
            timed(before, middleware.context_text, "bench", messages)
            messages.append(AIMessage(sentence(rng, 30), id=str(uuid.uuid4())))
            timed(after, middleware.remember_messages, "bench", messages)
            state = messages[-WINDOW:]
        events = middleware.mind.store.count()

        replies = [sentence(rng, 30) for _ in range(args.rounds * 2)]
        plain_agent = create_agent(fake_model(*replies[: args.rounds]), [])
        pmm_agent = create_agent(fake_model(*replies[args.rounds :]), [], middleware=[middleware])
        plain: list[float] = []
        with_pmm: list[float] = []
        for i in range(args.rounds):
            text = sentence(rng)
            config = {"configurable": {"thread_id": f"agent-{i % 10}"}}
            timed(plain, plain_agent.invoke, {"messages": [HumanMessage(text)]}, config)
            timed(with_pmm, pmm_agent.invoke, {"messages": [HumanMessage(text)]}, config)
        middleware.close()

    store = InMemoryStore()
    for i in range(args.events):
        store.put(("users", f"u{i % 1000}"), f"k{i}", {"text": sentence(rng, 8), "n": i % 7})
    in_memory: list[float] = []
    for _ in range(args.rounds):
        timed(in_memory, lambda: store.search(("users", "u1"), filter={"n": 3}, limit=10))

    print(
        f"# PMMMiddleware hooks: {events:,} events in the file (filled in {fill_s:.1f} s), "
        f"{args.rounds} rounds, {args.thread_events:,} of them in the bench thread's session "
        f"before the rounds, thread state {WINDOW} messages; {platform.processor() or '?'}, "
        f"Python {platform.python_version()}"
    )
    print("| step | p50 ms | p90 ms | n |")
    print("|---|---|---|---|")
    print(row("before-model (context_text)", before))
    print(row("after-agent (remember_messages)", after))
    print(row("baseline: Mind.context alone (the classic memory's load)", core))
    print(row("baseline: agent step, no memory (fake model)", plain))
    print(row("agent step with PMMMiddleware (fake model)", with_pmm))
    print(row(f"baseline: InMemoryStore.search, {args.events:,} items", in_memory))
    steps = {"before_model": before, "after_agent": after, "mind_context": core}
    steps |= {"agent_plain": plain, "agent_with_pmm": with_pmm, "in_memory_store": in_memory}
    return {"events": events, "p50_ms": {k: percentile(v, 0.5) * 1e3 for k, v in steps.items()}}


def main(argv: list[str] | None = None) -> None:
    bench = Bench("memory", __doc__, seed=0)
    parser = bench.parser
    parser.add_argument("--middleware", action="store_true", help="PMMMiddleware's hooks")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, help="300 (200 with --middleware)")
    parser.add_argument("--max-tokens", type=int, default=2000)
    parser.add_argument(
        "--thread-events",
        type=int,
        default=0,
        help="with --middleware: events already in the bench thread's session (its length "
        "drives the exactly-once check)",
    )
    args = bench.parse(argv)
    args.rounds = args.rounds or (200 if args.middleware else 300)
    if args.quick:
        args.events, args.sessions, args.rounds = 2000, 20, 20 if args.middleware else 30
    bench.finish(middleware(args) if args.middleware else memory(args))


if __name__ == "__main__":
    main()
