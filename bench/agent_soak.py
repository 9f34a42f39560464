"""Agent soak: create_agent + PMMMiddleware under load, bad messages and cancellations.

    python bench/agent_soak.py                       # 2 processes x 8 threads, 60 s, SQLite
                                                     # and PostgreSQL (when its binaries exist)
    python bench/agent_soak.py --seconds 10 --backend sqlite --json /tmp/soak.json
    python bench/agent_soak.py --quick       # 4 s, 1 process x 2 threads, SQLite
    python bench/agent_soak.py --seconds 0 --long-thread 1000   # only the long-thread figure

Each of ``--processes`` processes opens one ``PMMMiddleware`` on the shared log (one SQLite
file, or one database of a throwaway PostgreSQL cluster started from
tests/postgres/pg_cluster.py) and runs ``--threads`` threads; each thread drives
``create_agent`` graphs (a scripted fake chat model and a ``dump_table`` tool, an
``InMemorySaver`` checkpointer) through conversations of 5 to 20 ``ainvoke`` rounds on one
thread id each. Rounds are mostly ordinary messages, mixed with bad ones (``--bad`` of
them: a 2 MB message, an empty one, NUL, a lone surrogate, a 3.6 MB tool result) and
random cancellations (``--cancel``: the run's task is cancelled after 0-20 ms). Every
conversation ends with an ordinary round that must succeed; its thread's final messages
are recorded, then the thread is deleted from the checkpointer (which keeps every
checkpoint: big messages would otherwise fill the memory).

Every round that is not cancelled is also sent, in the same worker thread, to the same
agent without the middleware (its own checkpointer, so its threads hold the same
messages), and the ordinary rounds are timed on both: the p50/p99 of one agent step with
and without PMM come from the same run, under the same load.

Checks, afterwards: every message of every recorded thread is stored exactly once in its
session (by LangChain message id; a split message counts once; the empty messages are left
out by design), no message id is stored twice, no conversation's final round failed, and
the hash chain verifies. Messages a cancelled run stored after its checkpoint was lost are
counted apart ("stored from cancelled runs"): they are in the log once but in no thread.

``--long-thread N``: one thread of N messages (seeded into the checkpointer, and into the
log by one warm-up run), then the latency of the next ``invoke`` with the middleware against
the same agent without it (``--long-rounds`` each, alternating). Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "storage"))
sys.path.insert(0, str(ROOT / "bench"))

from harness import Bench, nearest_rank  # noqa: E402

BAD_KINDS = ("oversized", "empty", "nul", "surrogate", "huge_tool")
TOOL_PREFIX = "Read the table"
BIG_MESSAGE = "2MB paste " * 200_000  # 2,000,000 bytes
HUGE_TOOL_RESULT = "row;" * 900_000  # 3,600,000 bytes


def build_agents(middleware: Any) -> tuple[Any, Any]:
    """The agent with the middleware and the same agent without it."""
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    class ScriptedModel(BaseChatModel):
        """Asks for the table when told to, answers a tool result, else acknowledges."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
            return self

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            last = messages[-1]
            if isinstance(last, HumanMessage) and last.text.startswith(TOOL_PREFIX):
                call = {"name": "dump_table", "args": {"name": "sales"}, "id": uuid.uuid4().hex}
                reply = AIMessage(content="", tool_calls=[call])
            elif isinstance(last, ToolMessage):
                reply = AIMessage(content=f"The table has {len(last.text):,} characters.")
            else:
                reply = AIMessage(content=f"Noted; {len(messages)} messages so far.")
            return ChatResult(generations=[ChatGeneration(message=reply)])

    @tool
    def dump_table(name: str) -> str:
        """Return a whole table as text."""
        return HUGE_TOOL_RESULT

    with_pmm = create_agent(
        ScriptedModel(), [dump_table], middleware=[middleware], checkpointer=InMemorySaver()
    )
    plain = create_agent(ScriptedModel(), [dump_table], checkpointer=InMemorySaver())
    return with_pmm, plain


def bad_text(kind: str) -> str:
    return {
        "oversized": BIG_MESSAGE,
        "empty": "   ",
        "nul": "a NUL \x00 in the middle",
        "surrogate": "a lone surrogate \ud800 here",
        "huge_tool": f"{TOOL_PREFIX} sales, please",
    }[kind]


