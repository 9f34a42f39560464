"""The fp16, int8 and onnx query encoders (``PMM_QUERY_ENCODER``; onnx on one ONNX Runtime
thread and on two) beside the fp32 one, in one run: encode time per query (p50 / p99, one
caller thread and two) and the cosine between each one's vectors and the fp32 vectors of
the same real questions.

    python bench/fast_query.py                      # LoCoMo's questions when present, + ours
    python bench/fast_query.py --queries 300 --cosines 0   # timing only

Questions: LoCoMo's (``../shared/data/locomo/``, when present; never copied here), the chat
dataset's, and the held-out dataset's. Timing asks every question of both encoders in
turn (the order rotating), as ``Recaller`` does: ``embed_query`` on one torch thread.
"Two threads" runs two caller threads at once, each with its own embedders (they share
the models and their lock, as two recallers of one process do), each asking every text of
its half of every encoder in turn, and reports each call's time, waiting included.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from pmm.embed.sentence import SentenceEmbedder  # noqa: E402

LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo" / "locomo10.json"
ENCODERS: dict[str, dict[str, object]] = {
    "fp32": {"query_encoder": "fp32"},
    "fp16": {"query_encoder": "fp16"},
    "int8": {"query_encoder": "int8"},
    "onnx": {"query_encoder": "onnx"},
    "onnx 2 threads": {"query_encoder": "onnx", "single_text_threads": 2},
}


def questions() -> list[str]:
    """Every real question we have: LoCoMo's (categories 1-4), then the generated sets'."""
    out: list[str] = []
    if LOCOMO.is_file():
        for conv in json.loads(LOCOMO.read_text(encoding="utf-8")):
            out += [qa["question"] for qa in conv["qa"] if qa.get("category") in (1, 2, 3, 4)]
    for name in ("chat_dataset.json", "heldout_dataset.json"):
        data = json.loads((HERE / "data" / name).read_text(encoding="utf-8"))
        out += [q["question"] for q in data["questions"]]
    return list(dict.fromkeys(out))


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(embedder: SentenceEmbedder, text: str) -> float:
    started = time.perf_counter()
    embedder.embed_query(text)
    return (time.perf_counter() - started) * 1e3


def one_thread(encoders: dict[str, SentenceEmbedder], texts: list[str]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in encoders}
    names = list(encoders)
    for i, text in enumerate(texts):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            times[name].append(timed(encoders[name], text))
    return times


def two_threads(encoders: list[str], texts: list[str]) -> dict[str, list[float]]:
    """Two threads at once, each with embedders of its own (sharing the models, as two
    recallers of one process do) asking every text of its half of ``texts`` of each
    encoder in turn."""
    times: dict[str, list[float]] = {name: [] for name in encoders}
    lock = threading.Lock()

    def work(part: list[str]) -> None:
        mine = {name: SentenceEmbedder(**ENCODERS[name]) for name in encoders}  # type: ignore[arg-type]
        for i, text in enumerate(part):
            for name in encoders[i % len(encoders) :] + encoders[: i % len(encoders)]:
                elapsed = timed(mine[name], text)
                with lock:
                    times[name].append(elapsed)

    threads = [threading.Thread(target=work, args=(texts[i::2],)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=400, help="questions timed per row")
    parser.add_argument("--cosines", type=int, default=-1, help="questions compared (-1: all)")
    args = parser.parse_args()
    texts = questions()
    encoders = {e: SentenceEmbedder(**kw) for e, kw in ENCODERS.items()}  # type: ignore[arg-type]
    for embedder in encoders.values():  # load, build the copies and graphs, warm the pages
        for text in texts[:20]:
            embedder.embed_query(text)
    sample = texts[:: max(1, len(texts) // args.queries)][: args.queries]
    rows: dict[str, list[float]] = one_thread(encoders, sample)
    for encoder, samples in two_threads(list(encoders), sample).items():
        rows[f"{encoder}, two threads"] = samples
    print(f"{len(sample)} questions per row (load {os.getloadavg()[0]:.2f} at the end)")
    print(f"{'encoder':>20}  {'p50 ms':>7}  {'p99 ms':>7}  {'mean ms':>7}")
    for name, samples in rows.items():
        print(f"{name:>20}  {percentile(samples, 0.5):7.2f}  {percentile(samples, 0.99):7.2f}  "
              f"{statistics.fmean(samples):7.2f}")  # fmt: skip
    for encoder in ENCODERS:
        if encoder == "fp32":
            continue
        ratio = percentile(rows[encoder], 0.5) / percentile(rows["fp32"], 0.5)
        versus = percentile(rows[encoder], 0.5) / percentile(rows["fp16"], 0.5)
        print(f"{encoder} p50 / fp32: {ratio:.2f}, / fp16: {versus:.2f} (one caller thread)")
    compared = texts if args.cosines < 0 else texts[: args.cosines]
    exact = np.stack([encoders["fp32"].embed_query(t) for t in compared]) if compared else None
    for encoder in ("fp16", "int8", "onnx"):
        if exact is None:
            break
        fast = np.stack([encoders[encoder].embed_query(t) for t in compared])
        cos = np.sum(exact * fast, axis=1)
        print(f"cosine fp32 vs {encoder} over {len(compared)} questions: "
              f"min {cos.min():.5f}, p1 {np.percentile(cos, 1):.5f}, "
              f"p50 {np.median(cos):.7f} (1 - min = {1 - cos.min():.1e})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
