"""One shape for every bench: arguments, timing, provenance (`stamp`), tables and JSON output.

    from harness import Bench

    bench = Bench("context", __doc__)              # name = the script's stem
    bench.parser.add_argument("--budgets", default="500,1000,2000,4000")
    args = bench.parse(argv)                       # + --json PATH, --quick, --seed N
    rows = [["1000", "0.81", "0.55"]]
    bench.table(["budget", "PMM", "baseline"], rows)   # printed, aligned
    bench.finish({"figures": {...}})               # prints the wall time; with --json,
                                                   # writes figures + provenance there

Every maintained bench prints PMM beside a baseline measured in the same run and, given
``--json``, writes ``{"bench": "bench/NAME.py", "args", "seconds", **provenance, **figures}``: the
documentation's tables and plots are drawn from these files (``docs/benchmarks/data/``).
``--quick`` asks a bench for its small input (what ``bench/quick.py`` and the bench tests
run); each bench says in its docstring what it shrinks.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "data"
"""Where the committed JSON of each bench lives, beside the pages that plot it."""


class Bench:
    """Arguments, timing, provenance and output of one bench run."""

    def __init__(self, name: str, doc: str | None, seed: int = 1) -> None:
        self.name = name
        first = (doc or name).strip().split("\n")[0]
        self.parser = argparse.ArgumentParser(
            prog=f"bench/{name}.py",
            description=first,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self.parser.add_argument(
            "--json", type=Path, metavar="PATH", help="also write the figures here as JSON"
        )
        self.parser.add_argument(
            "--quick", action="store_true", help="a small input: seconds, for tests and CI"
        )
        self.parser.add_argument("--seed", type=int, default=seed, help=f"random seed ({seed})")
        self.args: argparse.Namespace | None = None
        self._argv: list[str] = []
        self._started = time.perf_counter()

    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """Parse ``argv`` (default: the command line) and start the clock."""
        self._argv = list(sys.argv[1:] if argv is None else argv)
        self.args = self.parser.parse_args(self._argv)
        self._started = time.perf_counter()
        return self.args

    @property
    def seconds(self) -> float:
        """Wall time since :meth:`parse`."""
        return time.perf_counter() - self._started

    @staticmethod
    def table(header: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> str:
        """Print (and return) ``rows`` under ``header`` as an aligned text table."""
        cells = [[str(c) for c in header], *[[_cell(c) for c in row] for row in rows]]
        widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
        lines = [title] if title else []
        for n, row in enumerate(cells):
            cells_widths = zip(row, widths, strict=False)
            lines.append("  ".join(c.rjust(w) if n else c.ljust(w) for c, w in cells_widths))
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        text = "\n".join(lines)
        print(text, flush=True)
        return text

    def finish(self, figures: dict[str, Any]) -> dict[str, Any]:
        """Print the wall time and, with ``--json``, write ``figures`` with provenance."""
        command = " ".join([f"python bench/{self.name}.py", *self._argv])
        record = {
            "bench": f"bench/{self.name}.py",
            "args": {k: _plain(v) for k, v in vars(self.args or argparse.Namespace()).items()},
            "seconds": round(self.seconds, 1),
            **stamp(command),
            **figures,
        }
        print(f"{self.name}: {record['seconds']} s", flush=True)
        path = getattr(self.args, "json", None)
        if path is not None:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n", encoding="utf-8")
            print(f"wrote {path}", flush=True)
        return record


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``samples`` by rank (``nan`` when there are none)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def nearest_rank(samples: Sequence[float], q: float) -> float:
    """The ``q`` percentile (0..100) of ``samples`` by nearest rank (``nan`` when none)."""
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1))]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    return value


def stamp(command: str) -> dict[str, Any]:
    """The command, the commit (``+dirty`` when pmm/ or bench/ has changes), the UTC time,
    the machine and its load average when the figures were taken."""
    git = ["git", "-C", os.path.dirname(os.path.abspath(__file__))]
    commit = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no", "--", "pmm", "bench"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "command": command,
        "commit": commit + ("+dirty" if dirty else ""),
        "measured": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        "load_average": round(os.getloadavg()[0], 2),
    }
