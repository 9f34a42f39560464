"""Retrieval quality and latency of PMM's recall, beside a plain BM25 baseline.

    python bench/recall.py                          # quality on the chat dataset (default)
    python bench/recall.py --data paraphrase        # the hand-written assistant dataset
    python bench/recall.py --data path/to.json --digests without --json out.json
    python bench/recall.py --quick                  # 2 conversations, keyword only (seconds)
    python bench/recall.py --synthetic 100000       # latency with 100,000 events (below)
    python bench/recall.py --vector-shortlist 100   # dense via sign bits + 100 exact re-scores
    python bench/recall.py --no-learned             # the modes as before the learned fusion

Datasets (``--data``): ``chat`` is bench/data/chat_dataset.json (casual chats between two
friends, written by bench/data/make_chat_dataset.py; regenerated if the file is missing),
``paraphrase`` is bench/data/recall_dataset.json (a person and an assistant, a third of
the questions paraphrased on purpose), or any path to a JSON file of the same shape.

Quality: each conversation is ingested into a fresh memory (``EventStore.append``, role
user/assistant, kind prompt/response, one session id per conversation session, the turn's
date as the event time when the store takes ``ts=``, else in ``meta``), embedded, and every
question of that conversation is recalled with k = 25 across all its sessions. Printed,
with and without digests in the index (the heuristic digester's summary and keywords):

- ``bm25``: textbook FTS5 BM25 over the raw turns, computed here (:class:`PlainBM25`:
  SQLite's ``bm25()``, k1 = 1.2, b = 0.75, PMM's tokenizer), the baseline;
- each recall mode of the engine (``pmm.recall.recaller.RECALL_MODES``), by ``Recaller.recall``;
- each single ranker of the engine (``ranker:NAME``), from its own list;

with recall@k (share of the answer turns in the top k), hit@k (any answer turn in the top
k) for k = 1, 5, 10, 25, MRR (1 / rank of the first answer turn, 0 beyond 25) and R@10
relative to the baseline; then R@10 / H@10 / MRR per question type. Each ranker's list
is ``Recaller.rankings(query, depth=...)``.

``--quick``: the first 2 conversations, without an embedder and without digests (seconds);
with ``--synthetic N``, N = 5,000 and 30 queries (MiniLM embeds the queries). The
cross-validation of weighted-RRF fusion weights this script once ran (``--cv``,
``--weights``) is in git at commit ``a200e3d``; docs/benchmarks/fusion.md records its finding.

Latency at scale (``--synthetic N``): N events (prompt/response turns, 50 per session: a
sentence of Zipf-distributed made-up words, and in a third of them one of the dataset's
sentences) in a fresh file. Embedding N texts with MiniLM on a small CPU takes too long, so
the corpus gets random unit vectors of the model's dimension (the output says so); queries
are embedded by the real model. Prints p50/p99 per mode (targets: keyword p50 <= 10 ms,
hybrid p50 <= 30 ms), the query encoder alone, cold (a text never seen) and warm (a text
asked again: the engine caches query embeddings in an LRU; the warm rows repeat fewer
distinct queries than it holds, so every warm call is a hit), hybrid recall in one session
and hybrid recall right after an append. Baselines in the same run: hybrid with the query
embedded in line before the keyword rankers (``Recaller(background_encoding=False)``, as
before :mod:`pmm.recall.query_vectors`), the exact float32 scan of every vector (what the
index did before its sign-bit first pass) and the query encoder with torch's own thread
count (before one text got one thread), alone and together as "hybrid, before" (queries
through the fp32 model); hybrid and the encoder with queries through the fp32 model whatever
``--query-encoder`` says ("fp32" rows, ``PMM_QUERY_ENCODER=fp32``); and how many of the
exact scan's top 10 / top 50 the two-pass search returns on these vectors.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
from harness import Bench, percentile  # noqa: E402
from locomo import DiskCachedEmbedder  # noqa: E402

import pmm.recall.recaller as engine  # noqa: E402
from pmm.embed.backfill import embed_pending  # noqa: E402
from pmm.embed.index import VectorIndex  # noqa: E402
from pmm.recall.recaller import RECALL_MODES, Recaller  # noqa: E402
from pmm.records import NewEvent  # noqa: E402
from pmm.storage.sqlite import EventStore  # noqa: E402
from pmm.text.words import search_terms, words  # noqa: E402

DATA_DIR = HERE / "data"
DATASETS = {"chat": DATA_DIR / "chat_dataset.json", "paraphrase": DATA_DIR / "recall_dataset.json"}
TURN_KINDS = ("prompt", "response")
BASELINE = "bm25"
KS = (1, 5, 10, 25)
METRICS = [f"R@{k}" for k in KS] + [f"H@{k}" for k in KS] + ["MRR"]


def score(ranked: Sequence[Any], answers: Sequence[Any]) -> dict[str, float]:
    """recall@k (share of the answer turns in the top k), hit@k (any of them in the top
    k) for k in KS, and MRR (1 / rank of the first answer turn, 0 beyond 25)."""
    wanted = set(answers)
    out: dict[str, float] = {}
    for k in KS:
        found = wanted.intersection(ranked[:k])
        out[f"R@{k}"] = len(found) / len(wanted)
        out[f"H@{k}"] = 1.0 if found else 0.0
    first = next((r for r, turn in enumerate(ranked[: max(KS)], 1) if turn in wanted), None)
    out["MRR"] = 1.0 / first if first else 0.0
    return out


def mean_scores(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {m: statistics.fmean(r[m] for r in rows) if rows else 0.0 for m in METRICS}


class PlainBM25:
    """FTS5 BM25 over the raw text of one conversation's turns, query words OR-ed."""

    def __init__(self, turns: Sequence[tuple[str, str]]) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute(
            "CREATE VIRTUAL TABLE t USING fts5(text, tokenize = 'porter unicode61 "
            "remove_diacritics 2')"
        )
        self.ids = [turn_id for turn_id, _ in turns]
        self.conn.executemany(
            "INSERT INTO t(rowid, text) VALUES (?, ?)",
            [(i + 1, text) for i, (_, text) in enumerate(turns)],
        )

    def search(self, query: str, limit: int) -> list[str]:
        terms = search_terms(query)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self.conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, limit)
        ).fetchall()
        return [self.ids[r[0] - 1] for r in rows]

    def close(self) -> None:
        self.conn.close()


