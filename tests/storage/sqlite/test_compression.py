"""Lossless compression of old raw text (PMM_COMPRESS_AFTER, `pmm compress`): every read
path decodes it, verify checks the decoded text, search and windows are unchanged, and
erasure still leaves no byte behind (the dictionary is retrained without the text)."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_helpers import raw

from pmm import Mind
from pmm.cli import main as cli
from pmm.storage import text_codec
from pmm.storage.copy import copy_log
from pmm.storage.sqlite import EventStore
from pmm.storage.sqlite.backup import recover

TOPICS = ["kitchen renovation", "marathon plan", "trip to Kyoto", "garden irrigation"]
SECRET = "my locker code is QX7731Z and the key hangs behind the blue mirror"


def reply(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return (
        f"Reply {i}: for the {topic}, first write down the goal, then split the next step "
        f"into something you can finish in one afternoon, and review the {topic} weekly. "
        f"Note {i * 7 % 101} says the budget matters more than the schedule."
    )


def fill(store: EventStore, n: int = 60, session: str = "s") -> list[int]:
    return [
        store.append(
            "response" if i % 2 else "prompt",
            reply(i),
            session_id=session,
            role="assistant" if i % 2 else "user",
        ).id
        for i in range(n)
    ]


def kinds_of_content(path: Path) -> dict[int, str]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT id, typeof(content) FROM events").fetchall())
    finally:
        conn.close()


def test_count_policy_keeps_the_newest_plain_and_reads_decode(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        ids = fill(store)
        before = [e.to_dict() for e in store.events()]
        turns_before = store.turn_rows()
        hits_before = store.search_text("Kyoto budget", limit=50)
        windows_before = store.search_text("irrigation", key="window", limit=50)
        report = store.compress("10")
        assert report.compressed == 50 and report.trained and report.dictionary_id == 1
        assert report.bytes_after < report.bytes_before / 2
        assert [e.to_dict() for e in store.events()] == before
        assert store.get(ids[3]).content == reply(3)
        assert store.get_many(ids[:5])[ids[4]].content == reply(4)
        assert store.turn_rows() == turns_before
        assert store.search_text("Kyoto budget", limit=50) == hits_before
        assert store.search_text("irrigation", key="window", limit=50) == windows_before
        assert store.verify().ok
        assert store.compress("10").compressed == 0  # nothing newly old
        store.append("prompt", reply(99), session_id="s", role="user")
        assert store.compress("10").compressed == 1  # one more became old
    shapes = kinds_of_content(db)
    assert [shapes[i] for i in ids[:50]] == ["blob"] * 50
    assert {shapes[i] for i in ids[51:]} == {"text"}


def test_age_policy_and_dream(tmp_path: Path) -> None:
    old = datetime.now(UTC) - timedelta(days=40)
    with Mind(tmp_path / "pmm.db", compress_after="30d") as mind:
        for i in range(40):
            mind.store.append("prompt", reply(i), session_id="s", role="user", ts=old)
        recent = mind.remember(reply(100), role="user", session_id="s")
        report = mind.dream()
        assert report.compressed == 40
        assert mind.store.get(recent.id).content == reply(100)
        assert mind.verify().ok
        old_texts = {reply(i) for i in range(40)}
        assert any(hit.event.content in old_texts for hit in mind.recall("Kyoto", session_id="s"))
        assert mind.compress(dry_run=True).compressed == 0
    with Mind(tmp_path / "pmm.db") as mind, pytest.raises(ValueError, match="compression is off"):
        mind.compress()


def test_verify_checks_the_decoded_text(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        ids = fill(store)
        store.compress("0")
        other = store._text.codec.encode(reply(1) + " (edited)", store._text.codec.dictionaries[1])
    with raw(db) as conn:  # a valid blob of another text: its SHA-256 does not match
        conn.execute("UPDATE events SET content = ? WHERE id = ?", (other, ids[7]))
    with EventStore(db) as store:
        report = store.verify()
    assert not report.ok and report.first_bad_id == ids[7] and "content" in (report.reason or "")
    with raw(db) as conn:  # a damaged blob: reported, never a traceback
        conn.execute("UPDATE events SET content = ? WHERE id = ?", (b"\x01\0\0\0\x01junk", ids[2]))
    with EventStore(db) as store:
        report = store.verify()
    assert not report.ok and report.first_bad_id == ids[2] and "cannot be read" in report.reason


def test_zlib_when_zstd_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_codec, "_zstd", lambda: None)
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        fill(store)
        report = store.compress("0")
        assert report.compressed == 60 and report.bytes_after < report.bytes_before / 2
        assert [e.content for e in store.events()] == [reply(i) for i in range(60)]
        assert store.verify().ok
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT codec FROM text_dictionaries").fetchall() == [("zlib",)]


@pytest.mark.parametrize("codec", ["zlib", "zstd"])
def test_erasure_retrains_the_dictionary_and_leaves_no_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str
) -> None:
    if codec == "zlib":
        monkeypatch.setattr(text_codec, "_zstd", lambda: None)
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        for i in range(30):  # the dictionary is trained on these: it holds the secret
            note = f"{SECRET}; I wrote it down on day {i} so that I would not forget it"
            store.append("prompt", note, session_id="alice", role="user")
        store.compress("0")
        assert b"QX7731Z" in store._text.codec.dictionaries[1].data
        fill(store, 40, "bob")
        fill(store, 40, "carol")
        assert store.compress("0").dictionary_id == 1
        store.forget(session_id="alice", reason="asked")
        assert store.verify().ok
        assert [e.content for e in store.events(session_id="carol")] == [
            reply(i) for i in range(40)
        ]
        assert store.search_text("kitchen", limit=5)
    data = b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal", "-shm") if os.path.exists(str(db) + s)
    )
    for word in ("QX7731Z", "qx7731z", "blue mirror", "locker code"):
        assert word.encode() not in data, word
    conn = sqlite3.connect(db)
    assert [r[0] for r in conn.execute("SELECT id FROM text_dictionaries")] == [2]


def test_dictionary_ids_are_never_reused(tmp_path: Path) -> None:
    """Erasing the only texts of a dictionary deletes it; the next one gets a new id, so
    another process's cached copy of the old one is never used for new text."""
    with EventStore(tmp_path / "pmm.db") as store:
        fill(store, 20, "alice")
        assert store.compress("0").dictionary_id == 1
        store.forget(session_id="alice", reason="gone")  # too few texts left to retrain on
        assert store._conn.execute("SELECT count(*) FROM text_dictionaries").fetchone()[0] == 0
        fill(store, 20, "bob")
        assert store.compress("0").dictionary_id == 2
        assert store.verify().ok


