"""What PMM_COMPRESS_AFTER costs where it runs without a dream: appends while the
background worker compresses when idle, and Mind.close().

    python bench/compress_passing.py                 # 20,000 old texts, 300 appends
    python bench/compress_passing.py --old 5000 --appends 100

Builds one file of ``--old`` texts dated 40 days ago, copies it per case, and in each case
opens a Mind, appends ``--appends`` turns one by one (timing each ``remember``, with a
short pause between, as a chat would), then times ``close()``. The baseline is the same
run with the setting unset; ``compress_after="30d"`` is the measured case. Two modes:
background digests (the worker's idle pass compresses) and summaries off (only close
does). Prints per-append p50/p99/max (ms), close seconds and texts compressed, each beside
its baseline; noisy on a shared machine, so read ratios and ranges. Always exits 0.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from pmm import Mind
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore


def text(i: int) -> str:
    return (
        f"Turn {i}: we talked about the kitchen renovation budget, the tiles for the floor "
        f"and whether the plumber can come on day {i % 28 + 1}; note {i * 7 % 101}."
    )


def build(path: Path, old: int) -> None:
    when = datetime.now(UTC) - timedelta(days=40)
    with EventStore(path) as store:
        for start in range(0, old, 1000):
            events = store.append_many(
                [
                    NewEvent("prompt", text(i), "s", "user", None, when)
                    for i in range(start, min(old, start + 1000))
                ]
            )
            # digested already: the worker is idle, as in a log that has caught up
            store.set_digests((e.id, "kitchen plans", ["kitchen"], "heuristic") for e in events)


def blobs(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        sql = "SELECT count(*) FROM events WHERE typeof(content) = 'blob'"
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def run(path: Path, appends: int, settings: dict[str, Any]) -> dict[str, float]:
    latencies: list[float] = []
    mind = Mind(path, **settings)
    for i in range(appends):
        started = time.perf_counter()
        mind.remember(text(10**6 + i), role="user", session_id="s")
        latencies.append((time.perf_counter() - started) * 1000)
        time.sleep(0.005)
    started = time.perf_counter()
    mind.close()
    close_s = time.perf_counter() - started
    latencies.sort()
    return {
        "p50": statistics.median(latencies),
        "p99": latencies[max(0, round(0.99 * len(latencies)) - 1)],
        "max": latencies[-1],
        "close_s": close_s,
        "compressed": blobs(path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=int, default=20_000)
    parser.add_argument("--appends", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        seed = folder / "seed.db"
        build(seed, args.old)
        modes = {
            "background digests": {
                "enable_summary": True,
                "summary_mode": "background",
                "summarizer": "heuristic",
            },
            "summaries off": {"enable_summary": False, "enable_embeddings": False},
        }
        print(f"{args.old:,} old texts, {args.appends} appends; baseline = setting unset")
        for name, settings in modes.items():
            results = {}
            for case, after in (("baseline", ""), ("30d", "30d")):
                path = folder / f"{name.replace(' ', '_')}_{case}.db"
                shutil.copy(seed, path)
                results[case] = run(path, args.appends, {**settings, "compress_after": after})
            base, measured = results["baseline"], results["30d"]
            print(f"\n{name}:")
            for key, label in (("p50", "append p50"), ("p99", "append p99"),
                               ("max", "append max"), ("close_s", "close")):  # fmt: skip
                unit = "s" if key == "close_s" else "ms"
                ratio = measured[key] / base[key] if base[key] else float("nan")
                print(
                    f"  {label:<11} {measured[key]:8.3f} {unit:<2}  baseline {base[key]:8.3f}"
                    f" {unit:<2}  ratio {ratio:5.2f}"
                )
            print(
                f"  texts compressed after close: {measured['compressed']:,} of {args.old:,}"
                f" (baseline {base['compressed']:,})"
            )


if __name__ == "__main__":
    main()
