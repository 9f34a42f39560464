"""A full disk: a clear PMM error naming the cause, and every acknowledged turn survives.

Three ways to fill it: SQLite's ``max_page_count`` (the file reaches its size limit during
an INSERT), ``RLIMIT_FSIZE`` in a child process (the -wal file cannot grow at COMMIT, where
SQLite rolls the transaction back itself), and a real 512 KiB tmpfs where the machine lets
an unprivileged user namespace mount one (ENOSPC).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pmm import Mind
from pmm.errors import DatabaseError, DiskFullError
from pmm.storage.sqlite import EventStore

REPO = Path(__file__).resolve().parents[3]
USER = "hello there, this is a fairly long user turn about the garden and the weather " * 4
AI = "a reply that is long enough to take some room in the file, again and again " * 4


def fill_until_full(mind: Mind, limit: int = 10_000) -> tuple[int, Exception]:
    acknowledged = 0
    for i in range(limit):
        try:
            mind.remember_turn(f"{USER} {i}", AI, session_id="s")
        except DatabaseError as exc:
            return acknowledged, exc
        acknowledged += 2
    raise AssertionError("the disk never filled up")


def test_size_limit_gives_a_clear_error_and_keeps_every_turn(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(
        db, enable_summary=True, summary_mode="inline", summarizer="heuristic", dream_on_close=False
    ) as mind:
        mind.remember_turn("before the limit", "ok", session_id="s")
        conn = mind.store._conn  # the limit is per connection: set it on PMM's own
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 4}")
        acknowledged, error = fill_until_full(mind)
        assert isinstance(error, DiskFullError)
        assert "disk is full" in str(error) and "acknowledged" in str(error)
        assert "rollback" not in str(error)
        # Reads go on while the disk is full, and a second failure is as clear as the first.
        assert mind.store.count() == acknowledged + 2
        more, again = fill_until_full(mind)
        assert isinstance(again, DiskFullError) and more <= 2
        acknowledged += more
    with EventStore(db) as store:  # a new connection has no limit: space was freed
        report = store.verify()
        assert report.ok and report.rows == acknowledged + 2
        store.append("prompt", "after the disk was freed", session_id="s", role="user")
        assert store.verify().ok


CHILD = textwrap.dedent(
    """
    import json, os, resource, signal, sys
    from pmm import Mind
    from pmm.errors import PMMError
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
    db = sys.argv[1]
    acknowledged, errors = 0, []
    with Mind(
        db, enable_summary=True, summary_mode="inline", summarizer="heuristic", dream_on_close=False
    ) as mind:
        for i in range(10):
            mind.remember_turn("warm up " * 40, "ok " * 40, session_id="s")
            acknowledged += 2
        limit = max(os.path.getsize(db), os.path.getsize(db + "-wal")) + 16384
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        for i in range(5000):
            try:
                mind.remember_turn("turn %d " % i * 40, "reply " * 40, session_id="s")
                acknowledged += 2
            except PMMError as exc:
                errors.append([type(exc).__name__, str(exc)])
                if len(errors) == 3:
                    break
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
    print(json.dumps({"acknowledged": acknowledged, "errors": errors}))
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE semantics are Linux's")
def test_wal_that_cannot_grow_at_commit_gives_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    assert len(result["errors"]) == 3
    for name, message in result["errors"]:
        assert name in ("DiskFullError", "DatabaseError")
        assert "full" in message and "cannot rollback" not in message
    with EventStore(db) as store:
        report = store.verify()
        assert report.ok and report.rows == result["acknowledged"]


TMPFS_CHILD = textwrap.dedent(
    """
    set -e
    mkdir -p "$1"
    mount -t tmpfs -o size=512k tmpfs "$1"
    PYTHONPATH="$2" "$3" -c "$4" "$1/pmm.db"
    """
)


def test_a_real_full_file_system(tmp_path: Path) -> None:
    """ENOSPC on a 512 KiB tmpfs, mounted in a private user+mount namespace."""
    script = textwrap.dedent(
        """
        import json, sys
        from pmm import Mind
        from pmm.errors import PMMError
        from pmm.storage.sqlite import EventStore
        acknowledged, errors = 0, []
        with Mind(sys.argv[1], enable_summary=True, summary_mode="inline",
                  summarizer="heuristic", dream_on_close=False) as mind:
            for i in range(5000):
                try:
                    mind.remember_turn("turn %d " % i * 40, "reply " * 40, session_id="s")
                    acknowledged += 2
                except PMMError as exc:
                    errors.append([type(exc).__name__, str(exc)])
                    if len(errors) == 2:
                        break
        with EventStore(sys.argv[1]) as store:
            report = store.verify()
        print(json.dumps({"acknowledged": acknowledged, "errors": errors,
                          "ok": report.ok, "rows": report.rows}))
        """
    )
    mount = tmp_path / "small"
    try:
        done = subprocess.run(
            ["unshare", "-rm", "sh", "-c", TMPFS_CHILD, "sh", mount, REPO, sys.executable, script],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("unshare is not installed")
    if "mount" in done.stderr and done.returncode != 0 and not done.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["errors"], "the 512 KiB file system never filled up"
    for name, message in result["errors"]:
        assert name == "DiskFullError" and "disk is full" in message
    assert result["ok"] and result["rows"] == result["acknowledged"]