async def _conversations(
    worker: str,
    with_pmm: Any,
    plain: Any,
    deadline: float,
    rng: random.Random,
    bad: float,
    cancel: float,
    out: dict[str, Any],
) -> None:
    """One worker thread's conversations until ``deadline``."""
    threads: dict[str, list[str]] = {}
    empties: list[str] = []
    step_pmm: list[float] = []
    step_plain: list[float] = []
    errors: list[str] = []
    counts: Counter[str] = Counter()
    failing: list[str] = []
    n = 0
    while time.monotonic() < deadline:
        thread_id = f"{worker}-c{n}"
        n += 1
        config = {"configurable": {"thread_id": thread_id}}
        base_config = {"configurable": {"thread_id": thread_id + "-plain"}}
        rounds = rng.randint(5, 20)
        for r in range(rounds + 1):
            final = r == rounds or time.monotonic() >= deadline
            text = f"{thread_id} round {r}: I keep notes about topic {rng.randint(1, 500)}."
            kind = "ok"
            if not final and rng.random() < bad:
                kind = rng.choice(BAD_KINDS)
                text = bad_text(kind)
            counts[kind] += 1
            payload = {"messages": [{"role": "user", "content": text}]}
            if not final and rng.random() < cancel:
                counts["cancel_tried"] += 1
                task = asyncio.ensure_future(with_pmm.ainvoke(payload, config))
                await asyncio.sleep(rng.uniform(0, 0.02))
                task.cancel()
                try:
                    await task
                    counts["cancel_too_late"] += 1
                except asyncio.CancelledError:
                    counts["cancelled"] += 1
                except Exception as exc:  # a failure of a cancelled run is still a failure
                    errors.append(f"{thread_id} (cancelled run): {type(exc).__name__}: {exc}")
                continue
            started = time.perf_counter()
            try:
                await with_pmm.ainvoke(payload, config)
            except Exception as exc:  # counted; the soak fails on any
                errors.append(f"{thread_id} round {r} ({kind}): {type(exc).__name__}: {exc}"[:300])
                if final:
                    failing.append(thread_id)
                continue
            pmm_seconds = time.perf_counter() - started
            started = time.perf_counter()
            try:  # the same message, so that both threads hold the same state
                await plain.ainvoke(payload, base_config)
            except Exception as exc:  # a failure without PMM is a finding too
                errors.append(f"{thread_id} round {r} without PMM: {type(exc).__name__}: {exc}")
                continue
            if kind == "ok":  # an ordinary step, timed with and without the middleware
                step_pmm.append(pmm_seconds)
                step_plain.append(time.perf_counter() - started)
            if final:
                break
        state = await with_pmm.aget_state(config)
        messages = state.values.get("messages", [])
        threads[thread_id] = [str(m.id) for m in messages if m.type in ("human", "ai", "tool")]
        empties += [str(m.id) for m in messages if m.type == "human" and not m.text.strip()]
        with_pmm.checkpointer.delete_thread(thread_id)
        plain.checkpointer.delete_thread(thread_id + "-plain")
    out.update(
        threads=threads,
        empties=empties,
        step_pmm=step_pmm,
        step_plain=step_plain,
        errors=errors,
        counts=dict(counts),
        failing=failing,
    )


def _process(target: str, index: int, threads: int, args: dict[str, Any], sync: tuple) -> None:
    import logging

    from pmm.integrations import PMMMiddleware

    logging.getLogger("pmm").setLevel(logging.ERROR)  # the bad messages' warnings: expected
    middleware = PMMMiddleware(target)
    agents = [build_agents(middleware) for _ in range(threads)]
    ready, go, start_at, queue = sync
    ready.put(index)
    go.wait(timeout=300)
    deadline = time.monotonic() + (start_at.value - time.time())
    results: list[dict[str, Any]] = [{} for _ in range(threads)]

    def run(t: int) -> None:
        rng = random.Random(f"{args['seed']}-{index}-{t}")
        with_pmm, plain = agents[t]
        asyncio.run(
            _conversations(
                f"p{index}t{t}",
                with_pmm,
                plain,
                deadline,
                rng,
                args["bad"],
                args["cancel"],
                results[t],
            )
        )

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    middleware.close()
    queue.put(results)


