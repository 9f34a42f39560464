"""Retrieval quality and latency of PMM's recall (keyword, semantic, hybrid).

    python bench/recall.py                         # quality on bench/data/recall_dataset.json
    python bench/recall.py --data other.json --out-json bench/results/recall.json
    python bench/recall.py --synthetic 100000      # latency with 100,000 events in the file

Quality: each conversation of the JSON file (``conversations`` with sessions of turns that
have ids, speakers and dates; ``questions`` with ``answer_ids``) is ingested into a fresh
memory (``EventStore.append``, role user/assistant, kind prompt/response, one session id
per conversation session), embedded, and every question of that conversation is recalled
with k = 25 across all its sessions. Printed per mode, with and without digests in the
index (digests: the heuristic digester's summary and keywords; with them the FTS index
holds summary + keywords + content and each turn is embedded by its summary): recall@k
(share of the answer turns in the top k), hit@k (any answer turn in the top k) for
k = 1, 5, 10, 25, and MRR (1 / rank of the first answer turn, 0 beyond 25), then a
breakdown by question type (single / multi / paraphrase).

Latency (``--synthetic N``): N events (prompt/response turns, 50 per session: a sentence
of Zipf-distributed made-up words, and in a third of them one of the dataset's sentences)
in a fresh file. Embedding N texts with MiniLM on a small CPU
takes too long, so the corpus gets random unit vectors of the model's dimension (the
output says so); queries are embedded by the real model, so their embedding time is
included. Prints p50/p99 per mode (targets: keyword p50 <= 10 ms, hybrid p50 <= 30 ms),
plus hybrid recall in one session and hybrid recall right after an append.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from pmm.embed.backfill import embed_pending
from pmm.embed.sentence import SentenceEmbedder
from pmm.recall import Recaller
from pmm.records import NewEvent
from pmm.store import EventStore

DATA = Path(__file__).resolve().parent / "data" / "recall_dataset.json"
KS = (1, 5, 10, 25)
MODES = ("keyword", "semantic", "hybrid")
TURN_KINDS = ("prompt", "response")
TARGET_KEYWORD_P50_MS = 10.0
TARGET_HYBRID_P50_MS = 30.0


# -- quality -------------------------------------------------------------------------------


def load_dataset(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turn_ids = {t["id"] for c in data["conversations"] for s in c["sessions"] for t in s["turns"]}
    for q in data["questions"]:
        missing = [i for i in q["answer_ids"] if i not in turn_ids]
        if missing:
            raise SystemExit(f"{path}: question {q['id']} names unknown turns {missing}")
    return data


def make_digester() -> Any:
    from pmm.digest.heuristic import HeuristicDigester

    return HeuristicDigester()


def ingest(store: EventStore, conversation: dict[str, Any], digester: Any | None) -> dict[int, str]:
    """Append every turn of the conversation; returns event id -> turn id."""
    to_turn: dict[int, str] = {}
    for session in conversation["sessions"]:
        for turn in session["turns"]:
            role = turn.get("role") or ("user" if turn["speaker"] != "assistant" else "assistant")
            event = store.append(
                "prompt" if role == "user" else "response",
                turn["text"],
                session_id=session["id"],
                role=role,
                meta={"turn_id": turn["id"], "date": turn.get("date") or session.get("date")},
            )
            to_turn[event.id] = turn["id"]
    if digester is not None:
        events = store.events(kinds=TURN_KINDS)
        digests = digester.digest_many([e.text for e in events], [e.role for e in events])
        store.set_digests(
            (e.id, d.summary, d.keywords, d.method) for e, d in zip(events, digests, strict=True)
        )
    return to_turn


def score(ranked: Sequence[str], answers: Sequence[str]) -> dict[str, float]:
    wanted = set(answers)
    out: dict[str, float] = {}
    for k in KS:
        found = wanted.intersection(ranked[:k])
        out[f"R@{k}"] = len(found) / len(wanted)
        out[f"H@{k}"] = 1.0 if found else 0.0
    first = next((r for r, turn in enumerate(ranked[: max(KS)], 1) if turn in wanted), None)
    out["MRR"] = 1.0 / first if first else 0.0
    return out


def run_quality(args: argparse.Namespace, embedder: SentenceEmbedder) -> dict[str, Any]:
    data = load_dataset(args.data)
    questions_by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in data["questions"]:
        questions_by_conv[q["conversation"]].append(q)
    n_turns = sum(len(s["turns"]) for c in data["conversations"] for s in c["sessions"])
    n_sessions = sum(len(c["sessions"]) for c in data["conversations"])
    types = defaultdict(int)
    for q in data["questions"]:
        types[q.get("type", "?")] += 1
    print(
        f"dataset: {args.data.name}: {len(data['conversations'])} conversations, "
        f"{n_sessions} sessions, {n_turns} turns, {len(data['questions'])} questions "
        f"({', '.join(f'{n} {t}' for t, n in sorted(types.items()))})"
    )
    print(f"embedder: {embedder.model_name} ({embedder.dim} dims, {embedder.device})")
    digester = make_digester() if args.digests in ("both", "with") else None
    variants = {"both": (False, True), "with": (True,), "without": (False,)}[args.digests]
    per_question: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pmm-recall-") as tmp:
        for with_digests in variants:
            for conversation in data["conversations"]:
                path = Path(tmp) / f"{conversation['id']}-{int(with_digests)}.db"
                with EventStore(path) as store:
                    to_turn = ingest(store, conversation, digester if with_digests else None)
                    embed_pending(store, embedder, kinds=TURN_KINDS, batch_size=64)
                    recaller = Recaller(store, embedder)
                    if args.summaries and with_digests:  # session summary nodes (consolidate)
                        recaller = summary_recaller(store, embedder, args)
                    for q in questions_by_conv[conversation["id"]]:
                        for mode in MODES:
                            hits = recaller.recall(q["question"], k=max(KS), mode=mode)
                            ranked = [to_turn.get(h.event.id, "summary") for h in hits]
                            per_question.append(
                                {
                                    "question": q["id"],
                                    "type": q.get("type", "?"),
                                    "mode": mode,
                                    "digests": with_digests,
                                    "ranked": ranked[:10],
                                    **score(ranked, q["answer_ids"]),
                                }
                            )
    seconds = time.perf_counter() - started
    table = summarise(per_question, variants)
    print_quality(table, per_question, variants)
    print(f"\n({seconds:.1f} s: ingest, digest, embed and {len(per_question)} recalls)")
    return {"table": table, "questions": per_question, "seconds": seconds}


def summary_recaller(store: EventStore, embedder: SentenceEmbedder, args: Any) -> Recaller:
    """Write the heuristic session summaries (as dream does), embed them, and recall with
    summary nodes competing (prior ``--summary-prior``) and expanding into their turns."""
    from pmm.consolidate import Consolidator
    from pmm.settings import Settings

    settings = Settings.load(env={}, enable_summary=True)
    Consolidator(store, settings).summarize_sessions()
    embed_pending(store, embedder, kinds=("summary",), batch_size=64)
    return Recaller(
        store,
        embedder,
        summaries=True,
        summary_prior=args.summary_prior,
        summary_children=args.summary_children,
    )


def summarise(rows: list[dict[str, Any]], variants: Sequence[bool]) -> list[dict[str, Any]]:
    metrics = [f"R@{k}" for k in KS] + [f"H@{k}" for k in KS] + ["MRR"]
    table = []
    for with_digests in variants:
        for mode in MODES:
            chosen = [r for r in rows if r["mode"] == mode and r["digests"] == with_digests]
            table.append(
                {
                    "mode": mode,
                    "digests": with_digests,
                    "n": len(chosen),
                    **{m: statistics.fmean(r[m] for r in chosen) for m in metrics},
                }
            )
    return table


def print_quality(
    table: list[dict[str, Any]], rows: list[dict[str, Any]], variants: Sequence[bool]
) -> None:
    head = ["mode", "digests"] + [f"R@{k}" for k in KS] + [f"H@{k}" for k in KS] + ["MRR"]
    print("\n" + "  ".join(f"{h:>8}" for h in head))
    for row in table:
        cells = [row["mode"], "yes" if row["digests"] else "no"]
        cells += [f"{row[h]:.3f}" for h in head[2:]]
        print("  ".join(f"{c:>8}" for c in cells))
    types = sorted({r["type"] for r in rows})
    print("\nby question type (R@10 / H@10 / MRR):")
    print(
        f"{'mode':>8}  {'digests':>8}  "
        + "  ".join(f"{t + f' ({n_of(rows, t)})':>24}" for t in types)
    )
    for with_digests in variants:
        for mode in MODES:
            cells = []
            for t in types:
                chosen = [
                    r
                    for r in rows
                    if r["mode"] == mode and r["digests"] == with_digests and r["type"] == t
                ]
                cells.append(
                    f"{statistics.fmean(r['R@10'] for r in chosen):.2f} / "
                    f"{statistics.fmean(r['H@10'] for r in chosen):.2f} / "
                    f"{statistics.fmean(r['MRR'] for r in chosen):.2f}"
                )
            flag = "yes" if with_digests else "no"
            print(f"{mode:>8}  {flag:>8}  " + "  ".join(f"{c:>24}" for c in cells))


def n_of(rows: list[dict[str, Any]], kind: str) -> int:
    return len({r["question"] for r in rows if r["type"] == kind})


# -- latency at scale ----------------------------------------------------------------------


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


def run_synthetic(args: argparse.Namespace, embedder: SentenceEmbedder) -> dict[str, Any]:
    data = load_dataset(args.data)
    bank = sentence_bank(data)
    rng = random.Random(args.seed)
    zipf = ZipfWords(random.Random(args.seed))
    n = args.synthetic
    per_session = 50
    dim = embedder.dim
    results: dict[str, Any] = {"events": n, "dim": dim, "model": embedder.model_name}
    with tempfile.TemporaryDirectory(prefix="pmm-recall-scale-") as tmp:
        path = Path(tmp) / "scale.db"
        with EventStore(path) as store:
            started = time.perf_counter()
            for start in range(0, n, 2000):
                store.append_many(
                    NewEvent(
                        "prompt" if i % 2 == 0 else "response",
                        synthetic_text(rng, bank, zipf),
                        f"session-{i // per_session}",
                        "user" if i % 2 == 0 else "assistant",
                    )
                    for i in range(start, min(n, start + 2000))
                )
            store.sync_search_index()
            results["fill_seconds"] = time.perf_counter() - started
            started = time.perf_counter()
            vec_rng = np.random.default_rng(args.seed)
            for start in range(1, n + 1, 5000):
                ids = range(start, min(n, start + 4999) + 1)
                block = vec_rng.standard_normal((len(ids), dim)).astype(np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                store.put_embeddings(
                    embedder.model_name, dim, [(i, block[j].tobytes()) for j, i in enumerate(ids)]
                )
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
            rows: list[tuple[str, list[float]]] = []
            rows.append(("embed query only", timed_calls(lambda q: embedder.embed([q]), queries)))
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
                    "BM25 search only",
                    timed_calls(
                        lambda q: store.search_text(q, limit=50, kinds=TURN_KINDS), queries
                    ),
                )
            )
            for mode in MODES:
                rows.append(
                    (mode, timed_calls(lambda q, m=mode: recaller.recall(q, k=10, mode=m), queries))
                )
            sessions = [f"session-{rng.randrange(n // per_session)}" for _ in queries]
            it = iter(sessions)
            rows.append(
                (
                    "hybrid, one session",
                    timed_calls(lambda q: recaller.recall(q, k=10, session_id=next(it)), queries),
                )
            )
            # a write before each recall: the vector cache must look at the store again
            after: list[float] = []
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
            print(f"{'':>26}  {'p50 ms':>8}  {'p99 ms':>8}  {'mean ms':>8}")
            table = {}
            for name, samples in rows:
                p50, p99 = percentile(samples, 0.5) * 1e3, percentile(samples, 0.99) * 1e3
                mean = statistics.fmean(samples) * 1e3
                table[name] = {"p50_ms": p50, "p99_ms": p99, "mean_ms": mean}
                print(f"{name:>26}  {p50:8.2f}  {p99:8.2f}  {mean:8.2f}")
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="dataset JSON")
    parser.add_argument("--model", default="", help="PMM_EMBEDDING_MODEL (default MiniLM)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    parser.add_argument(
        "--digests",
        choices=("both", "with", "without"),
        default="both",
        help="run with digests in the index, without, or both (default)",
    )
    parser.add_argument(
        "--summaries",
        action="store_true",
        help="with digests: add session summary nodes to recall (PMM_RECALL_SUMMARIES)",
    )
    parser.add_argument("--summary-prior", type=float, default=-0.05)
    parser.add_argument("--summary-children", type=int, default=2)
    parser.add_argument("--synthetic", type=int, default=0, metavar="N", help="latency run")
    parser.add_argument("--queries", type=int, default=300, help="queries per latency row")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--compare-sqlite-vec", action="store_true", help="also time sqlite-vec on the vectors"
    )
    parser.add_argument("--out-json", type=Path, help="write the results here as JSON")
    args = parser.parse_args(argv)

    embedder = SentenceEmbedder(args.model, device=args.device)
    started = time.perf_counter()
    embedder.load()
    print(f"model {embedder.model_name} loaded in {time.perf_counter() - started:.1f} s")
    results = run_synthetic(args, embedder) if args.synthetic else run_quality(args, embedder)
    if args.out_json:
        args.out_json.parent.mkdir(parents=True, exist_ok=True)
        args.out_json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out_json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
