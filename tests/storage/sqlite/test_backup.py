"""Backup while writing, restore that refuses a bad chain, salvage of a damaged file, and
SQLite's page check (pmm.storage.sqlite.backup; `pmm backup|restore|recover|check|doctor`)."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest
from damage_helpers import overwrite_middle_leaf

from pmm.cli import main
from pmm.errors import IntegrityError, InvalidInputError, NotADatabaseError
from pmm.storage.sqlite import EventStore
from pmm.storage.sqlite.backup import backup, check, recover, restore

TEXT = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 20


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def make_log(path: Path, n: int) -> None:
    with EventStore(path) as store:
        for i in range(n):
            store.append("prompt", f"turn {i} {TEXT}", session_id=f"s{i % 3}", role="user")
        store.sync_search_index()


def corrupt_middle(path: Path) -> None:
    """4 KiB of garbage over the middle leaf page of the events table (the file also holds
    full-text indexes, whose pages would hide the damage from a read of the events)."""
    overwrite_middle_leaf(path, os.urandom)


def test_backup_while_a_writer_appends(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    make_log(db, 200)
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        with EventStore(db) as store:
            while not stop.is_set():
                written.append(store.append("prompt", TEXT, session_id="w", role="user").id)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(written) < 20:
            threading.Event().wait(0.01)
        before = len(written)
        copies = [backup(db, tmp_path / f"copy{i}.db") for i in range(3)]
        during = len(written)
        threading.Event().wait(0.2)
    finally:
        stop.set()
        thread.join()
    assert len(written) > during  # the writer goes on after (and during) the backups
    for report in copies:
        assert report.verify.ok and 200 + before <= report.verify.rows <= 200 + during
        assert not Path(report.target + ".partial").exists()
    with EventStore(db) as store:
        assert store.verify().ok and store.count() == 200 + len(written)
    with pytest.raises(InvalidInputError, match="exists"):
        backup(db, tmp_path / "copy0.db")


def test_restore_refuses_a_tampered_backup_unless_forced(tmp_path: Path) -> None:
    db, copy = tmp_path / "pmm.db", tmp_path / "copy.db"
    make_log(db, 30)
    backup(db, copy)
    with EventStore(db) as store:
        store.append("prompt", "after the backup", session_id="s0", role="user")
    assert restore(copy, db).verify.ok
    with EventStore(db) as store:
        assert store.count() == 30 and store.verify().ok
    assert list(tmp_path.glob("pmm.db.before-restore-*"))
    conn = sqlite3.connect(copy)
    conn.execute("UPDATE events SET kind = 'response' WHERE id = 7")
    conn.commit()
    conn.close()
    with pytest.raises(IntegrityError, match="event 7"):
        restore(copy, db)
    with EventStore(db) as store:
        assert store.verify().ok  # nothing was restored
    forced = restore(copy, db, force=True)
    assert not forced.verify.ok and forced.verify.first_bad_id == 7


def test_recover_salvages_every_readable_row_and_names_the_lost(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    make_log(db, 1500)
    assert check(db).ok and check(db, full=True).ok
    corrupt_middle(db)
    damaged = check(db, full=True)
    assert not damaged.ok and damaged.problems
    with pytest.raises(NotADatabaseError, match="pmm recover"), EventStore(db) as store:
        store.verify()
    report = recover(db, tmp_path / "new.db")
    assert report.lost and report.salvaged + len(report.lost) == 1500
    assert report.last_id == 1500 and report.unverified == []
    first_after_gap = max(report.lost) + 1
    assert report.broken_links == [first_after_gap]
    assert report.verify is not None and report.verify.first_bad_id == first_after_gap
    conn = sqlite3.connect(tmp_path / "new.db")
    held = {r[0] for r in conn.execute("SELECT id FROM events")}
    conn.close()
    assert held == set(range(1, 1501)) - set(report.lost)
    assert check(tmp_path / "new.db", full=True).ok


def test_recover_of_an_intact_file_is_complete(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    make_log(db, 50)
    report = recover(db, tmp_path / "new.db")
    assert report.complete and report.salvaged == 50 and report.verify and report.verify.ok


def test_cli_backup_restore_recover_check_doctor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "pmm.db"
    make_log(db, 1500)
    assert main(["backup", "b.db", "--db", str(db)]) == 0
    assert "backed up 1500 events" in capsys.readouterr().out
    assert main(["check", "--full", "--db", str(db)]) == 0
    assert "integrity_check: ok" in capsys.readouterr().out
    corrupt_middle(db)
    for argv in (["verify"], ["check"], ["stats"]):
        assert main([*argv, "--db", str(db)]) == 1
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        assert "malformed" in captured.out + captured.err
    assert main(["doctor", "--json", "--db", str(db)]) == 0
    found = json.loads(capsys.readouterr().out)["database_check"]
    assert found["ok"] is False and found["pragma"] == "quick_check"
    assert main(["recover", str(db), "new.db", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["lost"] and data["complete"] is False
    assert main(["restore", "b.db", "--db", str(db)]) == 0
    assert "the chain verifies" in capsys.readouterr().out
    assert main(["verify", "--db", str(db)]) == 0
