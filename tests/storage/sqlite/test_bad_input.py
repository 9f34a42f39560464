"""Bad input raises a PMMError subclass with a helpful message and changes nothing stored."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from store_helpers import REPO_ROOT, filled_store, snapshot

from pmm.errors import (
    DatabaseError,
    InvalidInputError,
    NotADatabaseError,
    PMMError,
    ReadOnlyDatabaseError,
)
from pmm.records import NewEvent
from pmm.storage.sqlite import DEFAULT_MAX_CONTENT_BYTES, EventStore


@pytest.fixture
def store(tmp_path: Path):
    with filled_store(tmp_path / "pmm.db", 3) as s:
        yield s


class Opaque:
    pass


BAD_APPENDS = [
    pytest.param({"content": 42}, "content must be a str", id="int-content"),
    pytest.param({"content": b"bytes"}, "content must be a str", id="bytes-content"),
    pytest.param({"content": None}, "content must be a str", id="none-content"),
    pytest.param({"content": "a\x00b"}, "NUL", id="nul-content"),
    pytest.param({"content": "bad \ud800 half"}, "not valid Unicode", id="surrogate-content"),
    pytest.param({"content": "x" * 10_000_000}, "over the", id="10MB-content"),
    pytest.param({"content": "é" * (DEFAULT_MAX_CONTENT_BYTES // 2 + 1)}, "bytes", id="utf8-size"),
    pytest.param({"meta": {"tags": {"a", "b"}}}, "JSON-serialisable", id="set-meta"),
    pytest.param({"meta": {"obj": Opaque()}}, "JSON-serialisable", id="object-meta"),
    pytest.param({"meta": {"x": float("nan")}}, "JSON-serialisable", id="nan-meta"),
    pytest.param({"meta": {"x": float("inf")}}, "JSON-serialisable", id="inf-meta"),
    pytest.param({"meta": {"x": "\udfff"}}, "JSON-serialisable", id="surrogate-meta"),
    pytest.param({"meta": ["not", "a", "dict"]}, "meta must be a dict", id="list-meta"),
    pytest.param({"meta": "{}"}, "meta must be a dict", id="str-meta"),
    pytest.param({"meta": {1: "int key"}}, "str keys", id="int-key-meta"),
    pytest.param({"kind": None}, "kind", id="none-kind"),
    pytest.param({"kind": ""}, "kind", id="empty-kind"),
    pytest.param({"kind": 5}, "kind", id="int-kind"),
    pytest.param({"kind": "ev\x00il"}, "kind", id="nul-kind"),
    pytest.param({"kind": "\ud800"}, "kind", id="surrogate-kind"),
    pytest.param({"session_id": ""}, "session_id", id="empty-session"),
    pytest.param({"session_id": 7}, "session_id", id="int-session"),
    pytest.param({"session_id": "\ud800"}, "session_id", id="surrogate-session"),
    pytest.param({"role": "us\x00er"}, "role", id="nul-role"),
    pytest.param({"role": "\udc80"}, "role", id="surrogate-role"),
]


@pytest.mark.parametrize(("change", "message"), BAD_APPENDS)
def test_bad_append_is_refused_and_nothing_changes(store: EventStore, change, message):
    before = snapshot(store.path)
    args = {"kind": "event", "content": "fine", **change}
    kind, content = args.pop("kind"), args.pop("content")
    with pytest.raises(InvalidInputError) as info:
        store.append(kind, content, **args)
    assert isinstance(info.value, PMMError)
    assert message in str(info.value)
    assert snapshot(store.path) == before
    # and the same entry inside a batch sinks the whole batch
    with pytest.raises(InvalidInputError):
        store.append_many([NewEvent("event", "ok"), NewEvent(kind, content, **args)])
    assert snapshot(store.path) == before
    assert store.verify().ok
    assert store.append("event", "still works").id == before[2] + 1


def test_content_limit_is_configurable(tmp_path: Path):
    with EventStore(tmp_path / "small.db", max_content_bytes=10) as s:
        assert s.append("event", "x" * 10).id == 1
        with pytest.raises(InvalidInputError, match="11 bytes, over the 10-byte limit"):
            s.append("event", "x" * 11)
        assert s.count() == 1


def test_unicode_content_round_trips(store: EventStore):
    text = "emoji \U0001f600, RTL \u05e9\u05dc\u05d5\u05dd, combining e\u0301, \u2028 and tab\t"
    ev = store.append("event", text, meta={"ключ": "значение", "n": None})
    assert store.get(ev.id).content == text
    assert store.get(ev.id).meta == {"ключ": "значение", "n": None}
    assert store.verify().ok


def test_path_in_missing_folder(tmp_path: Path):
    missing = tmp_path / "no" / "such" / "dir" / "pmm.db"
    with pytest.raises(DatabaseError, match="does not exist") as info:
        EventStore(missing)
    assert "mkdir" in str(info.value)
    assert not (tmp_path / "no").exists()


def test_directory_as_path(tmp_path: Path):
    folder = tmp_path / "a_folder.db"
    folder.mkdir()
    with pytest.raises(DatabaseError, match="is a folder"):
        EventStore(folder)
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(os.urandom(8192), id="random-bytes"),
        pytest.param(b"this is a text file, not a database\n" * 20, id="text"),
        pytest.param(b"SQLite format 3\x00" + b"\xff" * 200, id="bad-header"),
        pytest.param(json.dumps({"events": [1, 2]}).encode(), id="json"),
    ],
)
def test_file_that_is_not_sqlite(tmp_path: Path, data: bytes):
    path = tmp_path / "notes.db"
    path.write_bytes(data)
    with pytest.raises(NotADatabaseError) as info:
        EventStore(path)
    assert "not a PMM/SQLite database" in str(info.value)
    assert path.read_bytes() == data  # untouched
    assert not list(tmp_path.glob("notes.db.bak-*"))


# -- read-only files -------------------------------------------------------------------

READONLY_CHECK = textwrap.dedent(
    """
    import json, os, sys
    # Import everything first: the interpreter's own files may not be readable by the
    # unprivileged user (e.g. a Python under /root). Then drop root for good.
    from pmm.errors import ReadOnlyDatabaseError
    from pmm.storage.sqlite import EventStore
    EventStore(":memory:").close()  # loads what opening a store imports lazily
    uid = int(sys.argv[2])
    if os.geteuid() == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        except OSError as exc:
            print(json.dumps({"skip": f"cannot switch to uid {uid}: {exc}"}))
            sys.exit(0)
    if not os.access(os.path.dirname(sys.argv[1]), os.X_OK):
        print(json.dumps({"skip": f"uid {uid} cannot reach {sys.argv[1]}"}))
        sys.exit(0)
    try:
        EventStore(sys.argv[1]).append("event", "must not be stored")
        print(json.dumps({"error": None}))
    except ReadOnlyDatabaseError as exc:
        print(json.dumps({"error": "ReadOnlyDatabaseError", "message": str(exc)}))
    except Exception as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
    """
)

NOBODY = 65534


def _run_unprivileged(db: Path) -> dict[str, str | None]:
    result = subprocess.run(
        [sys.executable, "-c", READONLY_CHECK, str(db), str(NOBODY)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        cwd=db.parent,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    if "skip" in outcome:
        pytest.skip(outcome["skip"])
    return outcome


@pytest.fixture
def shared_dir():
    """A folder the unprivileged user can reach (pytest's tmp_path is root-only)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user; see the chmod test instead")
    folder = Path(tempfile.mkdtemp(prefix="pmm-ro-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _make_db(path: Path) -> tuple[int, str | None, int]:
    with filled_store(path, 3):
        pass
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return snapshot(path)


def test_read_only_file_as_unprivileged_user(shared_dir: Path):
    os.chown(shared_dir, NOBODY, NOBODY)  # the folder is theirs: only the file is read-only
    db = shared_dir / "pmm.db"
    before = _make_db(db)
    db.chmod(0o444)
    data = db.read_bytes()
    outcome = _run_unprivileged(db)
    assert outcome["error"] == "ReadOnlyDatabaseError", outcome
    assert "read-only" in outcome["message"] and "chmod" in outcome["message"]
    assert db.read_bytes() == data
    assert snapshot(db) == before


def test_read_only_folder_as_unprivileged_user(shared_dir: Path):
    db = shared_dir / "pmm.db"
    before = _make_db(db)
    os.chown(db, NOBODY, NOBODY)  # the file is theirs, the folder (root, 0755) is not
    outcome = _run_unprivileged(db)
    assert outcome["error"] == "ReadOnlyDatabaseError", outcome
    assert "not writable" in outcome["message"]
    assert snapshot(db) == before


def test_unprivileged_user_can_write_own_file(shared_dir: Path):
    """Control for the two tests above: with write access the same subprocess appends."""
    os.chown(shared_dir, NOBODY, NOBODY)
    db = shared_dir / "pmm.db"
    count, _head, _head_id = _make_db(db)
    os.chown(db, NOBODY, NOBODY)
    assert _run_unprivileged(db) == {"error": None}
    assert snapshot(db)[0] == count + 1


def test_read_only_file_with_chmod(tmp_path: Path):
    """Root too: a file whose mode lets nobody write it is opened read-only (issue 36)."""
    db = tmp_path / "pmm.db"
    before = _make_db(db)
    db.chmod(0o444)
    with EventStore(db) as store, pytest.raises(ReadOnlyDatabaseError, match="read-only"):
        store.append("prompt", "not stored", session_id="s", role="user")
    assert snapshot(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pmm.db"]