# -- data ----------------------------------------------------------------------------------


def resolve_data(value: str) -> Path:
    path = DATASETS.get(value, Path(value))
    if value == "chat" and not path.exists():
        sys.path.insert(0, str(DATA_DIR))
        import make_chat_dataset

        make_chat_dataset.main(["--out", str(path)])
    if not path.exists():
        raise SystemExit(f"--data: no dataset {value!r} (chat, paraphrase or a JSON path)")
    return path


def load_dataset(path: Path, conversations: int = 0) -> dict[str, Any]:
    """The dataset at ``path`` (its first ``conversations`` conversations if > 0), with
    every question's answer turns checked."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if conversations > 0:
        data["conversations"] = data["conversations"][:conversations]
        kept = {c["id"] for c in data["conversations"]}
        data["questions"] = [q for q in data["questions"] if q["conversation"] in kept]
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
    takes_ts = "ts" in inspect.signature(store.append).parameters
    to_turn: dict[int, str] = {}
    for session in conversation["sessions"]:
        for turn in session["turns"]:
            role = turn.get("role") or ("user" if turn["speaker"] != "assistant" else "assistant")
            when = turn.get("date") or session.get("date")
            extra: dict[str, Any] = {"ts": when} if takes_ts and when else {}
            event = store.append(
                "prompt" if role == "user" else "response",
                turn["text"],
                session_id=session["id"],
                role=role,
                meta={"turn_id": turn["id"], "speaker": turn["speaker"], "date": when},
                **extra,
            )
            to_turn[event.id] = turn["id"]
    if digester is not None:
        events = store.events(kinds=TURN_KINDS)
        digests = digester.digest_many([e.text for e in events], [e.role for e in events])
        store.set_digests(
            (e.id, d.summary, d.keywords, d.method) for e, d in zip(events, digests, strict=True)
        )
    return to_turn


# -- rankers -------------------------------------------------------------------------------


def engine_modes(embedder: Any | None) -> list[str]:
    """The engine's recall modes this run can use (no dense modes without an embedder)."""
    if embedder is None:
        return [m for m in RECALL_MODES if m == "keyword" or m in ("bm25", "lexical")]
    return list(RECALL_MODES)


