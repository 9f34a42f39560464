"""`pmm forget --dry-run` lists what a forget would erase and writes nothing (the file is
byte for byte the same); a real run says which events it erased, per session (issue 22)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from pmm.cli import main
from pmm.storage.sqlite import EventStore

SECRET = "my locker code is 4471 at the quokkaberry gym"


def _fill(db: Path) -> None:
    with EventStore(db) as store:
        store.append("prompt", "I live in Porto.", session_id="ana", role="user")
        store.append("prompt", SECRET, session_id="ana", role="user")
        store.append(
            "response", "Noted, the Quokkaberry locker.", session_id="ana", role="assistant"
        )
        store.append("prompt", "Quokkaberry gym again today.", session_id="bo", role="user")
        store.sync_search_index()
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def _fingerprint(db: Path) -> tuple[str, int]:
    wal = db.with_name(db.name + "-wal")
    return hashlib.sha256(db.read_bytes()).hexdigest(), wal.stat().st_size if wal.exists() else 0


def test_dry_run_lists_the_events_and_leaves_the_file_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "pmm.db"
    _fill(db)
    before = _fingerprint(db)
    assert before[1] == 0
    assert main(["forget", "--match", "quokkaberry", "--dry-run", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert _fingerprint(db) == before  # no byte written, not even to the -wal file
    lines = out.splitlines()
    assert lines[0] == "would forget 3 events (dry run: nothing was written)"
    assert lines[1].startswith("  2  session ana  prompt (user): my locker code is 4471")
    assert lines[2].startswith("  3  session ana  response (assistant): Noted, the")
    assert lines[3].startswith("  4  session bo  prompt (user): Quokkaberry gym")
    assert len(lines) == 4
    with EventStore(db) as store:
        assert store.get(2).content == SECRET and store.count() == 4

    assert main(["forget", "--match", "quokkaberry", "--dry-run", "--json", "--db", str(db)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dry_run"] is True and data["erased"] == [2, 3, 4] and data["markers"] == []
    assert [(e["id"], e["session_id"]) for e in data["events"]] == [
        (2, "ana"),
        (3, "ana"),
        (4, "bo"),
    ]
    assert data["events"][0]["text"] == SECRET
    assert _fingerprint(db) == before


def test_dry_run_needs_no_yes_and_refuses_scrub(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "pmm.db"
    _fill(db)
    assert main(["forget", "--session", "bo", "--dry-run", "--scrub", "--db", str(db)]) == 2
    assert "--dry-run" in capsys.readouterr().err
    assert main(["forget", "--match", "nowhere to be seen", "--dry-run", "--db", str(db)]) != 0
    assert "nothing to forget" in capsys.readouterr().err
    assert main(["forget", "--session", "bo", "--db", str(db)]) == 2
    assert "--dry-run" in capsys.readouterr().err  # the hint names it


def test_a_real_forget_says_which_events_it_erased(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "pmm.db"
    _fill(db)
    assert main(["forget", "--match", "quokkaberry", "--yes", "--db", str(db)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("forgot 3 events; recorded as event(s) 5, 6")
    assert out[1:3] == ["  session ana: ids 2, 3", "  session bo: ids 4"]
    assert SECRET not in "\n".join(out)  # the erased text is never printed
    with EventStore(db) as store:
        assert store.get(2).content is None and store.get(1).content == "I live in Porto."
