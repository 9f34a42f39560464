"""The quick set: every maintained bench on its small input (``--quick``), one after another.

    python bench/quick.py                        # all of them (minutes; see bench/README.md)
    python bench/quick.py append memory recall   # only these
    python bench/quick.py --json-dir /tmp/quick  # keep each bench's JSON there

Run it before a change that touches a hot path lands: each bench prints PMM beside its
baseline from the same run, and this prints, at the end, each bench's exit status and wall
time. The figures of a quick run are for catching a regression or a broken bench, not for
the documentation (those come from the full runs the pages name). A bench that cannot run
here (no PostgreSQL binaries, no LoCoMo data) says so and counts as skipped, not passed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "storage"))

QUICK: dict[str, tuple[str, ...]] = {
    "append": ("storage.py", "--append"),
    "memory": ("memory.py",),
    "middleware": ("memory.py", "--middleware"),
    "recall": ("recall.py",),
    "recall-latency": ("recall.py", "--synthetic", "5000"),
    "locomo": ("locomo.py",),
    "context": ("context.py", "--no-peers"),
    "peers": ("peers.py",),
    "users": ("users.py",),
    "storage": ("storage.py",),
    "erasure": ("erasure.py",),
    "digest": ("digest.py",),
    "facts": ("facts.py",),
    "gpu": ("gpu.py",),
    "chains": ("chains.py",),
    "erase_stall": ("chains.py", "--erase-stall"),
    "agent_soak": ("agent_soak.py",),
}
"""Name -> the bench script and its extra arguments (``--quick --json PATH`` are added)."""

NEEDS_POSTGRES = {"chains", "erase_stall"}


def command(name: str, json_path: Path) -> list[str]:
    """The command line that runs ``name`` on its small input, writing ``json_path``."""
    script, *extra = QUICK[name]
    return [sys.executable, str(HERE / script), *extra, "--quick", "--json", str(json_path)]


def skip_reason(name: str) -> str | None:
    """Why ``name`` cannot run on this machine, or None."""
    if name in NEEDS_POSTGRES:
        from pg_cluster import find_bindir

        if find_bindir() is None:
            return "no PostgreSQL binaries (set PMM_PG_BIN)"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help=f"benches to run (default: all of {list(QUICK)})")
    parser.add_argument("--json-dir", type=Path, help="keep each bench's JSON here")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(QUICK))
    if unknown:
        parser.error(f"unknown bench {unknown}; known: {', '.join(QUICK)}")
    rows: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="pmm-quick-") as tmp:
        folder = args.json_dir or Path(tmp)
        for name in args.names or list(QUICK):
            why = skip_reason(name)
            if why:
                rows.append((name, f"skipped: {why}", 0.0))
                continue
            print(
                f"\n=== {name}: {' '.join(command(name, folder / f'{name}.json')[1:])}", flush=True
            )
            started = time.perf_counter()
            done = subprocess.run(command(name, folder / f"{name}.json"), check=False)
            seconds = time.perf_counter() - started
            written = (folder / f"{name}.json").exists()
            status = "ok" if done.returncode == 0 and written else f"exit {done.returncode}"
            if done.returncode == 0 and not written:
                status = "skipped: no figures written (see its output)"
            rows.append((name, status, seconds))
    print(f"\n{'bench':<16}{'seconds':>9}  result")
    for name, status, seconds in rows:
        print(f"{name:<16}{seconds:>9.1f}  {status}")
    print(f"{'total':<16}{sum(s for _, _, s in rows):>9.1f}")
    return 1 if any(status.startswith("exit") for _, status, _ in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
