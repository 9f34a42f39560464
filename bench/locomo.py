"""Recall on LoCoMo (real-length conversations, public): PMM's modes and rankers beside
plain BM25, under the shared retrieval protocol (``../shared/data/locomo/README.md``).

    python bench/locomo.py                          # all 10 conversations, 1,536 questions
    python bench/locomo.py --conversations 2 --limit 50      # a short run
    python bench/locomo.py --quick                  # 1 conversation, 20 questions, no MiniLM
    python bench/locomo.py --json out.json --lists /tmp/pmm-locomo/lists.json
    python bench/locomo_cv.py --lists /tmp/pmm-locomo/lists.json   # folds and levers

Each conversation goes into a fresh :class:`pmm.Mind` (a temporary SQLite file, embeddings
on, MiniLM): one event per turn, text ``"{speaker}: {text}"`` (+ ``" [shares {caption}]"``),
the session's date as the event's ``ts`` (recall's date key), one PMM session per LoCoMo
session, the first speaker as ``user`` and the second as ``assistant``, ``dia_id`` in
``meta``. Every question of categories 1-4 is asked across the whole memory
(``session_id=None``). Printed, overall and per category, with recall@k, hit@k, all@k
(k = 1, 5, 10, 25) and MRR (top 50):

- ``bm25``: plain BM25 over the raw turns (``bm25s``, see :class:`locomo_data.PlainBM25`);
- each of ``Mind.recall``'s modes (``hybrid`` is the default with embeddings on);
- each of the engine's rankers alone (``ranker:turn``, ``ranker:window``, ``ranker:dense``)
  as the recaller ranks them (``Recaller.ranker_lists``).

Vectors are cached on disk by text hash (``--cache``, default a folder under the system's
temp dir) so that a second run embeds nothing. ``--lists PATH`` writes every question's
lists (modes and rankers, 100 deep) for ``bench/locomo_cv.py``, which chooses the fusion
and the levers by cross-validation offline. Without ``../shared/data/locomo/`` (or
``--data``) the run is skipped with a message and exits 0.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from harness import Bench  # noqa: E402
from locomo_data import (  # noqa: E402
    CATEGORIES,
    KS,
    Conversation,
    PlainBM25,
    load_locomo,
    mean_table,
    scores,
)

from pmm import Mind  # noqa: E402
from pmm.recall.fusion import EVIDENCE_HITS, lexical_coverage  # noqa: E402
from pmm.recall.recaller import (  # noqa: E402
    RECALL_MODES,
    Recaller,
)
from pmm.recall.sources import query_idf, searchable  # noqa: E402
from pmm.records import NewEvent  # noqa: E402
from pmm.settings import Settings  # noqa: E402
from pmm.text.window_keys import is_temporal  # noqa: E402
from pmm.text.words import words  # noqa: E402

DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "locomo"
DEPTH = 100
"""How deep each ranker's list is recorded (for offline fusion at other depths)."""
K = 50
"""The ``k`` each mode is asked for (metrics read the top 50; recall's rankers then read
their default depth, 50)."""
BASELINE = "bm25"


class DiskCachedEmbedder:
    """The model's own vectors, each text embedded once across runs: kept in
    ``folder/<model>.npz`` keyed by the text's sha256."""

    def __init__(self, inner: Any, folder: Path) -> None:
        self.inner = inner
        self.model_name: str = inner.model_name
        self.path = folder / (self.model_name.replace("/", "_") + ".npz")
        self.cache: dict[str, npt.NDArray[np.float32]] = {}
        if self.path.exists():
            with np.load(self.path) as saved:
                self.cache = {k: saved[k] for k in saved.files}
        self.added = 0

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}
        if todo:
            vectors = self.inner.embed(list(todo.values()))
            for key, vector in zip(todo, vectors, strict=True):
                self.cache[key] = np.asarray(vector, dtype=np.float32)
            self.added += len(todo)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.cache[k] for k in keys])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """A recall query's vector through the inner embedder's query encoder (cached
        apart from the model's own vectors when that encoder is not fp32)."""
        encoder = getattr(self.inner, "query_encoder", "fp32")
        if encoder == "fp32":
            return self.embed([text])[0]
        key = f"{encoder}_" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        if key not in self.cache:
            self.cache[key] = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            self.added += 1
        return self.cache[key]

    def save(self) -> None:
        if self.added:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp.npz")
            np.savez(tmp, **self.cache)
            tmp.replace(self.path)
            self.added = 0