def test_compaction_copy_and_recover(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(db, enable_summary=True, summary_mode="deferred", summarizer="heuristic") as mind:
        for i in range(30):
            mind.remember_turn(reply(2 * i), reply(2 * i + 1), session_id="s")
        mind.dream()
        mind.compress("0")
        expected = [e.to_dict() for e in mind.store.events()]
    assert copy_log(db, tmp_path / "copy.db").ok
    with EventStore(tmp_path / "copy.db") as copy:
        assert [e.to_dict() for e in copy.events()] == expected
    salvaged = recover(db, tmp_path / "salvaged.db")
    assert salvaged.lost == [] and salvaged.unverified == [] and salvaged.verify.ok
    with EventStore(tmp_path / "salvaged.db") as copy:
        assert [e.to_dict() for e in copy.events()] == expected
    with Mind(db, enable_summary=True, summary_mode="deferred") as mind:
        report = mind.compact(older_than="0s")
        assert len(report.compacted) == 60 and mind.verify().ok
        assert mind.store.get(3).content is None and mind.store.get(3).summary


def test_cli_compress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        fill(store)
    assert cli(["compress", "--db", str(db), "--after", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["compressed"] == 40 and out["verify"]["ok"] and out["trained"]
    assert cli(["compress", "--db", str(db), "--after", "soon"]) == 2
    assert "not valid" in capsys.readouterr().err


def test_digests_of_compressed_turns_keep_the_index_exact(tmp_path: Path) -> None:
    """Compressed before their digest (summaries turned on later): the full-text triggers
    skip compressed rows, so set_digests re-indexes them; FTS5's integrity check compares
    the index with the decoded text."""
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        fill(store)
        store.sync_search_index()
        store.compress("0")
    with Mind(db, enable_summary=True, summary_mode="deferred", summarizer="heuristic") as mind:
        assert mind.dream().digested == 60
        store = mind.store
        assert store.search_text("budget schedule", key="digest", limit=100)
        store._conn.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")
        store.forget(event_ids=[5], reason="test")
        store._conn.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")
        assert mind.verify().ok


def test_batches_give_the_same_result(tmp_path: Path) -> None:
    from pmm.retention.compression import CompressAfter
    from pmm.storage.sqlite.compression import compress_texts

    with EventStore(tmp_path / "pmm.db") as store:
        fill(store)
        policy = CompressAfter.parse("5")
        assert policy is not None
        plan = compress_texts(store, policy, dry_run=True)
        assert (plan.compressed, plan.trained) == (55, True)
        report = compress_texts(store, policy, batch=16)
        assert (report.compressed, report.dictionary_id, report.trained) == (55, 1, True)
        assert report.bytes_before == plan.bytes_before
        assert [e.content for e in store.events()] == [reply(i) for i in range(60)]
        conn = store._conn
        assert conn.execute("SELECT count(*) FROM text_dictionaries").fetchone()[0] == 1
        assert conn.execute("SELECT scanned_upto FROM text_state").fetchone()[0] == 55
