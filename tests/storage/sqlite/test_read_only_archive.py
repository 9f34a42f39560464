"""An archived log the user cannot write: verify, keyword search and export work, nothing is
written (no migration, no index upkeep, no -wal/-shm), and a migration it needs is named."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store_helpers import with_users, without_users

from pmm import Mind

REPO_ROOT = Path(__file__).resolve().parents[3]
NOBODY = 65534

AS_NOBODY = textwrap.dedent(
    """
    import contextlib, io, json, os, sys
    from pmm.cli import main
    from pmm.storage.sqlite import EventStore
    EventStore(":memory:").close()  # import what opening a store imports lazily, as root
    # Every PMM module, as root: a checkout in a 0700 folder is unreadable to nobody, and
    # the commands import some modules lazily (heavy libraries stay lazy inside them).
    import importlib, pkgutil, pmm
    for found in pkgutil.walk_packages(pmm.__path__, "pmm."):
        importlib.import_module(found.name)
    import logging
    class ToCurrentStderr(logging.Handler):  # each command's warnings in its own buffer
        def emit(self, record):
            sys.stderr.write(self.format(record) + "\\n")
    logging.getLogger().addHandler(ToCurrentStderr())
    os.setgroups([]); os.setgid(NOBODY); os.setuid(NOBODY)
    results = []
    for argv in json.loads(sys.argv[1]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:
                rc = exc.code
        results.append({"rc": rc, "out": out.getvalue(), "err": err.getvalue()})
    print(json.dumps(results))
    """
).replace("NOBODY", str(NOBODY))


@pytest.fixture
def archive():
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    folder = Path(tempfile.mkdtemp(prefix="pmm-archive-", dir="/tmp"))
    folder.chmod(0o755)  # root's folder: nobody can read it, not create files in it
    db = folder / "pmm.db"
    with Mind(str(db)) as mind:
        mind.remember_turn("where is the blue passport?", "in the oak drawer", session_id="s")
        mind.store.sync_search_index()
        mind.remember_turn("and the violin?", "the violin is at the harbour", session_id="s")
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.chmod(0o644)  # readable, not writable, by nobody
    yield db
    shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(*commands: list[str]) -> list[dict]:
    done = subprocess.run(
        [sys.executable, "-c", AS_NOBODY, json.dumps(list(commands))],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        cwd="/",
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_archive_verifies_searches_and_exports_without_writing(archive: Path):
    before = archive.read_bytes()
    files_before = sorted(p.name for p in archive.parent.iterdir())
    verify, search, newer, export, add = _as_nobody(
        ["--db", str(archive), "verify"],
        ["--db", str(archive), "search", "passport", "--mode", "keyword", "--json"],
        ["--db", str(archive), "search", "violin", "--mode", "keyword", "--json"],
        ["--db", str(archive), "export", "-"],
        ["--db", str(archive), "redact", "1", "--reason", "must not be written"],
    )
    assert verify["rc"] == 0 and "OK: 4 rows verified" in verify["out"], verify
    hits = json.loads(search["out"])
    assert search["rc"] == 0 and [h["event"]["content"] for h in hits][:1] == [
        "where is the blue passport?"
    ], search
    # Events appended after the file's last index sync are found too (the turn index is
    # completed in memory); the window/date key is not, and that is said once.
    assert "violin" in json.loads(newer["out"])[0]["event"]["content"], newer
    assert "not in the window/date index" in search["err"], search
    key, *lines = [json.loads(line) for line in export["out"].splitlines()]
    assert (
        export["rc"] == 0
        and "chain_key" in key  # the secret of the chain its rows are in, first
        and len(lines) == 4
        and lines[-1]["content"] == ("the violin is at the harbour")
    )
    assert add["rc"] != 0 and "read-only" in add["err"] and "Traceback" not in add["err"]
    assert archive.read_bytes() == before
    assert sorted(p.name for p in archive.parent.iterdir()) == files_before


def test_archive_needing_a_migration_is_named_not_migrated(archive: Path):
    archive.chmod(0o644)
    with sqlite3.connect(archive) as conn:  # as if written by a PMM before window keys
        newest = conn.execute("SELECT version, name FROM schema_migrations WHERE version = 7")
        newest = newest.fetchone()
        conn.execute("DELETE FROM schema_migrations WHERE version >= 7")
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(archive) + suffix).unlink(missing_ok=True)
    before = archive.read_bytes()
    [verify] = _as_nobody(["--db", str(archive), "verify"])
    assert verify["rc"] != 0 and "Traceback" not in verify["err"], verify
    assert f"{newest[0]:04d}_{newest[1]}" in verify["err"] and "read-only" in verify["err"]
    assert archive.read_bytes() == before


def test_archive_before_binary_digests_is_read_without_migrating(archive: Path) -> None:
    """Migrations 0008-0010 are read-compatible: a file written before them (hex text
    digests, window keys with their text) is verified, searched and exported read-only."""
    old = archive.parent / "old.db"
    with Mind(str(old)) as mind:
        mind.remember_turn("where is the blue passport?", "in the oak drawer", session_id="s")
        mind.store.sync_search_index()
    with sqlite3.connect(old) as conn:  # digests as that PMM wrote them: 64 hex characters
        conn.execute("DELETE FROM schema_migrations WHERE version >= 8")
        conn.execute(
            "UPDATE events SET content_sha256 = lower(hex(content_sha256)),"
            " hash = lower(hex(hash)), prev_hash = lower(hex(prev_hash))"
        )
        conn.execute("UPDATE events SET prev_hash = NULL WHERE id = 1")
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(old) + suffix).unlink(missing_ok=True)
    old.chmod(0o644)
    before = old.read_bytes()
    verify, search, export = _as_nobody(
        ["--db", str(old), "verify"],
        ["--db", str(old), "search", "passport", "--mode", "keyword"],
        ["--db", str(old), "export", "-"],
    )
    assert verify["rc"] == 0 and "OK: 2 rows" in verify["out"], verify
    assert search["rc"] == 0 and "passport" in search["out"], search
    rows = [json.loads(line) for line in export["out"].splitlines()]
    assert [r["content"] for r in rows if "chain_key" not in r] == [
        "where is the blue passport?",
        "in the oak drawer",
    ]
    assert old.read_bytes() == before


def test_archive_before_lean_fts_indexes_is_searched_without_migrating(
    archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0011 is read-compatible: a file whose full-text indexes keep positions
    (written at schema 0010) is searched read-only, a word FTS5 splits included."""
    from pmm.storage.sqlite import schema

    every = schema.load_migrations()
    # today's window code needs 0012's column: written with it, then taken out again
    older = with_users([m for m in every if m.version <= 10 or m.version == 12])
    monkeypatch.setattr(schema, "load_migrations", lambda: older)
    old = archive.parent / "old10.db"
    with Mind(str(old)) as mind:
        mind.remember_turn("where is O'Brien's passport?", "in the oak drawer", session_id="s")
        mind.store.sync_search_index()
    monkeypatch.undo()
    without_users(old)
    with sqlite3.connect(old) as conn:
        conn.execute("ALTER TABLE window_state DROP COLUMN body_format")
        conn.execute("DELETE FROM schema_migrations WHERE version = 12")
    conn.close()
    with sqlite3.connect(old) as conn:
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (10,)
        assert (
            "detail"
            not in conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = 'events_fts'"
            ).fetchone()[0]
        )
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(old) + suffix).unlink(missing_ok=True)
    old.chmod(0o644)
    before = old.read_bytes()
    verify, search, split = _as_nobody(
        ["--db", str(old), "verify"],
        ["--db", str(old), "search", "drawer", "--mode", "keyword", "--json"],
        ["--db", str(old), "search", "o'brien", "--mode", "keyword", "--json"],
    )
    assert verify["rc"] == 0 and "OK: 2 rows" in verify["out"], verify
    assert [h["event"]["content"] for h in json.loads(search["out"])][:1] == [
        "in the oak drawer"
    ], search
    assert [h["event"]["content"] for h in json.loads(split["out"])][:1] == [
        "where is O'Brien's passport?"
    ], split
    assert old.read_bytes() == before