def check_log(target: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """Compare the log with the recorded threads (see the module docstring)."""
    from pmm import Mind

    with Mind(target) as mind:
        events = mind.store.events(kinds=("prompt", "response"))
        report = mind.verify()
    stored: dict[str, Counter[str]] = {}
    for event in events:
        message_id = event.meta.get("message_id")
        if message_id is None or event.meta.get("part", 1) != 1:
            continue
        stored.setdefault(str(event.session_id), Counter())[str(message_id)] += 1
    expected = missing = twice = orphans = 0
    for result in results:
        empties = set(result.get("empties", []))
        for thread_id, ids in result.get("threads", {}).items():
            have = stored.get(thread_id, Counter())
            wanted = [i for i in ids if i not in empties]
            expected += len(wanted)
            missing += sum(1 for i in wanted if have[i] == 0)
            twice += sum(1 for n in have.values() if n > 1)
            orphans += len(set(have) - set(ids))
            misplaced = [i for i in empties if have[i]]
            missing += len(misplaced)  # an empty message must not be stored
    return {
        "expected_messages": expected,
        "missing": missing,
        "stored_twice": twice,
        "stored_from_cancelled_runs": orphans,
        "chain_ok": report.ok,
        "chain_rows": report.rows,
    }


def run_soak(target: str, *, seconds: float, processes: int, threads: int, **args: Any) -> dict:
    from pmm import Mind

    Mind(target).close()  # create and migrate once, before the processes race
    ctx = mp.get_context("spawn")
    queue, ready, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    end_at = ctx.Value("d", 0.0)
    procs = [
        ctx.Process(target=_process, args=(target, i, threads, args, (ready, go, end_at, queue)))
        for i in range(processes)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=600)
    end_at.value = time.time() + seconds
    go.set()
    results = [r for _ in procs for r in queue.get(timeout=seconds + 600)]
    for p in procs:
        p.join(timeout=120)
    counts: Counter[str] = Counter()
    step_pmm: list[float] = []
    step_plain: list[float] = []
    errors: list[str] = []
    failing: list[str] = []
    for r in results:
        counts.update(r.get("counts", {}))
        step_pmm += r.get("step_pmm", [])
        step_plain += r.get("step_plain", [])
        errors += r.get("errors", [])
        failing += r.get("failing", [])
    checked = check_log(target, results)
    exit_codes = [p.exitcode for p in procs]
    ok = (
        not errors
        and not failing
        and checked["missing"] == 0
        and checked["stored_twice"] == 0
        and checked["chain_ok"]
        and exit_codes == [0] * processes
    )
    return {
        "seconds": seconds,
        "processes": processes,
        "threads_per_process": threads,
        "conversations": sum(len(r.get("threads", {})) for r in results),
        "rounds": dict(counts),
        "step_ms_with_pmm": _summary(step_pmm),
        "step_ms_without": _summary(step_plain),
        **checked,
        "errors": errors[:20],
        "error_count": len(errors),
        "threads_left_failing": failing,
        "process_exit_codes": exit_codes,
        "ok": ok,
    }


def _summary(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50": round(1000 * nearest_rank(samples, 50), 2),
        "p99": round(1000 * nearest_rank(samples, 99), 2),
    }


def long_thread(target: str, messages: int, rounds: int) -> dict[str, Any]:
    """The next invoke on a thread of ``messages`` messages, with and without PMM."""
    from langchain_core.messages import AIMessage, HumanMessage

    from pmm.integrations import PMMMiddleware

    middleware = PMMMiddleware(target)
    with_pmm, plain = build_agents(middleware)
    seeded = []
    for i in range(messages // 2):
        seeded.append(HumanMessage(f"long thread turn {i}: notes on topic {i % 97}"))
        seeded.append(AIMessage(f"Noted turn {i}."))
    config = {"configurable": {"thread_id": "long"}}
    for agent in (with_pmm, plain):
        agent.update_state(config, {"messages": seeded}, as_node="model")
    payload = {"messages": [{"role": "user", "content": "What did I say about topic 5?"}]}
    with_pmm.invoke(payload, config)  # the warm-up stores the seeded messages in the log
    plain.invoke(payload, config)
    stored = middleware.mind.store.count(session_id="long")
    times: dict[str, list[float]] = {"with_pmm": [], "without": []}
    for _ in range(rounds):
        for name, agent in (("with_pmm", with_pmm), ("without", plain)):
            started = time.perf_counter()
            agent.invoke(payload, config)
            times[name].append(time.perf_counter() - started)
    middleware.close()
    return {
        "messages": messages,
        "stored_events": stored,
        "next_invoke_ms_with_pmm": _summary(times["with_pmm"]),
        "next_invoke_ms_without": _summary(times["without"]),
    }


def main(argv: list[str] | None = None) -> int:
    bench = Bench("agent_soak", __doc__, seed=22)
    parser = bench.parser
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8, help="threads per process")
    parser.add_argument("--bad", type=float, default=0.05, help="share of bad messages")
    parser.add_argument("--cancel", type=float, default=0.05, help="share of cancelled runs")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--long-thread", type=int, default=1000, help="messages (0 = skip)")
    parser.add_argument("--long-rounds", type=int, default=20)
    args = bench.parse(argv)
    if args.quick:
        args.seconds, args.processes, args.threads, args.backend = 4.0, 1, 2, "sqlite"
        args.long_thread, args.long_rounds = 40, 2
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pmm-agent-soak-") as folder:
        targets: list[tuple[str, str]] = []
        if args.backend in ("sqlite", "both"):
            targets.append(("sqlite", os.path.join(folder, "soak.db")))
        cluster = None
        if args.backend in ("postgres", "both"):
            from pg_cluster import PostgresCluster, find_bindir

            if find_bindir() is None:
                results["postgres"] = {"skipped": "PostgreSQL binaries not found (PMM_PG_BIN)"}
            else:
                cluster = PostgresCluster.start()
                targets.append(("postgres", cluster.url))
        try:
            for name, target in targets:
                if args.seconds > 0:
                    results[name] = run_soak(
                        target,
                        seconds=args.seconds,
                        processes=args.processes,
                        threads=args.threads,
                        bad=args.bad,
                        cancel=args.cancel,
                        seed=args.seed,
                    )
            if args.long_thread:
                results["long_thread"] = long_thread(
                    os.path.join(folder, "long.db"), args.long_thread, args.long_rounds
                )
        finally:
            if cluster is not None:
                cluster.stop()
    ok = all(r.get("ok", True) for r in results.values())
    _print(results, args)
    bench.finish({**results, "ok": ok})
    return 0 if ok else 1


def _print(results: dict[str, Any], args: argparse.Namespace) -> None:
    for name, r in results.items():
        if name == "long_thread":
            w, wo = r["next_invoke_ms_with_pmm"], r["next_invoke_ms_without"]
            print(
                f"long thread ({r['messages']:,} messages, {r['stored_events']:,} events in "
                f"the log): next invoke p50 {w['p50']} ms with PMM vs {wo['p50']} ms without "
                f"(p99 {w['p99']} vs {wo['p99']}; {w['n']} rounds each)"
            )
            continue
        if "skipped" in r:
            print(f"{name}: skipped ({r['skipped']})")
            continue
        w, wo = r["step_ms_with_pmm"], r["step_ms_without"]
        print(
            f"{name}: {r['processes']} processes x {r['threads_per_process']} threads, "
            f"{r['seconds']:g} s, {r['conversations']:,} conversations; rounds {r['rounds']}"
        )
        print(
            f"  one agent step: p50 {w['p50']} ms / p99 {w['p99']} ms with PMM ({w['n']:,}), "
            f"p50 {wo['p50']} ms / p99 {wo['p99']} ms without ({wo['n']:,})"
        )
        print(
            f"  messages expected {r['expected_messages']:,}: missing {r['missing']}, stored "
            f"twice {r['stored_twice']}, stored from cancelled runs "
            f"{r['stored_from_cancelled_runs']}; chain "
            f"{'verifies' if r['chain_ok'] else 'BROKEN'} ({r['chain_rows']:,} rows); errors "
            f"{r['error_count']}; threads left failing {len(r['threads_left_failing'])}; "
            f"{'OK' if r['ok'] else 'FAILED'}"
        )
        for error in r["errors"]:
            print("  error:", error)


if __name__ == "__main__":
    sys.exit(main())