def ingest(mind: Mind, conv: Conversation) -> dict[int, str]:
    """Every turn into ``mind`` (one transaction per session); event id -> dia_id."""
    first = conv.speakers[0]
    out: dict[int, str] = {}
    for session in sorted({t.session for t in conv.turns}):
        turns = [t for t in conv.turns if t.session == session]
        entries = [
            NewEvent(
                "prompt" if t.speaker == first else "response",
                t.text,
                f"{conv.sample_id}-s{session}",
                "user" if t.speaker == first else "assistant",
                {"dia_id": t.dia_id, "speaker": t.speaker},
                t.date,
            )
            for t in turns
        ]
        for event, turn in zip(mind.remember_many(entries), turns, strict=True):
            out[event.id] = turn.dia_id
    return out


def collect(
    convs: list[Conversation],
    embedder: Any | None,
    limit: int,
    tmp: Path,
    depth: int = DEPTH,
) -> list[dict[str, Any]]:
    """One record per question: its lists (dia_ids, best first) from every mode, every
    ranker and the baseline, the fusion weights the engine chose, and mode latencies.
    ``depth``: how deep each ranker's list is recorded."""
    records: list[dict[str, Any]] = []
    modes = [m for m in RECALL_MODES if embedder is not None or m == "keyword"]
    for conv in convs:
        questions = conv.questions[:limit] if limit else conv.questions
        bm25 = PlainBM25([t.dia_id for t in conv.turns], [t.text for t in conv.turns])
        path = tmp / f"{conv.sample_id}.db"
        with Mind(
            str(path),
            enable_embeddings=embedder is not None,
            summary_mode="deferred",
            embedder=embedder,
        ) as mind:
            to_dia = ingest(mind, conv)
            started = time.perf_counter()
            mind.dream()  # embeds every turn
            embed_s = time.perf_counter() - started
            recaller: Recaller = mind._get_recaller()
            for q in questions:
                rec: dict[str, Any] = {
                    "conversation": conv.sample_id,
                    "question": q.question,
                    "category": q.category,
                    "evidence": list(q.evidence),
                    "modes": {},
                    "ms": {},
                }
                for mode in modes:
                    t0 = time.perf_counter()
                    hits = mind.recall(q.question, k=K, mode=mode)
                    rec["ms"][mode] = (time.perf_counter() - t0) * 1000
                    rec["modes"][mode] = [to_dia[h.event.id] for h in hits]
                lists = recaller.ranker_lists(q.question, depth=depth)
                rec["rankers"] = {r: [to_dia[i] for i in ids] for r, ids in lists.items()}
                rec["modes"][BASELINE] = bm25.search(q.question, depth)
                rec["weights"] = recaller.fusion_weights(q.question)
                rec["temporal"] = is_temporal(words(q.question.lower()))
                top = mind.store.get_many(lists["turn"][:EVIDENCE_HITS]).values()
                rec["coverage"] = lexical_coverage(
                    q.question, (searchable(e) for e in top), query_idf(mind.store, q.question)
                )
                records.append(rec)
        print(f"  {conv.sample_id}: {len(conv.turns)} turns, {len(questions)} questions "
              f"(embedding {embed_s:.1f} s)", flush=True)  # fmt: skip
        if isinstance(embedder, DiskCachedEmbedder):
            embedder.save()
    return records


def systems(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, dict[str, float]]]]:
    """system name -> (category, scores) per question."""
    out: dict[str, list[tuple[int, dict[str, float]]]] = {}
    # a ranker that found nothing anywhere (digest, without digests) is left out
    used = {r for rec in records for r, ids in rec["rankers"].items() if ids}
    for rec in records:
        rankers = {f"ranker:{r}": ids for r, ids in rec["rankers"].items() if r in used}
        named = {**rec["modes"], **rankers}
        for name, ids in named.items():
            out.setdefault(name, []).append((rec["category"], scores(ids, rec["evidence"])))
    order = [BASELINE, *RECALL_MODES]
    return dict(sorted(out.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order
                                                    else len(order), kv[0])))  # fmt: skip


