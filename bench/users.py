"""Cost of one user's memory as other users' data grows (issue 20).

    python bench/users.py                    # 10,000 users x 5 threads = 1,000,000 events
    python bench/users.py --users 2000       # a smaller run: 200,000 events vs 20,000
    python bench/users.py --quick            # 400 users: 40,000 events vs 4,000

Builds two SQLite files with bulk appends: the big one holds ``--users`` users x
``--threads`` threads x ``--turns`` turns; the small one holds the first tenth of those
users, each with exactly the same events (same text, same vectors: every user's content is
drawn from a generator seeded by the user's number). Then, for the same sample of users
(all present in both files), in one run:

- ``PersistentMindMemory(user_id=...).load_memory_variables`` p50 in one of the user's
  threads (scope ``user``: recent turns of the thread, key facts and relevant memories from
  all of her threads);
- user-scoped keyword recall p50 and hybrid recall p50 (``Mind.recall(user_id=...)``),
  each user already searched once (her turns are in the in-memory user index); and the
  p50 of a user's first keyword recall in the process, which reads them (no target).

Targets at 1,000,000 events: load_memory_variables p50 <= 1.5 ms, keyword <= 5 ms, hybrid
<= 20 ms, and each big-file figure within 1.5x of the small file's. Corpus vectors are
RANDOM unit vectors of 384 dimensions (as ``bench/recall.py --synthetic``), and so are the
queries' (a hash of the query's words seeds them: no model is loaded, the encoder's time
is not in the figures; the engine caches a query's vector anyway).
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import numpy.typing as npt
from harness import Bench

from pmm import Mind, PersistentMindMemory
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

DIM = 384
MODEL = "bench/random-384"
TARGETS_MS = {"load_memory_variables": 1.5, "keyword recall": 5.0, "hybrid recall": 20.0}
FIRST = "user's first recall"
"""A keyword recall of a user not searched before in this process (not warmed): it reads
her turns into the in-memory user index (:mod:`pmm.recall.user_index`). No target: shown
so that the cost of a cold user is in the table beside the steady state."""
CITIES = "Lisbon Oslo Quito Nairobi Hanoi Lima Porto Tartu Accra Cusco".split()
PETS = "cat dog parrot rabbit hamster turtle".split()
WORDS = (
    "train ticket museum recipe garden rent budget concert holiday doctor meeting report "
    "laptop bicycle football novel coffee market weather bakery painting guitar exam flight "
    "hotel invoice salary kitchen balcony neighbour library podcast marathon yoga pasta"
).split()


class SeededEmbedder:
    """Random unit vectors seeded by the text's words: the queries' stand-in encoder."""

    model_name = MODEL
    dim = DIM

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            rng = np.random.default_rng(zlib.crc32(text.lower().encode()))
            out[row] = rng.standard_normal(DIM)
        return np.asarray(out / np.linalg.norm(out, axis=1, keepdims=True), dtype=np.float32)


def user_events(u: int, threads: int, turns: int) -> list[NewEvent]:
    """User ``u``'s events, the same in every file (a generator seeded by ``u``)."""
    rng = random.Random(u)
    user = f"user-{u}"
    events = []
    for t in range(threads):
        session = f"user-{u}/thread-{t}"
        for n in range(turns):
            if n % 2 == 0:
                if t == 0 and n == 0:
                    text = f"I live in {rng.choice(CITIES)} and I have a {rng.choice(PETS)}."
                else:
                    text = "Let's talk about " + " and ".join(rng.sample(WORDS, 3)) + "."
                events.append(NewEvent("prompt", text, session, "user", None, None, user))
            else:
                text = "Sure, " + " ".join(rng.sample(WORDS, 6)) + "."
                events.append(NewEvent("response", text, session, "assistant", None, None, user))
    return events


def build(path: Path, users: int, threads: int, turns: int) -> float:
    """Fill ``path`` with ``users`` users' events and their vectors; returns seconds."""
    started = time.perf_counter()
    batch: list[NewEvent] = []
    with EventStore(path) as store:
        for u in range(users):
            batch += user_events(u, threads, turns)
            if len(batch) >= 5000 or u == users - 1:
                store.append_many(batch)
                batch = []
        store.sync_search_index()
        rng = np.random.default_rng(7)
        total = store.count()
        for start in range(1, total + 1, 10_000):
            ids = range(start, min(total, start + 9_999) + 1)
            block = rng.standard_normal((len(ids), DIM)).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            store.put_embeddings(MODEL, DIM, [(i, block[j].tobytes()) for j, i in enumerate(ids)])
    return time.perf_counter() - started


