"""Run a child script against a really full disk, for the full-disk tests of ``forget`` and
``compact`` on both backends; each helper skips (saying why) where the machine cannot:

    result = on_small_tmpfs(tmp_path, CHILD, word)      # SQLite: an 8 MiB tmpfs
    result = beside_tiny_tablespace(CHILD, word)        # PostgreSQL: a 64 KiB tablespace

The child runs as ``python -c CHILD FOLDER WORD`` and prints one JSON object last; the
helper returns it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pg_cluster import find_bindir

REPO = Path(__file__).resolve().parents[2]

MOUNTED = textwrap.dedent(
    """
    set -e
    mkdir -p "$1"
    mount -t tmpfs -o size=8m tmpfs "$1"
    PYTHONPATH="$2" "$3" -c "$4" "$1" "$5"
    """
)


def on_small_tmpfs(tmp_path: Path, child: str, word: str) -> dict[str, Any]:
    """``child`` on a real 8 MiB tmpfs, mounted in a private user+mount namespace."""
    argv = ["sh", "-c", MOUNTED, "sh", str(tmp_path / "small"), str(REPO), sys.executable]
    try:
        done = subprocess.run(
            ["unshare", "-rm", *argv, child, word],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("unshare is not installed")
    if "mount" in done.stderr and done.returncode != 0 and not done.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def beside_tiny_tablespace(child: str, word: str) -> dict[str, Any]:
    """``child`` (which starts its own cluster and mounts a 64 KiB tmpfs at FOLDER for a
    tablespace) in a private mount namespace, so that its server sees the tmpfs and
    nothing outside the test does."""
    if sys.platform != "linux":
        pytest.skip("mount namespaces are Linux's")
    if find_bindir() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: set PMM_PG_BIN")
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs the server sees needs root (unshare -m)")
    tiny = Path(tempfile.mkdtemp(prefix="pmm-tiny-"))  # the server's user must reach it
    os.chmod(tiny, 0o755)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests' / 'storage'}"}
    argv = [sys.executable, "-c", child, str(tiny), word]
    try:
        done = subprocess.run(
            ["unshare", "-m", "--propagation", "private", *argv],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
        )
    except FileNotFoundError:
        pytest.skip("unshare is not installed")
    finally:
        shutil.rmtree(tiny, ignore_errors=True)  # the mount went with the namespace
    if done.returncode != 0 and "unshare" in done.stderr and not done.stdout:
        pytest.skip(f"cannot make a mount namespace here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.splitlines()[-1]))
