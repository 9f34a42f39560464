"""Cost of PMMMiddleware's hooks with 100,000 events in the file, beside baselines.

    python bench/middleware.py                    # 100,000 events, 200 rounds
    python bench/middleware.py --events 20000 --rounds 50
    python bench/middleware.py --thread-events 20000   # one long session of 20,000 events
    python bench/middleware.py --quick            # 2,000 events, 20 rounds

The file gets N events (prompt/response turns of Zipf-distributed made-up words, 50 turns
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

import platform
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Bench
from memory import percentile, sentence  # bench/memory.py: the Zipf vocabulary

from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

WINDOW = 20
"""Messages the bench thread keeps in its state (what a trimmed thread would hold)."""


def fill(path: Path, events: int, rng: random.Random, thread_events: int = 0) -> None:
    """``events`` turns, 50 per session, the first ``thread_events`` of them in "bench"."""
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


def timed(samples: list[float], fn: Callable[..., Any], *args: Any) -> Any:
    start = time.perf_counter()
    result = fn(*args)
    samples.append((time.perf_counter() - start) * 1000)
    return result


def row(name: str, samples: list[float]) -> str:
    return (
        f"| {name} | {percentile(samples, 0.5):.2f} | {percentile(samples, 0.9):.2f} "
        f"| {len(samples)} |"
    )


def main(argv: list[str] | None = None) -> None:
    bench = Bench("middleware", __doc__, seed=0)
    parser = bench.parser
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument(
        "--thread-events",
        type=int,
        default=0,
        help="events already in the bench thread's session (its length drives the "
        "exactly-once check)",
    )
    args = bench.parse(argv)
    if args.quick:
        args.events, args.rounds = 2000, 20

    from fake_models import fake_model  # tests/integrations/fake_models.py
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
    from langgraph.store.memory import InMemoryStore

    from pmm.integrations import PMMMiddleware

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        started = time.perf_counter()
        fill(path, args.events, rng, args.thread_events)
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
    bench.finish({"events": events, "p50_ms": {k: percentile(v, 0.5) for k, v in steps.items()}})


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integrations"))
    main()
