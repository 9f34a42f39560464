"""Where a hybrid recall's time goes at scale: each stage's wall time on the calling thread,
timed with ``perf_counter`` around the functions recall calls (cProfile's own cost inflates
the Python-heavy stages several times over), warm (the query vector cached) and cold (the
query encoded on the query-encoding thread each time, as ``recall_ab.py``'s first row).

    python bench/recall_stages.py --db /tmp/sess/scale.db          # a recall_ab.py file
    python bench/recall_stages.py --db /tmp/sess/scale.db --queries 300

Stages nest: ``learned_order`` holds ``rerank``, ``session ranks``, ``one_copy`` and one
``get_many``; ``get_many`` counts every call (the coverage rows, the rows read while the
query is encoded, the fusion's). ``wait for query vector``: the calling thread blocked on
the query-encoding thread (the query's embedding, then the in-memory dense search that
runs there: ``dense search (query-encoding thread)``, the one stage timed off the calling
thread; ``dense search``: the search where it runs on the calling thread). Prints the load
average: compare runs only at like load.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

spent: collections.defaultdict[str, float] = collections.defaultdict(float)


def timed(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` adding its wall time on the main thread to ``spent[label]``."""

    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            if threading.current_thread() is threading.main_thread():
                spent[label] += time.perf_counter() - started

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="a file recall_ab.py built")
    parser.add_argument("--queries", type=int, default=150)
    args = parser.parse_args()
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    from recall import load_dataset, resolve_data

    import pmm.dream.consolidation as consolidation
    import pmm.recall.recaller as recaller
    import pmm.recall.sources as sources
    from pmm.embed.sentence import SentenceEmbedder
    from pmm.recall.session_rank import SessionRanks
    from pmm.storage.sqlite import EventStore

    searcher = recaller.worker_search

    def worker_search(*args: Any, **kwargs: Any) -> Any:
        search = searcher(*args, **kwargs)
        if search is None:
            return None

        def timed_search(vector: Any) -> Any:  # on the query-encoding thread
            started = time.perf_counter()
            try:
                return search(vector)
            finally:
                spent["dense search (query-encoding thread)"] += time.perf_counter() - started

        return timed_search

    recaller.worker_search = worker_search  # type: ignore[assignment]
    for module, name, label in (
        (recaller, "keyword_ids", "keyword rankers (FTS5)"),
        (recaller, "dense_ids", "dense search"),
        (recaller, "policy_weights", "policy weights"),
        (recaller, "learned_order", "learned_order"),
        (recaller, "fused_hits", "fused_hits"),
        (recaller, "slot_first", "slot_first"),
        (consolidation, "consolidated_hits", "consolidated_hits"),
        (sources, "rerank", "rerank"),
        (sources, "one_copy", "one_copy"),
        (SessionRanks, "ranks", "session ranks"),
        (SessionRanks, "hold", "hold sessions"),
        (EventStore, "get_many", "get_many"),
        (Future, "result", "wait for query vector"),
    ):
        setattr(module, name, timed(label, getattr(module, name)))
    questions = [q["question"] for q in load_dataset(resolve_data("chat"))["questions"]]
    pool = questions[20 : 20 + args.queries]
    # every query's vector held for the warm row (the default LRU keeps 256)
    recall = recaller.Recaller(
        EventStore(args.db), SentenceEmbedder(), query_cache_size=max(256, len(pool))
    )
    for query in pool:  # the model, the vectors, the sessions held
        recall.recall(query, k=10, mode="hybrid")
    for cold in (False, True):
        spent.clear()
        took = []
        for query in pool:
            if cold:
                recall.clear_query_cache()
            started = time.perf_counter()
            recall.recall(query, k=10, mode="hybrid")
            took.append(time.perf_counter() - started)
        took.sort()
        row = "cold (query encoded each time)" if cold else "warm (query vector cached)"
        print(f"\n{row}: p50 {took[len(took) // 2] * 1e3:.1f} ms, mean "
              f"{sum(took) / len(took) * 1e3:.1f} ms; mean ms per recall by stage:")  # fmt: skip
        for label, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
            print(f"  {seconds / len(pool) * 1e3:6.2f}  {label}")
    print("\nload " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