def ranker_lists(recaller: Recaller, query: str, depth: int) -> dict[str, list[int]]:
    """Each ranker's event ids for ``query``, best first, ``depth`` deep, found the way
    the engine finds them: each keyword key (date-weighted on a temporal question), then
    the dense index."""
    temporal = engine.is_temporal(words(query.lower()))
    weight = engine.TEMPORAL_DATE_WEIGHT if temporal else 1.0
    out = {
        key: [i for i, _ in recaller.store.search_text(
            query, limit=depth, kinds=TURN_KINDS, key=key, date_weight=weight)]
        for key in engine.KEYWORD_RANKERS
    }  # fmt: skip
    if recaller.embedder is not None and recaller.index is not None:
        vector = recaller._query_vector(query)
        out["dense"] = [i for i, _ in recaller.index.search(vector, depth, kinds=TURN_KINDS)]
    return out


def summary_recaller(store: EventStore, embedder: Any | None, args: Any) -> Recaller:
    """Write the heuristic session summaries (as dream does), embed them, and recall with
    summary nodes competing (prior ``--summary-prior``) and expanding into their turns."""
    from pmm.dream.consolidation import Consolidator
    from pmm.settings import Settings

    settings = Settings.load(env={}, enable_summary=True)
    Consolidator(store, settings).summarize_sessions()
    if embedder is not None:
        embed_pending(store, embedder, kinds=("summary",), batch_size=64)
    return Recaller(
        store,
        embedder,
        summaries=True,
        summary_prior=args.summary_prior,
        summary_children=args.summary_children,
    )


# -- the run -------------------------------------------------------------------------------


def collect(
    args: argparse.Namespace, data: dict[str, Any], embedder: Any | None
) -> list[dict[str, Any]]:
    """One record per question and digest variant: each mode's top 25 and each ranker's
    list; plus one ``bm25`` baseline record per question. Turns are named by their
    position in the conversation (1, 2, ...: the order they were appended in, so a larger
    number is a newer event, as the engine's tie-break expects); ``answer_ids`` too."""
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in data["questions"]:
        by_conv[q["conversation"]].append(q)
    records: list[dict[str, Any]] = []
    variants = {"both": (False, True), "with": (True,), "without": (False,)}[args.digests]
    digester = make_digester() if True in variants else None
    modes = engine_modes(embedder)
    with tempfile.TemporaryDirectory(prefix="pmm-recall-") as tmp:
        for conversation in data["conversations"]:
            turns = [(t["id"], t["text"]) for s in conversation["sessions"] for t in s["turns"]]
            position = {turn_id: n for n, (turn_id, _) in enumerate(turns, start=1)}
            bm25 = PlainBM25(turns)
            for q in by_conv[conversation["id"]]:
                found = [position[t] for t in bm25.search(q["question"], max(KS))]
                records.append(_record(q, position, None, {BASELINE: found}, {}))
            bm25.close()
            for with_digests in variants:
                path = Path(tmp) / f"{conversation['id']}-{int(with_digests)}.db"
                with EventStore(path) as store:
                    to_turn = {
                        event_id: position[turn_id]
                        for event_id, turn_id in ingest(
                            store, conversation, digester if with_digests else None
                        ).items()
                    }
                    if embedder is not None:
                        embed_pending(store, embedder, kinds=TURN_KINDS, batch_size=256)
                    recaller = Recaller(store, embedder, learned=not args.no_learned)
                    if args.vector_shortlist and recaller.index is not None:
                        # force the sign-bit first pass with a short shortlist (a stress
                        # test: by default these small stores are searched exactly)
                        recaller.index.quantized_min = 0
                        recaller.index.shortlist_min = args.vector_shortlist
                        recaller.index.shortlist_per_k = 0
                    if args.summaries and with_digests:  # session summary nodes (consolidate)
                        recaller = summary_recaller(store, embedder, args)
                    for q in by_conv[conversation["id"]]:
                        ranked = {
                            m: [
                                # a summary node holds a rank but is no answer turn (0)
                                to_turn.get(h.event.id, 0)
                                for h in recaller.recall(q["question"], k=max(KS), mode=m)
                            ]
                            for m in modes
                        }
                        lists = ranker_lists(recaller, q["question"], recaller.depth)
                        rankings = {
                            r: [to_turn[i] for i in ids if i in to_turn] for r, ids in lists.items()
                        }
                        records.append(_record(q, position, with_digests, ranked, rankings))
    return records