def print_tables(table: dict[str, dict[str, dict[str, float]]]) -> None:
    base = table[BASELINE]["all"]["R@10"]
    cols = [*(f"R@{k}" for k in KS), *(f"H@{k}" for k in KS), "A@10", "MRR"]
    n = int(next(iter(table.values()))["all"]["n"])
    print(f"\nall {n} questions:")
    print(f"{'system':<16}" + "".join(f"{c:>7}" for c in cols) + f"{'R@10/bm25':>11}")
    for name, groups in table.items():
        m = groups["all"]
        print(f"{name:<16}" + "".join(f"{m[c]:7.3f}" for c in cols)
              + f"{m['R@10'] / base if base else float('nan'):10.2f}x")  # fmt: skip
    for metric in ("R@10", "R@25", "H@10", "MRR"):
        print(f"\n{metric} by category (multi-hop also all@10 / all@25):")
        counts = {c: int(g["n"]) for c, g in table[BASELINE].items()}
        head = "".join(f"{f'{c} ({counts[c]})':>22}" for c in CATEGORIES.values() if c in counts)
        print(f"{'system':<16}{'all':>8}{head}")
        for name, groups in table.items():
            cells = []
            for cat in CATEGORIES.values():
                if cat not in groups:
                    continue
                g = groups[cat]
                extra = f" ({g['A@10']:.2f}/{g['A@25']:.2f})" if cat == "multi-hop" else ""
                cells.append(f"{g[metric]:.3f}{extra}")
            print(f"{name:<16}{groups['all'][metric]:8.3f}" + "".join(f"{c:>22}" for c in cells))


def main(argv: Sequence[str] | None = None, embedder: Any | None = None) -> int:
    """``embedder``: use this one instead of MiniLM (tests pass a small one)."""
    bench = Bench("locomo", __doc__)
    parser = bench.parser
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="folder holding locomo10.json, or the file")  # fmt: skip
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    parser.add_argument("--limit", type=int, default=0, help="only N questions per conversation")
    parser.add_argument("--no-dense", action="store_true", help="no embeddings: keyword only")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "pmm-locomo-vectors")  # fmt: skip
    parser.add_argument("--lists", type=Path, help="write every question's lists here")
    parser.add_argument("--depth", type=int, default=DEPTH,
                        help="how deep each ranker's list is recorded (the ceiling)")  # fmt: skip
    parser.add_argument("--query-encoder", default=Settings().query_encoder,
                        choices=("fp32", "fp16", "int8"),
                        help="PMM_QUERY_ENCODER: the model that embeds questions")  # fmt: skip
    args = bench.parse(argv)
    if args.quick:
        args.conversations, args.limit = args.conversations or 1, args.limit or 20
        args.no_dense = True

    path = args.data / "locomo10.json" if args.data.is_dir() else args.data
    if not path.is_file():
        print(
            f"LoCoMo is not here ({path}): skipped. It is CC BY-NC 4.0 and never copied "
            f"into the repository; put locomo10.json in {DEFAULT_DATA} or pass --data."
        )
        return 0
    convs = load_locomo(path)
    if args.conversations:
        convs = convs[: args.conversations]
    cached: DiskCachedEmbedder | None = None
    if embedder is None and not args.no_dense:
        from pmm.embed.sentence import SentenceEmbedder

        model = SentenceEmbedder(query_encoder=args.query_encoder)
        embedder = cached = DiskCachedEmbedder(model, args.cache)
    n_turns = sum(len(c.turns) for c in convs)
    print(f"LoCoMo ({path}): {len(convs)} conversations, {n_turns} turns; "
          f"embedder {embedder.model_name if embedder is not None else 'none'}, "
          f"queries {args.query_encoder}")  # fmt: skip
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pmm-locomo-") as tmp:
        try:
            records = collect(convs, embedder, args.limit, Path(tmp), args.depth)
        finally:
            if cached is not None:
                cached.save()
    seconds = time.perf_counter() - started
    table = {name: mean_table(rows) for name, rows in systems(records).items()}
    print_tables(table)
    latency = {mode: statistics.median(r["ms"][mode] for r in records) for mode in records[0]["ms"]}
    print("\nrecall p50 (ms, k=50, whole conversation): "
          + ", ".join(f"{m} {v:.1f}" for m, v in latency.items()))  # fmt: skip
    print(f"({seconds:.0f} s for {len(records)} questions)")
    bench.finish({"data": path.name, "questions": len(records), "tables": table,
                  "latency_p50_ms": latency})  # fmt: skip
    if args.lists:
        args.lists.parent.mkdir(parents=True, exist_ok=True)
        args.lists.write_text(json.dumps(records) + "\n", encoding="utf-8")
        print(f"wrote {args.lists}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
