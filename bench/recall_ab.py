"""Recall latency of two or more checkouts, asked the same queries in turn, so that every
arm sees the same machine load (on a shared machine, rows measured minutes apart differ
by more than the changes measured).

    python bench/recall_ab.py --arm main=/tmp/base-recall --arm new=. --arm new-inline=.:inline
    python bench/recall_ab.py --arm main=/tmp/base-fq --arm fp16=.:fp16 --arm int8=.:int8
    python bench/recall_ab.py --arm onnx1=.:onnx --arm onnx2=.:onnx+threads2 --db /tmp/scale.db
    python bench/recall_ab.py --arm ... --events 100000 --queries 300 --db /tmp/scale.db

Builds (or reuses, ``--db``) a synthetic file as ``bench/recall.py --synthetic`` does (the
same generator: ``recall_scale.py``; corpus vectors random, queries embedded by MiniLM),
starts one process per arm (``PATH`` a checkout whose ``pmm`` it imports; ``:inline``: a
``Recaller(background_encoding=False)``; ``:fp16``, ``:int8``, ``:fp32``, ``:onnx``,
``:auto``: that ``PMM_QUERY_ENCODER``; ``:threads2``: one query on two threads (torch's or
ONNX Runtime's) instead of one; flags joined by ``+``), and sends each query to every arm in
turn, the order rotating. Rows: ``hybrid`` and ``keyword`` with the query-embedding cache
emptied before each call (cold), ``hybrid, warm`` with every query's embedding cached.
Prints p50, p99 and mean per arm and row, and the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def serve(root: str, db: str, flags: str) -> None:
    """The child: a Recaller over ``db`` from checkout ``root``, timing one recall per line
    ``mode<TAB>query`` (``fill``: embed and cache, untimed purpose; ``warm``: hybrid, cache
    kept; else that mode with the cache emptied first). ``flags``: ``inline`` and / or a
    query encoder (``fp32``, ``fp16``, ``int8``, ``onnx``, ``auto``) and / or ``threads2``,
    joined by ``+``."""
    chosen = set(flags.split("+"))
    inline = "inline" in chosen
    encoder = [f for f in ("fp32", "fp16", "int8", "onnx", "auto") if f in chosen]
    threads = {"single_text_threads": 2} if "threads2" in chosen else {}
    sys.path.insert(0, root)
    from pmm.embed.sentence import SentenceEmbedder
    from pmm.recall.recaller import Recaller
    from pmm.storage.sqlite import EventStore

    store = EventStore(db)
    embedder = SentenceEmbedder(**({"query_encoder": encoder[0]} if encoder else {}), **threads)
    options = {"background_encoding": False} if inline else {}
    recaller = Recaller(store, embedder, **options)  # type: ignore[arg-type]
    clear = getattr(recaller, "clear_query_cache", None)
    if clear is None:  # a checkout before it: the LRU itself
        clear = recaller._query_vectors.clear  # type: ignore[attr-defined]
    recaller.recall("warm up the vector cache", k=10, mode="semantic")
    print("ready", flush=True)
    for line in sys.stdin:
        mode, query = line.rstrip("\n").split("\t", 1)
        if mode not in ("warm", "fill"):
            clear()
        started = time.perf_counter()
        recaller.recall(query, k=10, mode="hybrid" if mode in ("warm", "fill") else mode)
        print(f"{(time.perf_counter() - started) * 1e3:.4f}", flush=True)


def build(path: Path, n: int) -> None:
    """The synthetic file of ``bench/recall.py --synthetic n`` (same generator and seed)."""
    import numpy as np
    from recall import load_dataset, resolve_data
    from recall_scale import ZipfWords, sentence_bank, synthetic_text

    from pmm.embed.sentence import SentenceEmbedder
    from pmm.records import NewEvent
    from pmm.storage.sqlite import EventStore

    bank = sentence_bank(load_dataset(resolve_data("chat")))
    rng, zipf = random.Random(1), ZipfWords(random.Random(1))
    embedder = SentenceEmbedder()
    with EventStore(path) as store:
        for start in range(0, n, 2000):
            store.append_many(
                NewEvent("prompt" if i % 2 == 0 else "response", synthetic_text(rng, bank, zipf),
                         f"session-{i // 50}", "user" if i % 2 == 0 else "assistant")
                for i in range(start, min(n, start + 2000))
            )  # fmt: skip
        store.sync_search_index()
        vectors = np.random.default_rng(1)
        for start in range(1, n + 1, 5000):
            ids = range(start, min(n, start + 4999) + 1)
            block = vectors.standard_normal((len(ids), embedder.dim)).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            store.put_embeddings(embedder.model_name, embedder.dim,
                                 [(i, block[j].tobytes()) for j, i in enumerate(ids)])  # fmt: skip


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arm", action="append", default=[],
                        help="NAME=PATH[:FLAG[+FLAG]]: inline, fp32, fp16, int8, onnx, auto, "
                             "threads2")  # fmt: skip
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--db", type=Path, help="reuse (or build once into) this file")
    parser.add_argument("--serve", nargs=3, metavar=("ROOT", "DB", "FLAGS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], args.serve[1], args.serve[2])
        return 0
    if len(args.arm) < 2:
        parser.error("give two --arm NAME=PATH or more")
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    from recall import load_dataset, resolve_data

    with tempfile.TemporaryDirectory(prefix="pmm-recall-ab-") as tmp:
        db = args.db or Path(tmp) / "scale.db"
        if not db.exists():
            started = time.perf_counter()
            build(db, args.events)
            print(f"built {args.events:,} events in {time.perf_counter() - started:.0f} s: {db}")
        arms: dict[str, subprocess.Popen[str]] = {}
        for spec in args.arm:
            name, _, target = spec.partition("=")
            root, _, flag = target.partition(":")
            root = str(Path(root).resolve())
            arms[name] = subprocess.Popen(
                [sys.executable, __file__, "--serve", root, str(db), flag or "-"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                env={**os.environ, "PYTHONPATH": root},
            )  # fmt: skip
        for proc in arms.values():
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"

        def ask(proc: subprocess.Popen[str], mode: str, query: str) -> float:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(f"{mode}\t{query}\n")
            proc.stdin.flush()
            return float(proc.stdout.readline())

        questions = [q["question"] for q in load_dataset(resolve_data("chat"))["questions"]]
        names = list(arms)
        results: dict[tuple[str, str], list[float]] = {}
        for row, mode in (("hybrid", "hybrid"), ("keyword", "keyword"), ("hybrid, warm", "warm")):
            pool = questions[:100] if mode == "warm" else questions[20:]
            for query in pool if mode == "warm" else questions[:20]:  # model, pages, caches
                for name in names:
                    ask(arms[name], "fill" if mode == "warm" else mode, query)
            for i in range(args.queries):
                query = pool[i % len(pool)]
                for name in names[i % len(names) :] + names[: i % len(names)]:
                    results.setdefault((row, name), []).append(ask(arms[name], mode, query))
        for proc in arms.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{args.queries} queries per row, asked of every arm in turn (load {load} at the end)")
    print(f"{'row':>14}  {'arm':<24}  {'p50 ms':>8}  {'p99 ms':>8}  {'mean ms':>8}")
    for (row, name), samples in results.items():
        p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
        print(f"{row:>14}  {name:<24}  {p50:8.2f}  {p99:8.2f}  {statistics.fmean(samples):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