def _record(
    q: dict[str, Any],
    position: dict[str, int],
    digests: bool | None,
    modes: dict[str, list[int]],
    rankings: dict[str, list[int]],
) -> dict[str, Any]:
    return {
        "question": q["id"],
        "conversation": q["conversation"],
        "type": q.get("type", "?"),
        "answer_ids": [position[t] for t in q["answer_ids"]],
        "digests": digests,
        "modes": modes,
        "rankings": rankings,
    }


def systems(records: list[dict[str, Any]]) -> dict[tuple[str, bool | None], list[dict[str, Any]]]:
    """(system, digests) -> per-question scores (with ``type``), for every system."""
    out: dict[tuple[str, bool | None], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        for mode, ranked in r["modes"].items():
            out[(mode, r["digests"])].append({"type": r["type"], **score(ranked, r["answer_ids"])})
        for ranker, ranked in r["rankings"].items():
            out[(f"ranker:{ranker}", r["digests"])].append(
                {"type": r["type"], **score(ranked[: max(KS)], r["answer_ids"])}
            )
    return out


def print_tables(table: dict[tuple[str, bool | None], list[dict[str, Any]]]) -> dict[str, Any]:
    base = mean_scores(table[(BASELINE, None)])["R@10"] if (BASELINE, None) in table else 0.0
    head = ["system", "digests", *METRICS, "R@10/bm25"]
    print("\n" + f"{head[0]:<34}" + "".join(f"{h:>9}" for h in head[1:]))
    summary: dict[str, Any] = {}
    for (name, digests), rows in table.items():
        means = mean_scores(rows)
        flag = "-" if digests is None else ("yes" if digests else "no")
        ratio = means["R@10"] / base if base else float("nan")
        print(
            f"{name:<34}{flag:>9}" + "".join(f"{means[m]:9.3f}" for m in METRICS) + f"{ratio:9.2f}x"
        )
        summary[f"{name}|{flag}"] = {**means, "n": len(rows), "ratio_r10": ratio}
    kinds = sorted({r["type"] for rows in table.values() for r in rows})
    counts = Counter(r["type"] for r in table[next(iter(table))])
    print("\nby question type (R@10 / H@10 / MRR):")
    print(f"{'system':<34}{'digests':>9}" + "".join(f"{f'{k} ({counts[k]})':>22}" for k in kinds))
    for (name, digests), rows in table.items():
        flag = "-" if digests is None else ("yes" if digests else "no")
        cells = []
        for k in kinds:
            m = mean_scores([r for r in rows if r["type"] == k])
            cells.append(f"{m['R@10']:.2f} / {m['H@10']:.2f} / {m['MRR']:.2f}")
            summary[f"{name}|{flag}"][f"{k}:R@10"] = m["R@10"]
        print(f"{name:<34}{flag:>9}" + "".join(f"{c:>22}" for c in cells))
    return summary


def run_quality(args: argparse.Namespace, embedder: Any | None) -> dict[str, Any]:
    path = resolve_data(args.data)
    data = load_dataset(path, args.conversations)
    n_turns = sum(len(s["turns"]) for c in data["conversations"] for s in c["sessions"])
    n_sessions = sum(len(c["sessions"]) for c in data["conversations"])
    types = Counter(q.get("type", "?") for q in data["questions"])
    print(
        f"dataset: {path.name}: {len(data['conversations'])} conversations, {n_sessions} "
        f"sessions, {n_turns} turns, {len(data['questions'])} questions "
        f"({', '.join(f'{n} {t}' for t, n in sorted(types.items()))})"
    )
    if embedder is not None:
        print(f"embedder: {embedder.model_name} ({embedder.dim} dims)")
    print(f"baseline {BASELINE}: FTS5 bm25() over raw turn text (porter), query words OR-ed")
    started = time.perf_counter()
    records = collect(args, data, embedder)
    seconds = time.perf_counter() - started
    summary = print_tables(systems(records))
    print(f"\n({seconds:.1f} s: ingest, digest, embed and recall of {len(records)} records)")
    return {"dataset": path.name, "summary": summary, "collect_seconds": seconds}


# -- latency at scale (--synthetic N) -------------------------------------------------

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


def timed_calls(fn: Callable[[str], Any], queries: Sequence[str]) -> list[float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        fn(query)
        samples.append(time.perf_counter() - started)
    return samples


def run_synthetic(args: argparse.Namespace, embedder: Any, data: dict[str, Any]) -> dict[str, Any]:
    """The latency rows of ``--synthetic N`` (the module doc)."""
    from pmm.embed.sentence import SentenceEmbedder

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
            clear_rrf, clear, clear_before = (
                rrf.clear_query_cache,
                recaller.clear_query_cache,
                before.clear_query_cache,
            )
            rows: list[tuple[str, list[float]]] = []
            encode = recaller._query_vector
            results["query_cache"] = "cleared before each cold row"
            # warm rows: fewer distinct queries than the cache holds, each asked once first
            cache_size = int(getattr(recaller, "_query_cache_size", 256))
            warm = questions[: max(1, min(len(questions), cache_size // 2))]
            warm_queries = [warm[i % len(warm)] for i in range(len(queries))]
            results["warm_distinct_queries"] = len(warm)
            clear()
            rows.append(("query encoder, cold", timed_calls(encode, queries)))
            fp32.clear_query_cache()
            rows.append(("query encoder, cold, fp32", timed_calls(fp32._query_vector, queries)))
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


def main(argv: Sequence[str] | None = None, embedder: Any | None = None) -> int:
    """``embedder``: use this one instead of loading ``--model`` (tests pass a small one)."""
    bench = Bench("recall", __doc__)
    parser = bench.parser
    parser.add_argument("--data", default="chat", help="chat, paraphrase or a JSON path")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    parser.add_argument("--model", default="", help="PMM_EMBEDDING_MODEL (default MiniLM)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    parser.add_argument("--query-encoder", default=None, choices=("fp32", "fp16", "int8"),
                        help="PMM_QUERY_ENCODER (default: the setting's default)")  # fmt: skip
    parser.add_argument("--no-dense", action="store_true", help="no embedder: keyword only")
    parser.add_argument(
        "--digests", choices=("both", "with", "without"), default="both",
        help="run with digests in the index, without, or both (default)",
    )  # fmt: skip
    parser.add_argument(
        "--summaries",
        action="store_true",
        help="with digests: add session summary nodes to recall (PMM_RECALL_SUMMARIES)",
    )
    parser.add_argument("--summary-prior", type=float, default=-0.05)
    parser.add_argument("--summary-children", type=int, default=2)
    parser.add_argument("--synthetic", type=int, default=0, metavar="N", help="latency run")
    parser.add_argument("--queries", type=int, default=300, help="queries per latency row")
    parser.add_argument(
        "--vector-shortlist",
        type=int,
        default=0,
        metavar="N",
        help="search vectors by sign bits first, keeping N candidates for exact scoring",
    )
    parser.add_argument(
        "--no-learned",
        action="store_true",
        help="recall with weighted RRF only, as before the learned fusion (pmm.recall.rerank)",
    )
    args = bench.parse(argv)
    if args.quick:
        args.conversations = args.conversations or 2
        args.no_dense, args.digests = not args.synthetic, "without"
        args.synthetic, args.queries = min(args.synthetic, 5000), min(args.queries, 30)

    if embedder is None and not args.no_dense:
        from pmm.embed.sentence import SentenceEmbedder

        encoder = {} if args.query_encoder is None else {"query_encoder": args.query_encoder}
        model = SentenceEmbedder(args.model, device=args.device, **encoder)
        started = time.perf_counter()
        model.load()
        print(f"model {model.model_name} loaded in {time.perf_counter() - started:.1f} s, "
              f"queries {model.query_encoder}")  # fmt: skip
        embedder = model
    if args.synthetic:
        results = run_synthetic(args, embedder, load_dataset(resolve_data(args.data)))
    else:
        results = run_quality(
            args, None if embedder is None else DiskCachedEmbedder(embedder, None)
        )
    bench.finish(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
