"""`pmm restore` of a backup taken before an erasure: refused, naming the erasures, unless
``--force``, which restores it and erases the same again (issue 36).

The erased user's ids are random (24+ hex characters), so that finding one in the file's
bytes cannot be chance and missing one cannot be a spelling: after ``--force`` neither her
text, nor her user id, nor her thread ids are anywhere in the file or its -wal file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import sqlite3
from pathlib import Path

import pytest
from mind_helpers import HashEmbedder

from pmm import Mind
from pmm.cli import main
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore
from pmm.storage.sqlite.backup import restore
from pmm.storage.sqlite.restore_erasures import ErasedDataInBackupError


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


class Her:
    """A user with random ids and a random secret in her text."""

    def __init__(self) -> None:
        self.user = "user-" + secrets.token_hex(16)
        self.threads = [f"thread-{secrets.token_hex(14)}" for _ in range(2)]
        self.secret = "PASSPORT" + secrets.token_hex(12).upper()

    def marks(self) -> list[bytes]:
        return [s.encode() for s in (self.user, *self.threads, self.secret)]


def _mind(db: Path) -> Mind:
    return Mind(str(db), enable_embeddings=True, embedder=HashEmbedder())


def _build(db: Path, her: Her) -> None:
    with _mind(db) as mind:
        for thread in her.threads:
            mind.remember_turn(
                f"my passport number is {her.secret}", "noted", session_id=thread, user_id=her.user
            )
            mind.remember_turn("I live in Lisbon", "nice", session_id=thread, user_id=her.user)
        mind.remember_turn("Bob here, I like skiing", "cool", session_id="bob-1", user_id="bob")
        mind.dream()
        mind.store.sync_search_index()


def _bytes(db: Path) -> bytes:
    return b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal") if Path(str(db) + s).exists()
    )


def _digest(db: Path) -> str:
    return hashlib.sha256(_bytes(db)).hexdigest()


def test_restore_refuses_a_backup_holding_an_erased_user_and_force_erases_her_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, her = tmp_path / "pmm.db", Her()
    _build(db, her)
    assert main(["backup", "b.db", "--db", str(db)]) == 0
    assert all(m in _bytes(tmp_path / "b.db") for m in her.marks())
    with _mind(db) as mind:
        markers = [m.id for m in mind.forget(user_id=her.user, reason="account deleted").markers]
    assert not any(m in _bytes(db) for m in her.marks())
    capsys.readouterr()
    before = _digest(db)

    assert main(["restore", "b.db", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert f"erasure recorded as event(s) {', '.join(map(str, markers))}" in err
    assert "a user whose every event was erased" in err and "nothing was restored" in err
    assert her.user not in err and not any(t in err for t in her.threads)
    assert _digest(db) == before and not list(tmp_path.glob("pmm.db.before-restore-*"))

    assert main(["restore", "b.db", "--db", str(db), "--force"]) == 0
    out = capsys.readouterr().out
    assert "restored 10 events" in out and "erased again" in out
    assert her.user not in out
    data = _bytes(db)
    assert not [m for m in her.marks() if m in data]
    assert b"skiing" in data  # bob's turn came back with the backup and stayed
    assert main(["verify", "--db", str(db)]) == 0
    conn = sqlite3.connect(db)
    assert (
        conn.execute("SELECT count(*) FROM events WHERE user_id = ?", (her.user,)).fetchone()[0]
        == 0
    )
    assert (
        conn.execute("SELECT count(*) FROM chains WHERE chain = ?", (her.user,)).fetchone()[0] == 0
    )
    conn.close()
    with _mind(db) as mind:
        assert not mind.recall(f"passport {her.secret}", 10, user_id=her.user)
        assert mind.recall("skiing", 10, user_id="bob")
    # the restored log records the erasure again: the same backup is refused again
    assert main(["restore", "b.db", "--db", str(db)]) == 1
    assert "nothing was restored" in capsys.readouterr().err


def test_restore_refuses_a_backup_holding_a_redacted_event(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        keep = store.append("prompt", "the weather is fine", session_id="s", role="user")
        gone = store.append("prompt", "my pin is 4417-SECRET", session_id="s", role="user")
    restore_point = tmp_path / "b.db"
    assert main(["backup", str(restore_point), "--db", str(db)]) == 0
    with EventStore(db) as store:
        marker = store.redact(gone.id, reason="typed by mistake")
    with pytest.raises(ErasedDataInBackupError, match=rf"event\(s\) {marker.id} .*ids {gone.id}"):
        restore(restore_point, db)
    report = restore(restore_point, db, force=True)
    assert [e.ids for e in report.reapplied] == [[gone.id]] and report.verify.ok
    assert report.markers and b"4417-SECRET" not in _bytes(db)
    with EventStore(db) as store:
        assert store.get(keep.id).content == "the weather is fine"
        assert store.get(gone.id).content is None
        assert store.verify().ok


def test_restore_of_a_backup_taken_after_the_erasure_is_not_refused(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        gone = store.append("prompt", "my pin is 4417-SECRET", session_id="s", role="user")
        store.redact(gone.id, reason="typed by mistake")
        store.append("prompt", "later", session_id="s", role="user")
    assert main(["backup", "b.db", "--db", str(db)]) == 0
    with EventStore(db) as store:
        store.append("prompt", "after the backup", session_id="s", role="user")
    report = restore(tmp_path / "b.db", db)
    assert report.reapplied == [] and report.verify.ok and report.verify.rows == 3


def test_restore_into_postgresql_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    Path("b.db").write_bytes(b"")
    assert main(["restore", "b.db", "--db", "postgresql://u:pw@localhost/pmm"]) == 2
    err = capsys.readouterr().err
    assert "pg_restore" in err and "pw" not in err


def test_restore_json_lists_the_erasures_applied_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, her = tmp_path / "pmm.db", Her()
    _build(db, her)
    assert main(["backup", "b.db", "--db", str(db)]) == 0
    with _mind(db) as mind:
        mind.forget(user_id=her.user, reason="account deleted")
    capsys.readouterr()
    assert main(["restore", "b.db", "--db", str(db), "--force", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(e["whole_user"], e["reason"]) for e in data["reapplied"]] == [
        (True, "account deleted")
    ]
    assert len(data["reapplied"][0]["ids"]) == 8 and data["markers"]
    assert her.user not in json.dumps(data)


def _leaves(db: Path) -> list[int]:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = [
        r[0]
        for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY path"
        )
    ]
    conn.close()
    return pages


def test_a_damaged_current_log_is_read_row_by_row_and_what_it_hides_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        store.append_many(NewEvent("prompt", f"turn {i} " + "lorem " * 80, "s") for i in range(600))
        gone = store.append("prompt", "my pin is 4417-SECRET", session_id="s", role="user")
    assert main(["backup", "b.db", "--db", str(db)]) == 0  # holds ids 1..601
    with EventStore(db) as store:
        store.append_many(
            NewEvent("prompt", f"later {i} " + "lorem " * 80, "s") for i in range(300)
        )
        marker = store.redact(gone.id, reason="typed by mistake")  # id 902
    leaves = _leaves(db)
    intact = tmp_path / "intact.db"
    shutil.copyfile(db, intact)
    capsys.readouterr()
    for fraction, hides_later_rows in ((0.2, False), (0.8, True)):
        shutil.copyfile(intact, db)
        with open(db, "r+b") as f:  # a page of rows the backup holds, or of rows after it
            f.seek((leaves[int(len(leaves) * fraction)] - 1) * 4096)
            f.write(bytes(4096))
        assert main(["restore", "b.db", "--db", str(db)]) == 1
        err = capsys.readouterr().err
        assert f"erasure recorded as event(s) {marker.id} " in err and f"ids {gone.id})" in err
        # only rows newer than the backup may have recorded an erasure it predates
        assert ("cannot be checked" in err) == hides_later_rows, err
        hidden = re.search(r"is damaged: its events (\d+)", err)
        assert bool(hidden) == hides_later_rows and (not hidden or int(hidden[1]) > 601), err
    assert main(["restore", "b.db", "--db", str(db), "--force"]) == 0
    out = capsys.readouterr().out
    assert "erased again" in out and "warning: " in out and "cannot be checked" in out
    assert b"4417-SECRET" not in _bytes(db)
    assert main(["verify", "--db", str(db)]) == 0
