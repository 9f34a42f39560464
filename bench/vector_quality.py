"""How much of the exact top k the two-pass vector search returns, on real MiniLM vectors.

    python bench/vector_quality.py                       # 200 generated chats, ~100,000 turns
    python bench/vector_quality.py --conversations 20 --queries 500

bench/recall.py --synthetic times the search on random vectors (embedding 100,000 texts on
a small CPU takes minutes), and the recall datasets hold a few hundred turns per store,
which are searched exactly. This script measures the approximation where it applies: it
writes chats with bench/data/make_chat_dataset.py (seeded, not the committed dataset),
embeds every turn and question with the real model (cached in ``--cache``), stores them in
a fresh file and searches with :class:`pmm.embed.index.VectorIndex` twice: exact float32
over every vector (the baseline), and sign bits first, then exact scores for the shortlist
(the default for 20,000+ vectors). Printed: the share of the exact top 10 and top 50
(compared by score, so duplicate texts count once) that the two passes return, and the
dense R@10 of answer turns both ways, for several corpus sizes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

from pmm.embed.index import VectorIndex  # noqa: E402
from pmm.records import NewEvent  # noqa: E402
from pmm.storage.sqlite import EventStore  # noqa: E402

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def vectors(args: argparse.Namespace) -> tuple[dict[str, object], np.ndarray, np.ndarray]:
    data_path = Path(tempfile.gettempdir()) / f"pmm-vq-{args.seed}-{args.conversations}.json"
    if not data_path.exists():
        subprocess.run(
            [sys.executable, str(HERE / "data" / "make_chat_dataset.py"), "--seed", str(args.seed),
             "--conversations", str(args.conversations), "--out", str(data_path)],
            check=True,
        )  # fmt: skip
    data = json.loads(data_path.read_text(encoding="utf-8"))
    cache = args.cache or data_path.with_suffix(".npz")
    if cache.exists():
        saved = np.load(cache)
        return data, saved["T"], saved["Q"]
    from pmm.embed.sentence import SentenceEmbedder

    embedder = SentenceEmbedder(batch_size=128)
    turns = [t["text"] for c in data["conversations"] for s in c["sessions"] for t in s["turns"]]
    questions = [q["question"] for q in data["questions"]][: args.queries]
    started = time.perf_counter()
    turn_vectors, question_vectors = embedder.embed(turns), embedder.embed(questions)
    print(f"embedded {len(turns):,} turns and {len(questions):,} questions "
          f"in {time.perf_counter() - started:.0f} s")  # fmt: skip
    np.savez(cache, T=turn_vectors, Q=question_vectors)
    return data, turn_vectors, question_vectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--cache", type=Path, help="npz of the vectors (default: beside the data)")
    parser.add_argument("--sizes", default="25000,50000,0", help="corpus sizes (0 = all)")
    args = parser.parse_args()
    data, turn_vectors, question_vectors = vectors(args)
    turn_ids = [t["id"] for c in data["conversations"] for s in c["sessions"] for t in s["turns"]]
    questions = data["questions"][: len(question_vectors)]  # type: ignore[index]
    print(f"{'vectors':>8} {'queries':>8} {'top10':>7} {'top50':>7} "
          f"{'R@10 exact':>11} {'R@10 2-pass':>12} {'exact ms':>9} {'2-pass ms':>10}")  # fmt: skip
    for size in (int(s) for s in args.sizes.split(",")):
        n = size or len(turn_vectors)
        with (
            tempfile.TemporaryDirectory(prefix="pmm-vq-") as tmp,
            EventStore(Path(tmp) / "vq.db") as store,
        ):
            events = store.append_many(NewEvent("prompt", f"t{i}", "s", "user") for i in range(n))
            event_of = {turn_ids[i]: e.id for i, e in enumerate(events)}
            store.put_embeddings(
                MODEL, turn_vectors.shape[1],
                [(e.id, turn_vectors[i].tobytes()) for i, e in enumerate(events)],
            )  # fmt: skip
            exact = VectorIndex(store, MODEL, turn_vectors.shape[1], quantized_min=n + 1)
            two_pass = VectorIndex(store, MODEL, turn_vectors.shape[1])
            shares: dict[str, list[float]] = {"top10": [], "top50": []}
            hits: dict[str, list[float]] = {"exact": [], "two": []}
            times: dict[str, list[float]] = {"exact": [], "two": []}
            asked = 0
            for question, vector in zip(questions, question_vectors, strict=False):
                answers = {event_of[a] for a in question["answer_ids"] if a in event_of}
                if not answers:
                    continue
                asked += 1
                found = {}
                for name, index in (("exact", exact), ("two", two_pass)):
                    started = time.perf_counter()
                    found[name] = index.search(vector, 50)
                    times[name].append(time.perf_counter() - started)
                    top = {i for i, _ in found[name][:10]}
                    hits[name].append(len(answers & top) / len(answers))
                truth = [s for _, s in found["exact"]]
                for label, depth in (("top10", 10), ("top50", 50)):
                    floor = truth[depth - 1] - 1e-6
                    got = [s for _, s in found["two"][:depth]]
                    shares[label].append(sum(s >= floor for s in got) / depth)
            mean = statistics.fmean
            top10, top50 = mean(shares["top10"]), mean(shares["top50"])
            exact_ms = statistics.median(times["exact"]) * 1e3
            two_ms = statistics.median(times["two"]) * 1e3
            print(
                f"{n:>8,} {asked:>8,} {top10:>7.4f} {top50:>7.4f} {mean(hits['exact']):>11.4f} "
                f"{mean(hits['two']):>12.4f} {exact_ms:>9.2f} {two_ms:>10.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
