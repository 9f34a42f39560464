"""Digest throughput: how many turns per second each backend digests.

    python bench/digest.py                    # heuristic + local with a tiny test BART
    python bench/digest.py --model PATH       # local with a real model folder (or hub id)
    python bench/digest.py --skip-local --turns 5000
    python bench/digest.py --quick            # 300 turns, 5 rounds, 8 local turns (tiny BART)

It also prints save_context p50/p99 per summary mode with the llm summarizer (ChatOpenAI
against a local fake OpenAI server that answers after --llm-delay seconds) beside
ConversationSummaryMemory with the same model, and the prompt tokens load_memory_variables
returns for a --conversation-turn chat beside ConversationBufferMemory.

The heuristic runs on realistic ~600-character chat turns in this one process (its target is
>= 2,000 turns/s on one core, to run inline on every turn). Without ``--model``, the local
figure comes from a tiny, randomly initialised BART built on the spot (1 layer, d_model 32):
it measures PMM's batching and tokenisation overhead, NOT the speed of DistilBART.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import Bench  # noqa: E402

PEOPLE = ["Ana", "Maria", "Jonas", "Priya", "Tomás", "Elena", "Henrik", "Okafor", "Wei", "Sam"]
PLACES = ["Lisbon", "Porto", "Oslo", "Berlin", "Munich", "Buenos Aires", "Nairobi", "Kyoto"]
THINGS = ["Kafka migration", "quarterly report", "marathon plan", "flat lease", "job offer"]
FILLER = [
    "Thanks so much for getting back to me so quickly, I really appreciate it.",
    "Anyway, I hope the weather is nice where you are, it has been raining here all week.",
    "Let me know what you think when you have a moment, there is no rush at all.",
    "Sorry for the long message, I just wanted to get all of this written down somewhere.",
]


@dataclass(frozen=True)
class Result:
    name: str
    turns: int
    """0 for a one-off cost such as loading a model."""
    seconds: float
    note: str = ""

    @property
    def rate(self) -> float:
        return self.turns / self.seconds if self.seconds else float("inf")

    def line(self) -> str:
        note = f"  ({self.note})" if self.note else ""
        if not self.turns:  # a one-off cost, not a rate
            return f"{self.name:<28} {self.seconds:>10.3f} s{note}"
        timing = f"[{self.turns} turns in {self.seconds:.3f} s]"
        return f"{self.name:<28} {self.rate:>10,.0f} turns/s  {timing}{note}"


def realistic_turns(count: int, *, seed: int = 0) -> tuple[list[str], list[str]]:
    """``count`` chat turns of about 600 characters (small talk around names, places,
    numbers, dates and preferences), and their roles, alternating user / assistant."""
    rng = random.Random(seed)
    texts: list[str] = []
    roles: list[str] = []
    for i in range(count):
        person, other = rng.sample(PEOPLE, 2)
        place = rng.choice(PLACES)
        thing = rng.choice(THINGS)
        day, hour, amount = rng.randint(1, 28), rng.randint(6, 21), rng.randint(20, 3000)
        if i % 2 == 0:
            body = (
                f"So, about the trip: my sister {person} lands in {place} at {hour}:15 on "
                f"Friday, and we booked a hotel for {amount} euros a night. She prefers window "
                "seats and vegetarian food, and she is allergic to shellfish, which matters for "
                f"dinner on Saturday. I also need to finish the {thing} before {day} May, "
                f"because my manager {other} wants {rng.randint(2, 9)} charts in it."
            )
        else:
            body = (
                f"Based on what you told me, the best option is to leave {place} at {hour}:40 "
                f"on the {day}th, which costs about {amount} euros in total. {person} could "
                f"meet you at the station, and I would ask {other} to review the {thing} "
                "before you go, since the deadline is close. Vegetarian places near the hotel "
                "are easy to find, and most of them mark shellfish clearly on the menu."
            )
        turn = f"{rng.choice(FILLER)} {body} {rng.choice(FILLER)}"
        while len(turn) < 560:
            turn += " " + rng.choice(FILLER)
        texts.append(turn)
        roles.append("user" if i % 2 == 0 else "assistant")
    return texts, roles


def timed(
    name: str,
    run: Callable[[], object],
    turns: int,
    note: str = "",
    clock: Callable[[], float] = time.perf_counter,
) -> Result:
    start = clock()
    run()
    return Result(name, turns, clock() - start, note)


def bench_heuristic(texts: Sequence[str], roles: Sequence[str], repeat: int = 3) -> list[Result]:
    """The best of ``repeat`` runs of HeuristicDigester over ``texts`` in this process, by
    CPU time (one core, whatever else the machine runs) and by wall time."""
    from pmm.digest import HeuristicDigester

    digester = HeuristicDigester()
    digester.digest_many(texts[:50], roles[:50])  # warm up
    size = sum(len(t) for t in texts) / max(1, len(texts))
    results = []
    for clock, label in ((time.process_time, "CPU time"), (time.perf_counter, "wall time")):
        runs = [
            timed("heuristic", lambda: digester.digest_many(texts, roles), len(texts), "", clock)
            for _ in range(repeat)
        ]
        best = min(runs, key=lambda r: r.seconds)
        note = f"{label}, one process, avg {size:.0f} chars/turn, best of {repeat}"
        results.append(Result(best.name, best.turns, best.seconds, note))
    return results


def build_tiny_model(folder: Path) -> Path:
    """The tiny random BART of the tests (tests/digest/tiny_bart.py), saved to ``folder``."""
    sys.path.insert(0, str(ROOT / "tests" / "digest"))
    from tiny_bart import build_tiny_bart

    return Path(build_tiny_bart(folder))


def bench_local(
    model: str,
    texts: Sequence[str],
    roles: Sequence[str],
    *,
    device: str = "auto",
    batch_size: int = 8,
    note: str = "",
) -> list[Result]:
    """Load time and throughput of LocalDigester(model) over ``texts``."""
    from pmm.digest.local import LocalDigester

    start = time.perf_counter()
    digester = LocalDigester(model, device=device, batch_size=batch_size)
    load = Result("local: load, once a process", 0, time.perf_counter() - start)
    digester.digest_many(texts[:batch_size], roles[:batch_size])  # warm up
    run = timed(
        f"local ({digester.device}, batch {batch_size})",
        lambda: digester.digest_many(texts, roles),
        len(texts),
        note,
    )
    return [load, run]


# -- save_context per mode, beside ConversationSummaryMemory ------------------------------


def _digest_reply(delay: float) -> Callable[[Any], Any]:
    """A fake OpenAI responder: a valid digest batch for as many turns as the prompt holds
    (or a one-line summary for ConversationSummaryMemory), after ``delay`` seconds."""
    import json
    import re

    from tests.fake_openai import Reply

    def respond(request: Any) -> Any:
        numbers = [int(n) for n in re.findall(r'"turn": (\d+)', request.text)]
        if numbers:
            digests = [
                {"turn": n, "summary": f"The user said thing {n}.", "keywords": ["thing"]}
                for n in range(1, max(numbers) + 1)
            ]
            return Reply(text=json.dumps({"digests": digests}), delay=delay)
        return Reply(text="The human and the AI talked about trips.", delay=delay)

    return respond


def bench_save_context(rounds: int, delay: float) -> list[str]:
    """save_context p50/p99 per PMM mode with the llm summarizer (ChatOpenAI against a local
    fake server that answers after ``delay`` s), beside ConversationSummaryMemory."""
    import warnings

    warnings.filterwarnings("ignore")
    from langchain_classic.memory import ConversationSummaryMemory
    from langchain_openai import ChatOpenAI

    from pmm import PersistentMindMemory
    from tests.fake_openai import FakeOpenAI

    texts, _ = realistic_turns(rounds * 2, seed=3)
    lines = [f"save_context with a {delay * 1000:.0f} ms LLM, {rounds} calls each:"]
    with FakeOpenAI(timeout=600) as server, tempfile.TemporaryDirectory() as folder:
        server.respond_with(_digest_reply(delay))
        llm = ChatOpenAI(
            base_url=server.base_url + "/v1", api_key="bench", model="gpt-4o-mini", max_retries=0
        )

        def run(memory: Any) -> list[float]:
            samples = []
            for i in range(rounds):
                start = time.perf_counter()
                memory.save_context({"input": texts[2 * i]}, {"output": texts[2 * i + 1]})
                samples.append(time.perf_counter() - start)
            return samples

        for mode in ("inline", "background", "deferred"):
            memory = PersistentMindMemory(
                db_path=str(Path(folder) / f"{mode}.db"),
                llm=llm,
                enable_summary=True,
                summary_mode=mode,
                summarizer="llm",
                flush_timeout=120,
            )
            samples = run(memory)
            memory.close()
            target = "" if mode == "inline" else "  (target p50 <= 0.5 ms)"
            lines.append(
                f"  PMM {mode:<11}{_p(samples, 0.5):>10.3f} ms p50"
                f"{_p(samples, 0.99):>10.3f} ms p99{target}"
            )
        baseline = run(ConversationSummaryMemory(llm=llm))
        lines.append(
            f"  ConversationSummaryMemory {_p(baseline, 0.5):>8.3f} ms p50"
            f"{_p(baseline, 0.99):>10.3f} ms p99"
        )
    return lines


def _p(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


# -- prompt size: PMM with summaries vs ConversationBufferMemory -----------------------


def bench_prompt_tokens(turns: int) -> list[str]:
    """Tokens that load_memory_variables returns for a ``turns``-turn conversation with long
    assistant turns: PMM with heuristic summaries (budget large enough to hold every turn,
    and the default 2,000) vs ConversationBufferMemory holding the same turns."""
    import warnings

    warnings.filterwarnings("ignore")
    from langchain_classic.memory import ConversationBufferMemory

    from pmm import PersistentMindMemory
    from pmm.context.tokens import get_token_counter

    count = get_token_counter().count
    texts, _ = realistic_turns(turns * 3 // 2, seed=5)
    users = texts[0:turns:2]
    answers = [f"{texts[i]} {texts[i + 1]}" for i in range(1, turns, 2)]
    buffer = ConversationBufferMemory()
    lines = [
        f"prompt tokens for {turns} turns (assistant turns ~1,200 chars), tokens by "
        f"{get_token_counter().name}:"
    ]
    with tempfile.TemporaryDirectory() as folder:
        results = {}
        for budget in (1_000_000, 2000):
            memory = PersistentMindMemory(
                db_path=str(Path(folder) / f"{budget}.db"),
                enable_summary=True,
                summary_mode="deferred",
                summarizer="heuristic",
                max_token_limit=budget,
            )
            for user, answer in zip(users, answers, strict=True):
                memory.save_context({"input": user}, {"output": answer})
            memory.pmm.dream()
            results[budget] = count(memory.load_memory_variables({})["history"])
            memory.close()
        for user, answer in zip(users, answers, strict=True):
            buffer.save_context({"input": user}, {"output": answer})
        full = count(buffer.load_memory_variables({})["history"])
    ratio = results[1_000_000] / full
    lines.append(f"  ConversationBufferMemory        {full:>8,} tokens")
    lines.append(
        f"  PMM, every turn (summaries)     {results[1_000_000]:>8,} tokens  "
        f"{ratio:.0%} of the buffer (target <= 35%: {'PASS' if ratio <= 0.35 else 'MISS'})"
    )
    lines.append(
        f"  PMM, default 2,000-token budget {results[2000]:>8,} tokens  "
        f"{results[2000] / full:.0%} of the buffer"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    bench = Bench("digest", __doc__)
    parser = bench.parser
    parser.add_argument("--turns", type=int, default=2000, help="turns for the heuristic")
    parser.add_argument("--local-turns", type=int, default=64, help="turns for the local model")
    parser.add_argument("--model", help="local seq2seq model folder or hub id (default: tiny)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--rounds", type=int, default=30, help="save_context calls per mode")
    parser.add_argument("--llm-delay", type=float, default=0.2, help="fake LLM latency, s")
    parser.add_argument("--conversation", type=int, default=200, help="turns for prompt size")
    args = bench.parse(argv)
    if args.quick:
        args.turns, args.local_turns, args.rounds, args.llm_delay = 300, 8, 5, 0.05
        args.conversation = 40
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    figures: dict[str, Any] = {}
    texts, roles = realistic_turns(args.turns)
    print(f"pmm digest bench: python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    results = bench_heuristic(texts, roles)
    for result in results:
        print(result.line())
    figures["heuristic"] = [vars(r) for r in results]
    for part, lines in (
        ("prompt_tokens", bench_prompt_tokens(args.conversation)),
        ("save_context", bench_save_context(args.rounds, args.llm_delay)),
    ):
        print("\n" + "\n".join(lines))
        figures[part] = lines
    if args.skip_local:
        bench.finish(figures)
        return 0
    print()

    local_texts, local_roles = texts[: args.local_turns], roles[: args.local_turns]
    with tempfile.TemporaryDirectory() as folder:
        model = args.model or str(build_tiny_model(Path(folder) / "tiny-bart"))
        note = args.model or "TINY RANDOM TEST MODEL: plumbing overhead, not DistilBART speed"
        results = bench_local(
            model,
            local_texts,
            local_roles,
            device=args.device,
            batch_size=args.batch_size,
            note=note,
        )
    for result in results:
        print(result.line())
    figures["local"] = [vars(r) for r in results]
    bench.finish(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
