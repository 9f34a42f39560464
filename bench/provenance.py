"""Where and when a bench's figures were measured, for the JSON the benches write (the
documentation's plots and pages cite these fields).

    from provenance import stamp
    record = {**stamp("bench/storage.py --json out.json"), "figures": ...}
"""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import time
from typing import Any


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
