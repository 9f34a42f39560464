"""How many chat-model calls contradiction detection makes, with and without its pre-filter.

    python bench/consolidation.py                    # 500 turns, MiniLM cosine
    python bench/consolidation.py --no-embeddings    # bag-of-words cosine instead
    python bench/consolidation.py --turns 1000 --seed 3
    python bench/consolidation.py --recall-overhead 20000   # cost of the recall hook

A 500-turn conversation (250 user statements, 250 assistant replies, one user) is generated
from everyday templates with randomised names, places and numbers, with ``--planted``
statements that overturn an earlier one (a move, a diet, a job, ...). It is stored in a fresh
PMM file and dreamed once (heuristic digests, embeddings, session summaries off); the chat
model is a ChatOpenAI talking HTTP to the local fake OpenAI server of the tests
(tests/fake_openai.py), which answers "contradicts" exactly for the planted pairs.

Printed: the pairs checking every pair would ask about (n·(n-1)/2 user statements), the calls
made with the pre-filter (shared keyword AND cosine > PMM_CONTRADICTION_SIMILARITY), the
reduction (target >= 90%), and how many planted contradictions were found.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from fake_openai import FakeOpenAI, RecordedRequest  # noqa: E402

from pmm import Mind  # noqa: E402
from pmm.digest.heuristic import HeuristicDigester  # noqa: E402

TARGET_REDUCTION = 0.90
NAMES = ["Joan", "Priya", "Tom", "Aiko", "Lars", "Rita", "Omar", "Chen", "Marta", "Dev"]
PLACES = ["Leeds", "York", "Porto", "Lyon", "Oslo", "Bergen", "Kyoto", "Austin", "Cork"]
THINGS = ["bike", "laptop", "guitar", "kettle", "tent", "camera", "sofa", "phone"]
FOODS = ["ramen", "paella", "lentil soup", "tacos", "pho", "risotto", "curry", "pierogi"]
HOBBIES = ["climbing", "pottery", "chess", "sourdough", "birdwatching", "salsa", "knitting"]

FILLERS = [
    "Yesterday I had {food} with {name} near the station.",
    "My {thing} broke again, the third time this {month}.",
    "I spent {n} hours on {hobby} this weekend.",
    "{name} recommended a podcast about {hobby}.",
    "The train to {place} was {n} minutes late this morning.",
    "I need to buy a new {thing} before the trip to {place}.",
    "We are planning a dinner party for {n} people in {month}.",
    "Can you remind me what {name} said about the {thing}?",
    "I finally finished the book {name} lent me.",
    "It rained all day in {place}, so I stayed in with {food}.",
    "My team has a deadline on the {n}th and I'm behind.",
    "I booked a {hobby} class for {month}.",
    "Is {food} hard to make at home?",
    "{name} and I argued about the budget for the {thing}.",
    "I walked {n} km today, my legs are tired.",
    "The {thing} I ordered arrives on the {n}th.",
    "What should I pack for {n} days in {place}?",
    "I'm thinking of trying {hobby} with {name}.",
    "The landlord wants to raise the rent by {n} percent.",
    "My neighbour {name} has a new puppy.",
]
REPLIES = [
    "That sounds like a good plan.",
    "Happy to help with that.",
    "Here are a few ideas you could try.",
    "Let me know how it goes.",
    "That makes sense, thanks for telling me.",
]
# (older, newer): the newer statement overturns the older one.
PLANTS = [
    ("I live in {place} with my partner.", "We moved away from {place}, we live in {place2} now."),
    ("I'm vegetarian and cook {food} every week.", "I eat meat again and no longer cook {food}."),
    ("I work as a teacher at a primary school.", "I quit teaching, I work as a nurse at school."),
    ("My partner {name} and I share a flat.", "{name} and I split up, I share the flat alone."),
    ("I drive a red {thing} to work.", "I sold the red {thing}, I cycle to work now."),
    ("I go {hobby} every Tuesday.", "I stopped {hobby}, Tuesdays are free now."),
    ("My favourite food is {food}.", "I can't stand {food} any more, my favourite is pho."),
    ("I don't drink coffee at all.", "I drink coffee every morning now, I don't skip it."),
    ("My sister {name} lives in {place}.", "My sister {name} left {place} last year."),
    ("I run {n} km every Sunday.", "I no longer run on Sunday, my knee needs rest."),
]
MONTHS = ["March", "April", "May", "June", "July", "October"]


def fill(template: str, rng: random.Random, slots: dict[str, str] | None = None) -> str:
    values = {
        "name": rng.choice(NAMES),
        "place": rng.choice(PLACES),
        "place2": rng.choice(PLACES),
        "thing": rng.choice(THINGS),
        "food": rng.choice(FOODS),
        "hobby": rng.choice(HOBBIES),
        "month": rng.choice(MONTHS),
        "n": str(rng.randint(2, 40)),
    }
    values.update(slots or {})
    return template.format(**values)


def conversation(
    turns: int, planted: int, rng: random.Random
) -> tuple[list[str], set[tuple[str, str]]]:
    """User statements (turns // 2) with ``planted`` overturned pairs, and those pairs."""
    n = turns // 2
    statements = [fill(rng.choice(FILLERS), rng) for _ in range(n)]
    pairs: set[tuple[str, str]] = set()
    for older, newer in PLANTS[:planted]:
        slots = {
            "name": rng.choice(NAMES),
            "place": rng.choice(PLACES),
            "food": rng.choice(FOODS),
            "thing": rng.choice(THINGS),
            "hobby": rng.choice(HOBBIES),
        }
        slots["place2"] = rng.choice([p for p in PLACES if p != slots["place"]])
        first = rng.randrange(0, n // 2)
        second = rng.randrange(n // 2, n)
        statements[first] = fill(older, rng, slots)
        statements[second] = fill(newer, rng, slots)
        pairs.add((statements[first], statements[second]))
    return statements, pairs


def recall_overhead(events: int, queries: int, rng: random.Random) -> int:
    """Keyword recall p50 with and without the consolidation hook (summary expansion and
    superseded demotion), interleaved query by query in one process on one file."""
    import statistics

    import pmm.dream.consolidation as consolidate
    from pmm.recall.recaller import Recaller
    from pmm.records import NewEvent
    from pmm.storage.sqlite import EventStore

    hooked = consolidate.consolidated_hits

    def bare(store: Any, hits: Any, query: str, k: int, **_: Any) -> Any:
        return list(hits)[:k]

    with tempfile.TemporaryDirectory() as tmp, EventStore(Path(tmp) / "r.db") as store:
        batch = []
        for i in range(events):
            batch.append(NewEvent("prompt", fill(rng.choice(FILLERS), rng), f"s{i // 50}", "user"))
            if len(batch) == 1000:
                store.append_many(batch)
                batch = []
        store.append_many(batch)
        store.sync_search_index()
        recaller = Recaller(store)
        words = [fill(rng.choice(FILLERS), rng) for _ in range(queries)]
        times: dict[str, list[float]] = {"with hook": [], "without": []}
        for query in words:
            for name, hook in (("with hook", hooked), ("without", bare)):
                consolidate.consolidated_hits = hook  # type: ignore[assignment]
                started = time.perf_counter()
                recaller.recall(query, k=10, mode="keyword")
                times[name].append((time.perf_counter() - started) * 1000)
        consolidate.consolidated_hits = hooked
    base = statistics.median(times["without"])
    with_hook = statistics.median(times["with hook"])
    print(f"keyword recall, {events:,} events, {queries} queries, k=10 (p50, interleaved):")
    print(
        f"  without the hook {base:.2f} ms; with it {with_hook:.2f} ms "
        f"(+{with_hook - base:.2f} ms, x{with_hook / base:.2f})"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--planted", type=int, default=len(PLANTS))
    parser.add_argument("--similarity", type=float, default=0.4)
    parser.add_argument("--no-embeddings", action="store_true", help="bag-of-words cosine")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out-json", type=Path)
    parser.add_argument("--recall-overhead", type=int, metavar="N", default=0)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    if args.recall_overhead:
        return recall_overhead(args.recall_overhead, args.queries, rng)
    statements, planted = conversation(args.turns, min(args.planted, len(PLANTS)), rng)

    def judge(request: RecordedRequest) -> dict[str, Any]:
        pair = json.loads(request.messages[-1]["content"])
        hit = (pair["older"], pair["newer"]) in planted
        return {"contradicts": hit, "reason": "planted" if hit else ""}

    from langchain_openai import ChatOpenAI

    with FakeOpenAI(timeout=3600) as server, tempfile.TemporaryDirectory() as tmp:
        server.respond_with(judge)
        chat = ChatOpenAI(base_url=server.api_base, api_key="bench", model="m", max_retries=0)
        with Mind(
            str(Path(tmp) / "bench.db"),
            llm=chat,
            digester=HeuristicDigester(),
            enable_summary=True,
            summary_mode="deferred",
            enable_embeddings=not args.no_embeddings,
            session_summaries=False,
            contradiction_similarity=args.similarity,
            dream_on_close=False,
        ) as mind:
            for text in statements:
                mind.remember_turn(text, rng.choice(REPLIES), session_id="user")
            started = time.perf_counter()
            report = mind.dream()
            seconds = time.perf_counter() - started
            markers = mind.store.events(kinds=("superseded",))
            found = {
                (mind.store.get(m.meta["older"]).text, mind.store.get(m.meta["newer"]).text)
                for m in markers
                if m.meta.get("method") == "llm"
            }
            slot = sum(1 for m in markers if m.meta.get("method") == "slot")
    n = len(statements)
    every_pair = n * (n - 1) // 2
    calls = len(server.requests)
    reduction = 1 - calls / every_pair
    cosine = "bag-of-words" if args.no_embeddings else "MiniLM embeddings"
    print(
        f"{args.turns} turns, {n} user statements, {len(planted)} planted contradictions, "
        f"cosine by {cosine} > {args.similarity}"
    )
    print(f"{'':32}{'llm calls':>10}")
    print(f"{'every pair (no pre-filter)':32}{every_pair:>10,}")
    print(f"{'pre-filtered pairs':32}{calls:>10,}")
    status = "met" if reduction >= TARGET_REDUCTION else "NOT met"
    print(f"reduction: {reduction:.1%} (target >= {TARGET_REDUCTION:.0%}: {status})")
    print(
        f"planted contradictions found by the llm: {len(found & planted)}/{len(planted)}; "
        f"false positives: {len(found - planted)}; slot-rule supersessions: {slot}"
    )
    print(f"dream: {seconds:.1f} s (digest, embed, {calls} HTTP calls); report: {report}")
    if args.out_json:
        args.out_json.write_text(
            json.dumps(
                {
                    "statements": n,
                    "every_pair": every_pair,
                    "calls": calls,
                    "reduction": reduction,
                    "planted": len(planted),
                    "found": len(found & planted),
                }
            )
        )
    return 0 if reduction >= TARGET_REDUCTION else 1


if __name__ == "__main__":
    raise SystemExit(main())
