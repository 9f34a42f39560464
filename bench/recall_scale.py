"""Latency of PMM's recall at scale, for bench/recall.py --synthetic N.

    python bench/recall.py --synthetic 100000      # latency with 100,000 events in the file

N events (prompt/response turns, 50 per session: a sentence of Zipf-distributed made-up
words, and in a third of them one of the dataset's sentences) in a fresh file. Embedding N
texts with MiniLM on a small CPU takes too long, so the corpus gets random unit vectors of
the model's dimension (the output says so); queries are embedded by the real model.
Prints p50/p99 per mode (targets: keyword p50 <= 10 ms, hybrid p50 <= 30 ms), the query
encoder alone, cold (a text never seen) and warm (a text asked again: the engine caches
query embeddings in an LRU; the warm rows repeat fewer distinct queries than it holds, so
every warm call is a hit), hybrid recall in one session and hybrid recall right after an
append. Baselines in the same run: hybrid with the query embedded in line before the
keyword rankers (``Recaller(background_encoding=False)``, as before
:mod:`pmm.recall.query_vectors`), the exact float32 scan of every vector (what the index
did before its sign-bit first pass) and the query encoder with torch's own thread count
(before one text got one thread), alone and together as "hybrid, before" (queries through
the fp32 model); hybrid and the encoder with queries through the fp32 model whatever
``--query-encoder`` says ("fp32" rows, ``PMM_QUERY_ENCODER=fp32``); and how many
of the exact scan's top 10 / top 50 the two-pass search returns on these vectors.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pmm.embed.index import VectorIndex
from pmm.embed.sentence import SentenceEmbedder
from pmm.recall.recaller import RECALL_MODES, Recaller
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

TURN_KINDS = ("prompt", "response")
TARGET_KEYWORD_P50_MS = 10.0
TARGET_HYBRID_P50_MS = 30.0
MODES = tuple(m for m in ("keyword", "semantic", "hybrid") if m in RECALL_MODES)


def sentence_bank(data: dict[str, Any]) -> list[str]:
    bank: list[str] = []
    for c in data["conversations"]:
        for s in c["sessions"]:
            for t in s["turns"]:
                bank += [p.strip() for p in re.split(r"(?<=[.!?])\s+", t["text"]) if p.strip()]
    return bank


SYLLABLES = "ka lo mi ra ten sor vel dan pri mo lu shi ber gan tor el an is or um".split()


class ZipfWords:
    """20,000 made-up words drawn by Zipf's law (exponent 1.07): the long tail of a real
    chat vocabulary, a few words in most turns and most words rare."""

    def __init__(self, rng: random.Random, size: int = 20_000) -> None:
        words: dict[str, None] = {}
        while len(words) < size:
            words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
        self.words = list(words)
        weights = 1.0 / np.arange(1, size + 1) ** 1.07
        self.cumulative = np.cumsum(weights / weights.sum())

    def sentence(self, rng: random.Random, n: int) -> str:
        picks = np.searchsorted(self.cumulative, [rng.random() for _ in range(n)])
        return " ".join(self.words[min(i, len(self.words) - 1)] for i in picks).capitalize() + "."


def synthetic_text(rng: random.Random, bank: list[str], zipf: ZipfWords) -> str:
    """One turn: a sentence of Zipf-distributed filler words, and in a third of the turns a
    real sentence from the dataset (so each appears ~55 times in 100,000 events and the
    questions' words have realistic, not universal, document frequencies)."""
    parts = [zipf.sentence(rng, rng.randint(6, 24))]
    if rng.random() < 0.33:
        parts.insert(rng.randint(0, 1), rng.choice(bank))
    return " ".join(parts)


PER_SESSION = 50
"""Events per session of the synthetic file."""


def fill_texts(store: EventStore, n: int, bank: list[str], seed: int) -> random.Random:
    """``n`` events of :func:`synthetic_text` in sessions of :data:`PER_SESSION`,
    alternating user and assistant, indexed for keyword search; returns the random source,
    drawn on after the texts (the latency run picks its sessions with it)."""
    rng, zipf = random.Random(seed), ZipfWords(random.Random(seed))
    for start in range(0, n, 2000):
        store.append_many(
            NewEvent(
                "prompt" if i % 2 == 0 else "response",
                synthetic_text(rng, bank, zipf),
                f"session-{i // PER_SESSION}",
                "user" if i % 2 == 0 else "assistant",
            )
            for i in range(start, min(n, start + 2000))
        )
    store.sync_search_index()
    return rng


def fill_vectors(store: EventStore, n: int, model: str, dim: int, seed: int) -> None:
    """A random unit vector of ``dim`` for each of events 1..``n``, stored under ``model``
    (embedding ``n`` texts with the model on a CPU would take too long)."""
    vec_rng = np.random.default_rng(seed)
    for start in range(1, n + 1, 5000):
        ids = range(start, min(n, start + 4999) + 1)
        block = vec_rng.standard_normal((len(ids), dim)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        store.put_embeddings(model, dim, [(i, block[j].tobytes()) for j, i in enumerate(ids)])


def query_encoder(recaller: Recaller) -> Callable[[str], Any]:
    """The engine's query-embedding step (cached or not), else the embedder itself."""
    for name in ("query_vector", "_query_vector"):
        fn = getattr(recaller, name, None)
        if callable(fn):
            return fn  # type: ignore[no-any-return]
    embedder = recaller.embedder
    assert embedder is not None
    return lambda q: embedder.embed([q])


def query_cache_clearer(recaller: Recaller) -> Callable[[], Any] | None:
    """A way to empty the engine's query-embedding cache, if it has one."""
    for owner in (recaller, recaller.embedder):
        for name in ("clear_query_cache", "cache_clear"):
            fn = getattr(owner, name, None)
            if callable(fn):
                return fn  # type: ignore[no-any-return]
        for name in ("query_cache", "_query_cache", "_query_vectors", "_vector_cache"):
            cache = getattr(owner, name, None)
            if cache is not None and callable(getattr(cache, "clear", None)):
                return cache.clear  # type: ignore[no-any-return]
    for name in ("query_vector", "_query_vector"):
        fn = getattr(recaller, name, None)
        if callable(getattr(fn, "cache_clear", None)):
            return fn.cache_clear  # type: ignore[union-attr,no-any-return]
    return None


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed_calls(fn: Callable[[str], Any], queries: Sequence[str]) -> list[float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        fn(query)
        samples.append(time.perf_counter() - started)
    return samples


def run_synthetic(
    args: argparse.Namespace, embedder: SentenceEmbedder, data: dict[str, Any]
) -> dict[str, Any]:
    bank = sentence_bank(data)
    n = args.synthetic
    per_session = PER_SESSION
    dim = embedder.dim
    results: dict[str, Any] = {"events": n, "dim": dim, "model": embedder.model_name}
    with tempfile.TemporaryDirectory(prefix="pmm-recall-scale-") as tmp:
        path = Path(tmp) / "scale.db"
        with EventStore(path) as store:
            started = time.perf_counter()
            rng = fill_texts(store, n, bank, args.seed)
            results["fill_seconds"] = time.perf_counter() - started
            started = time.perf_counter()
            fill_vectors(store, n, embedder.model_name, dim, args.seed)
            results["vector_seconds"] = time.perf_counter() - started
            size_mb = sum(os.path.getsize(p) for p in Path(tmp).iterdir() if p.is_file()) / 1e6
            print(
                f"synthetic: {n:,} events in {n // per_session:,} sessions, {size_mb:.0f} MB "
                f"on disk (filled in {results['fill_seconds']:.1f} s)"
            )
            print(
                f"corpus vectors: RANDOM unit vectors of {dim} dims stored under "
                f"{embedder.model_name!r} (embedding {n:,} texts with the model on this CPU "
                f"would take too long); queries ARE embedded by the model, so their "
                f"embedding time is in the figures below"
            )
            recaller = Recaller(store, embedder)
            started = time.perf_counter()
            recaller.recall("warm up the vector cache", k=10, mode="semantic")
            results["index_load_seconds"] = time.perf_counter() - started
            print(
                f"vector cache: first semantic recall (loads {n:,} vectors, "
                f"{n * dim * 4 / 1e6:.0f} MB) took {results['index_load_seconds']:.2f} s"
            )
            questions = [q["question"] for q in data["questions"]]
            queries = [questions[i % len(questions)] for i in range(args.queries)]
            for q in questions[:20]:  # warm caches: model, FTS pages, kind masks
                for mode in MODES:
                    recaller.recall(q, k=10, mode=mode)
            # the baseline: exact scan of every vector, torch's own thread count for a query
            before_embedder = SentenceEmbedder(
                embedder.source,
                device=embedder.device_preference,
                single_text_threads=None,
                query_encoder="fp32",
            )
            before = Recaller(store, before_embedder)
            exact = VectorIndex(store, embedder.model_name, dim, quantized_min=n + 1)
            before._index = exact
            for q in questions[:20]:
                before.recall(q, k=10, mode="hybrid")
            # the fusion before the learned one (pmm.recall.rerank): weighted RRF, same vector cache
            rrf = Recaller(store, embedder, learned=False)
            rrf._index = recaller.index
            # the query embedded in line before the keyword rankers (as before
            # pmm.recall.query_vectors), same vector cache
            inline = Recaller(store, embedder, background_encoding=False)
            inline._index = recaller.index
            # queries through the fp32 model (PMM_QUERY_ENCODER=fp32), same vector cache
            fp32_embedder = SentenceEmbedder(embedder.source, device=embedder.device_preference,
                                             query_encoder="fp32")  # fmt: skip
            fp32 = Recaller(store, fp32_embedder)
            fp32._index = recaller.index
            clear_rrf = query_cache_clearer(rrf) or (lambda: None)
            rows: list[tuple[str, list[float]]] = []
            encode = query_encoder(recaller)
            forget = query_cache_clearer(recaller)
            results["query_cache"] = "cleared before each cold row" if forget else "none found"
            print(
                "query-embedding cache: "
                + ("found; emptied before each cold row" if forget else "none found in the engine")
            )
            clear = forget or (lambda: None)
            clear_before = query_cache_clearer(before) or (lambda: None)
            # warm rows: fewer distinct queries than the cache holds, each asked once first
            cache_size = int(getattr(recaller, "_query_cache_size", 256))
            warm = questions[: max(1, min(len(questions), cache_size // 2))]
            warm_queries = [warm[i % len(warm)] for i in range(len(queries))]
            results["warm_distinct_queries"] = len(warm)
            clear()
            rows.append(("query encoder, cold", timed_calls(encode, queries)))
            fp32.clear_query_cache()
            rows.append(("query encoder, cold, fp32", timed_calls(query_encoder(fp32), queries)))
            clear_before()
            rows.append(
                (
                    "query encoder, cold, before",
                    timed_calls(lambda q: before_embedder.embed([q]), queries),
                )
            )
            for q in warm:
                encode(q)
            rows.append(("query encoder, warm", timed_calls(encode, warm_queries)))
            index = recaller.index
            assert index is not None
            vectors = dict(zip(questions, embedder.embed(questions), strict=True))
            rows.append(
                (
                    "vector search only",
                    timed_calls(lambda q: index.search(vectors[q], 50, kinds=TURN_KINDS), queries),
                )
            )
            rows.append(
                (
                    "vector search, exact (before)",
                    timed_calls(lambda q: exact.search(vectors[q], 50, kinds=TURN_KINDS), queries),
                )
            )
            results["two_pass_overlap"] = overlap(index, exact, [vectors[q] for q in queries])
            print(
                "two-pass vector search vs the exact scan, share of the exact top 10 / top 50 "
                f"returned (these random vectors): {results['two_pass_overlap']['top10']:.3f} / "
                f"{results['two_pass_overlap']['top50']:.3f}"
            )
            rows.append(
                (
                    "BM25 search only",
                    timed_calls(
                        lambda q: store.search_text(q, limit=50, kinds=TURN_KINDS), queries
                    ),
                )
            )
            for mode in MODES:
                clear()
                rows.append(
                    (mode, timed_calls(lambda q, m=mode: recaller.recall(q, k=10, mode=m), queries))
                )
                if mode != "semantic":
                    clear_rrf()
                    rows.append(
                        (
                            f"{mode}, weighted RRF (before pmm.recall.rerank)",
                            timed_calls(lambda q, m=mode: rrf.recall(q, k=10, mode=m), queries),
                        )
                    )
                if mode == "hybrid":
                    fp32.clear_query_cache()
                    rows.append(
                        (
                            "hybrid, fp32 queries",
                            timed_calls(lambda q: fp32.recall(q, k=10, mode="hybrid"), queries),
                        )
                    )
                    inline.clear_query_cache()
                    rows.append(
                        (
                            "hybrid, query in line",
                            timed_calls(lambda q: inline.recall(q, k=10, mode="hybrid"), queries),
                        )
                    )
                    clear_before()
                    rows.append(
                        (
                            "hybrid, before",
                            timed_calls(lambda q: before.recall(q, k=10, mode="hybrid"), queries),
                        )
                    )
            for q in warm:
                recaller.recall(q, k=10, mode="hybrid")
            rows.append(
                (
                    "hybrid, warm query",
                    timed_calls(lambda q: recaller.recall(q, k=10, mode="hybrid"), warm_queries),
                )
            )
            sessions = [f"session-{rng.randrange(n // per_session)}" for _ in queries]
            it = iter(sessions)
            clear()
            rows.append(
                (
                    "hybrid, one session",
                    timed_calls(lambda q: recaller.recall(q, k=10, session_id=next(it)), queries),
                )
            )
            # a write before each recall: the vector cache must look at the store again
            after: list[float] = []
            clear()
            for appended, q in enumerate(queries, start=1):
                store.append("prompt", f"new turn {appended}", session_id="live", role="user")
                started = time.perf_counter()
                recaller.recall(q, k=10)
                after.append(time.perf_counter() - started)
            rows.append(("hybrid, after an append", after))
            print(
                f"\nlatency over {len(queries)} queries, k=10, kinds=prompt/response, "
                f"all sessions unless said ({platform.processor() or platform.machine()}, "
                f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end):"
            )
            print(f"{'':>30}  {'p50 ms':>8}  {'p99 ms':>8}  {'mean ms':>8}")
            table = {}
            for name, samples in rows:
                p50, p99 = percentile(samples, 0.5) * 1e3, percentile(samples, 0.99) * 1e3
                mean = statistics.fmean(samples) * 1e3
                table[name] = {"p50_ms": p50, "p99_ms": p99, "mean_ms": mean}
                print(f"{name:>30}  {p50:8.2f}  {p99:8.2f}  {mean:8.2f}")
            results["latency"] = table
            keyword_ok = table["keyword"]["p50_ms"] <= TARGET_KEYWORD_P50_MS
            hybrid_ok = table["hybrid"]["p50_ms"] <= TARGET_HYBRID_P50_MS
            print(
                f"\ntargets: keyword p50 <= {TARGET_KEYWORD_P50_MS:g} ms: "
                f"{'met' if keyword_ok else 'MISSED'}; hybrid p50 <= "
                f"{TARGET_HYBRID_P50_MS:g} ms: {'met' if hybrid_ok else 'MISSED'}"
            )
            if args.compare_sqlite_vec:
                results["sqlite_vec"] = compare_sqlite_vec(store, embedder, queries)
    return results


def overlap(index: VectorIndex, exact: VectorIndex, vectors: Sequence[Any]) -> dict[str, float]:
    """Mean share of the exact search's top 10 and top 50 (as scores: ties count) that
    ``index`` returns, over ``vectors``."""
    shares: dict[str, list[float]] = {"top10": [], "top50": []}
    for vector in vectors:
        truth = [s for _, s in exact.search(vector, 50, kinds=TURN_KINDS)]
        got = [s for _, s in index.search(vector, 50, kinds=TURN_KINDS)]
        for name, depth in (("top10", 10), ("top50", 50)):
            floor = truth[min(depth, len(truth)) - 1] - 1e-6
            shares[name].append(sum(s >= floor for s in got[:depth]) / min(depth, len(truth)))
    return {name: statistics.fmean(values) for name, values in shares.items()}


def compare_sqlite_vec(
    store: EventStore, embedder: SentenceEmbedder, queries: Sequence[str]
) -> dict[str, Any]:
    """The same exact top-k over the same vectors with sqlite-vec's vec0, for comparison."""
    import sqlite3

    probe = sqlite3.connect(":memory:")
    if not hasattr(probe, "enable_load_extension"):
        print("sqlite-vec: not measured: this Python's sqlite3 cannot load extensions")
        return {"measured": False, "reason": "sqlite3 without enable_load_extension"}
    try:
        import sqlite_vec
    except ImportError:
        print("sqlite-vec: not measured: the sqlite-vec package is not installed")
        return {"measured": False, "reason": "sqlite-vec not installed"}
    probe.enable_load_extension(True)
    sqlite_vec.load(probe)
    probe.enable_load_extension(False)
    dim = embedder.dim
    probe.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{dim}])")
    probe.executemany(
        "INSERT INTO v(rowid, embedding) VALUES (?, ?)", store.embeddings(embedder.model_name)
    )
    vectors = embedder.embed(list(queries))
    samples = []
    for vector in vectors:
        started = time.perf_counter()
        probe.execute(
            "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = 50", (vector.tobytes(),)
        ).fetchall()
        samples.append(time.perf_counter() - started)
    p50 = percentile(samples, 0.5) * 1e3
    print(f"sqlite-vec vec0 top-50 (vector search only, no query embedding): p50 {p50:.2f} ms")
    return {"measured": True, "p50_ms": p50}
