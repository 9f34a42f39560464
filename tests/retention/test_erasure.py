"""Erasure (pmm.storage.sqlite.erasure.forget, Mind.forget, EventStore.redact, `pmm forget`):
the erased text leaves no byte in the database, its -wal or -shm files, and the chain still
verifies."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from mind_helpers import HashEmbedder

from pmm import Mind
from pmm.cli import main
from pmm.errors import EventNotFoundError, InvalidInputError
from pmm.storage.sqlite import EventStore

SECRET = (
    "Note for later: my passport number is ZX9912345Q and I keep the passport in the "
    "blue drawer under the quokkaberry jar, next to the spare keys of the garage, so that "
    "I can find it quickly when I travel to conferences in the spring or the autumn."
)
TOKENS = ("ZX9912345Q", "zx9912345q", "passport", "drawer", "quokkaberry")
FILLER = [
    f"Turn {i}: we talked about the weather in Oslo, the train schedule to Bergen and "
    f"the football results of the weekend, number {i * 7}, and nothing else of note "
    "happened in that long and rather uneventful conversation about daily things."
    for i in range(40)
]


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def file_bytes(db: Path) -> bytes:
    """The raw bytes of the database and its -wal and -shm files, as they are on disk."""
    return b"".join(
        Path(str(db) + suffix).read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(str(db) + suffix).exists()
    )


def leaked(db: Path) -> list[str]:
    data = file_bytes(db)
    return [t for t in TOKENS if t.encode() in data or t.lower().encode() in data]


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[Mind]:
    m = Mind(
        tmp_path / "pmm.db",
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        enable_embeddings=True,
        embedder=HashEmbedder(),
        summary_min_chars=40,
        # session summaries are erased by their own test below; here ids stay exact
        session_summaries=False,
        detect_contradictions=False,
    )
    try:
        yield m
    finally:
        m.close()


def fill(mind: Mind) -> int:
    """Filler turns in two sessions around one secret turn of alice; returns its id."""
    for i, text in enumerate(FILLER[:20]):
        mind.remember_turn(text, FILLER[i + 20], session_id="alice" if i % 2 else "bob")
    secret = mind.remember(SECRET, role="user", session_id="alice").id
    mind.remember("Noted, I will remember where it is.", role="assistant", session_id="alice")
    mind.dream()
    return secret


def test_forget_by_match_leaves_no_byte_of_the_text(mind: Mind, tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    secret = fill(mind)
    hits = mind.recall("passport drawer", k=3, session_id="alice")
    assert hits[0].event.id == secret
    assert mind.store.get(secret).summary  # digested, embedded, indexed
    assert set(leaked(db)) >= {"ZX9912345Q", "zx9912345q", "passport", "quokkaberry"}
    rows_before = mind.store.count()

    report = mind.forget(match="zx9912345q", reason="user asked")

    assert report.erased == [secret] and report.wal_truncated
    assert report.bytes_after < report.bytes_before
    assert leaked(db) == []
    assert os.path.getsize(str(db) + "-wal") == 0
    gone = mind.store.get(secret)
    assert (gone.content, gone.summary, gone.keywords, gone.digest_method) == (
        None,
        None,
        [],
        "redacted",
    )
    (marker,) = report.markers
    assert marker.kind == "redaction" and marker.session_id == "alice"
    assert marker.meta == {"target": secret, "reason": "user asked"}
    assert "ZX9912345Q" not in json.dumps(marker.to_dict())
    assert mind.store.count() == rows_before + 1
    verify = mind.verify()
    assert verify.ok and verify.rows == rows_before + 1
    hits = mind.recall("passport drawer quokkaberry", k=50, session_id="alice")
    assert secret not in [h.event.id for h in hits]
    assert "passport" not in mind.context("alice", query="where is my passport?").text()
    # The log goes on working: new turns are stored, digested and found.
    mind.remember("My passport is renewed now", role="user", session_id="alice")
    mind.dream()
    assert mind.recall("passport", k=1, session_id="alice")
    assert mind.verify().ok


def test_forget_a_session_erases_every_turn_and_derived_data(mind: Mind, tmp_path: Path) -> None:
    fill(mind)
    alice = mind.store.event_ids(session_id="alice")
    with sqlite3.connect(tmp_path / "pmm.db") as raw:
        vectors_before = raw.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    assert vectors_before >= len(alice) - 2

    report = mind.forget(session_id="alice", reason="account deleted")

    assert report.erased == alice
    assert leaked(tmp_path / "pmm.db") == []
    with sqlite3.connect(tmp_path / "pmm.db") as raw:
        assert raw.execute(
            "SELECT count(*) FROM events WHERE session_id = 'alice' AND kind != 'redaction'"
            " AND (content IS NOT NULL OR summary IS NOT NULL OR keywords IS NOT NULL)"
        ).fetchone() == (0,)
        held = {r[0] for r in raw.execute("SELECT event_id FROM embeddings")}
        assert not held & set(alice)
        assert raw.execute(
            "SELECT count(*) FROM events_fts WHERE events_fts MATCH 'oslo'"
        ).fetchone()[0] == len(mind.store.event_ids(session_id="bob"))
    (marker,) = report.markers
    assert marker.meta == {"targets": alice, "reason": "account deleted"}
    assert mind.verify().ok
    assert not {h.event.id for h in mind.recall("weather Oslo", k=50, session_id="alice")} & set(
        alice
    )
    assert mind.recall("weather Oslo", k=5, session_id="bob")
    # A second forget of the session skips the redaction record and erases nothing new.
    again = mind.forget(session_id="alice", reason="again")
    assert marker.id in again.skipped and mind.verify().ok


def test_summaries_built_from_forgotten_turns_are_erased(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        turn = store.append("prompt", SECRET, session_id="s", role="user")
        other = store.append("prompt", FILLER[0], session_id="s", role="user")
        node = store.append("summary", "Alice keeps her passport in a drawer.", session_id="s")
        store.add_edges([(node.id, turn.id, "SUMMARIZES"), (node.id, other.id, "SUMMARIZES")])
        store.sync_search_index()
        from pmm.storage.sqlite.erasure import forget

        report = forget(store, event_ids=[turn.id], reason="user asked")
        assert report.erased == [turn.id, node.id] and report.derived == [node.id]
        assert store.get(node.id).content is None
        assert store.edges_from(node.id, "SUMMARIZES") == []
        assert store.get(other.id).content == FILLER[0]
        assert store.verify().ok
    assert leaked(db) == []


def test_redact_shares_the_machinery_and_leaves_no_bytes(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        for text in FILLER[:10]:
            store.append("prompt", text, session_id="s", role="user")
        secret = store.append("prompt", SECRET, session_id="s", role="user")
        store.set_digests([(secret.id, "Passport ZX9912345Q in drawer", ["passport"], "test")])
        assert store.search_text("passport")
        marker = store.redact(secret.id, reason="user asked")
        assert marker.meta == {"target": secret.id, "reason": "user asked"}
        assert store.search_text("passport drawer") == []
        assert store.verify().ok
        with pytest.raises(EventNotFoundError):
            store.redact(secret.id, reason="again")
    assert leaked(db) == []


def test_bad_requests_change_nothing(mind: Mind) -> None:
    secret = fill(mind)
    head = mind.store.head()
    bad: list[dict[str, object]] = [
        {"reason": "no selector"},
        {"event_ids": [secret], "reason": " "},
        {"event_ids": ["1"], "reason": "r"},
        {"event_ids": "12", "reason": "r"},
        {"session_id": "", "reason": "r"},
        {"match": "  ", "reason": "r"},
    ]
    for kwargs in bad:
        with pytest.raises(InvalidInputError):
            mind.forget(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(EventNotFoundError, match="99999"):
        mind.forget(event_ids=[secret, 99999], reason="r")
    with pytest.raises(EventNotFoundError, match="nothing to forget"):
        mind.forget(match="no such words anywhere", reason="r")
    with pytest.raises(EventNotFoundError, match="nothing to forget"):
        mind.forget(session_id="nobody", reason="r")
    marker = mind.forget(event_ids=[secret], reason="r").markers[0]
    with pytest.raises(InvalidInputError, match="earlier erasures"):
        mind.forget(event_ids=[marker.id], reason="r")
    assert mind.store.head() == marker and mind.store.get(head.id if head else 0) is not None
    assert mind.verify().ok


def test_cli_forget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        store.append("prompt", SECRET, session_id="s", role="user")
        store.append("prompt", FILLER[1], session_id="s", role="user")
        store.sync_search_index()
    assert main(["forget", "--match", "quokkaberry", "--db", str(db)]) == 2
    assert "--yes" in capsys.readouterr().err
    assert main(["forget", "--yes", "--db", str(db)]) == 2
    assert "--match" in capsys.readouterr().err
    code = main(
        [
            "forget",
            "--match",
            "QUOKKABERRY",
            "--yes",
            "--reason",
            "asked",
            "--json",
            "--db",
            f"{db}",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["erased"] == [1] and data["markers"][0]["meta"] == {"target": 1, "reason": "asked"}
    assert leaked(db) == []
    assert main(["verify", "--db", str(db)]) == 0
    assert main(["forget", "--event", "7", "--yes", "--db", str(db)]) == 2
    assert "no event with id 7" in capsys.readouterr().err


def test_forget_while_the_background_worker_digests(tmp_path: Path) -> None:
    """A digest or vector computed from the text before it was forgotten is never written
    back: the worker's batch and the erasure take turns, and stores refuse erased rows."""
    from mind_helpers import RecordingDigester

    db = tmp_path / "pmm.db"
    digester = RecordingDigester(delay=0.05)
    with Mind(
        db,
        enable_summary=True,
        summary_mode="background",
        summary_batch_size=4,
        digester=digester,
        enable_embeddings=True,
        embedder=HashEmbedder(),
    ) as mind:
        for text in FILLER[:12]:
            mind.remember(text, role="user", session_id="alice")
        secret = mind.remember(SECRET, role="user", session_id="alice").id
        for text in FILLER[12:20]:
            mind.remember(text, role="user", session_id="alice")
        report = mind.forget(event_ids=[secret], reason="user asked")
        assert mind.flush(30)
        assert report.erased == [secret]
        gone = mind.store.get(secret)
        assert gone.content is None and gone.summary is None
        assert mind.verify().ok
        assert mind.pending_count() == 0
    assert leaked(db) == []


def test_a_reader_in_another_connection_delays_the_scrub(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db, timeout=0.3) as store:
        for text in FILLER[:5]:
            store.append("prompt", text, session_id="s", role="user")
        secret = store.append("prompt", SECRET, session_id="s", role="user").id
        store.sync_search_index()
        reader = sqlite3.connect(db)
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM events").fetchone() == (6,)
        from pmm.storage.sqlite.erasure import forget

        report = forget(store, event_ids=[secret], reason="asked")
        assert not report.wal_truncated
        assert "pmm forget --scrub" in caplog.text
        assert store.get(secret).content is None and store.verify().ok
        reader.rollback()
        reader.close()
    assert main(["forget", "--scrub", "--db", str(db)]) == 0
    assert "rewrote" in capsys.readouterr().out
    assert leaked(db) == []