def p50_ms(fn: Callable[[int], Any], samples: Sequence[int]) -> float:
    times = []
    for s in samples:
        started = time.perf_counter()
        fn(s)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(path: Path, sample: Sequence[int], threads: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    queries = [f"what about the {w} and where do I live" for w in WORDS]
    # No background digest worker: the files are built without digests, and a worker
    # digesting their whole backlog during the timings (writes, and the GIL) is not the
    # steady state of an app whose worker keeps up.
    with Mind(
        str(path), enable_embeddings=True, embedder=SeededEmbedder(), summary_mode="deferred"
    ) as mind:
        for u in sample[:20]:  # warm: pages, the vector cache, the query vectors
            mind.recall(queries[u % len(queries)], 5, mode="hybrid", user_id=f"user-{u}")
        # the default app: no embeddings, keyword recall
        keyword_mind = Mind(str(path), summary_mode="deferred")
        try:
            for u in sample[:20]:
                PersistentMindMemory(
                    mind=keyword_mind, user_id=f"user-{u}", session_id=f"user-{u}/thread-0"
                ).load_memory_variables({"input": queries[0]})
            keyword_memories = {
                u: PersistentMindMemory(
                    mind=keyword_mind,
                    user_id=f"user-{u}",
                    session_id=f"user-{u}/thread-{threads - 1}",
                )
                for u in sample
            }
            for memory in keyword_memories.values():  # first call reads the thread once
                memory.load_memory_variables({"input": queries[1]})
            figures["load_memory_variables"] = p50_ms(
                lambda u: keyword_memories[u].load_memory_variables(
                    {"input": queries[u % len(queries)]}
                ),
                sample,
            )
        finally:
            keyword_mind.close()

        def keyword(u: int) -> object:
            return mind.recall(queries[u % len(queries)], 5, mode="keyword", user_id=f"user-{u}")

        # a user's first recall reads her turns into the in-memory user index
        figures[FIRST] = p50_ms(keyword, sample[20:])
        figures["keyword recall"] = p50_ms(keyword, sample)
        figures["hybrid recall"] = p50_ms(
            lambda u: mind.recall(queries[u % len(queries)], 5, mode="hybrid", user_id=f"user-{u}"),
            sample,
        )
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    bench = Bench("users", __doc__)
    parser = bench.parser
    parser.add_argument("--users", type=int, default=10_000, help="users in the big file")
    parser.add_argument("--threads", type=int, default=5, help="threads per user")
    parser.add_argument("--turns", type=int, default=20, help="events per thread")
    parser.add_argument("--sample", type=int, default=200, help="users measured")
    parser.add_argument("--dir", help="where to build the files (default: a temporary folder)")
    args = bench.parse(argv)
    if args.quick:
        args.users, args.sample = 400, 40
    small_users = max(1, args.users // 10)
    per_user = args.threads * args.turns
    rng = random.Random(1)
    sample = rng.sample(range(small_users), min(args.sample, small_users))
    with tempfile.TemporaryDirectory(prefix="pmm-users-", dir=args.dir) as tmp:
        rows: dict[str, dict[str, float]] = {}
        for name, users in (("small", small_users), ("big", args.users)):
            path = Path(tmp) / f"{name}.db"
            seconds = build(path, users, args.threads, args.turns)
            size = sum(f.stat().st_size for f in Path(tmp).glob(f"{name}.db*")) / 1e6
            print(
                f"{name}: {users:,} users x {args.threads} threads = {users * per_user:,} "
                f"events, {size:.0f} MB, built in {seconds:.0f} s",
                flush=True,
            )
            rows[name] = measure(path, sample, args.threads)
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
    small_n, big_n = small_users * per_user, args.users * per_user
    print(
        f"\n{len(sample)} users (each in both files), p50 in ms; python {sys.version.split()[0]},"
        f" {os.cpu_count()} CPUs; corpus and query vectors are random (see the docstring)"
    )
    print(f"{'':24}{small_n:>12,}{big_n:>12,}{'ratio':>8}{'target':>10}")
    for key, target in TARGETS_MS.items():
        small, big = rows["small"][key], rows["big"][key]
        verdict = "ok" if big <= target and big <= 1.5 * small else "MISSED"
        print(
            f"{key:24}{small:>12.2f}{big:>12.2f}{big / small:>8.2f}{f'<= {target}':>10}  {verdict}"
        )
    small, big = rows["small"][FIRST], rows["big"][FIRST]
    print(f"{FIRST:24}{small:>12.2f}{big:>12.2f}{big / small:>8.2f}{'-':>10}")
    bench.finish({"events": {"small": small_n, "big": big_n}, "p50_ms": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
