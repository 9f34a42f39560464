"""One user's export imported into a database that already holds other users (a rebased
import, issue 21), on SQLite and PostgreSQL alike: new ids, remapped references, a new
chain that verifies, a provenance record, isolation, and every refusal writing nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pmm import Mind
from pmm.dream.consolidation import AUDIT_KIND
from pmm.dream.contradictions import MARKER_KIND, SLOT_SUPERSEDES
from pmm.errors import IntegrityError, InvalidInputError
from pmm.events.chain import CheckedEvent, check_new_event, seal
from pmm.events.chains import ChainState, new_secret, seal_chains
from pmm.events.hashing import utc_now
from pmm.events.rebase import IMPORTED_KIND
from pmm.records import NewEvent
from pmm.retention.erasure import REDACTION_KIND
from pmm.storage import is_postgres_url, open_store
from pmm.testing.fixtures import *  # noqa: F403

SECRET = "my locker code is 4471 zebra"


def _source(path: Path) -> dict[str, Any]:
    """DB1: alice (a thread with a slot supersession and a redaction, a thread long enough
    for a session summary) and bob; returns alice's export and what it holds."""
    with Mind(
        str(path),
        enable_summary=True,
        summarizer="heuristic",
        summary_mode="deferred",
        dream_on_close=False,
    ) as mind:
        mind.remember("I live in Oslo.", role="user", session_id="a-home", user_id="alice")
        mind.remember("Oslo is lovely.", role="assistant", session_id="a-home", user_id="alice")
        mind.remember("I moved to Bergen.", role="user", session_id="a-home", user_id="alice")
        secret = mind.remember(SECRET, role="user", session_id="a-home", user_id="alice")
        for n in range(13):
            mind.remember_turn(
                f"kayak trip plan number {n}", f"noted {n}", session_id="a-work", user_id="alice"
            )
        mind.remember_turn("bob in DB1", "hi", session_id="b-db1", user_id="bob")
        mind.dream()
        mind.store.redact(secret.id, reason="asked to")
        assert mind.store.events(kinds=[MARKER_KIND]), "the slot supersession is reachable"
        assert mind.store.latest_summary("a-work") is not None
        mind.export(str(path) + ".alice.jsonl", user_id="alice")
        head = mind.store.events(user_id="alice")[-1]
    return {"file": str(path) + ".alice.jsonl", "head": head, "secret_id": secret.id}


def _target(target: str) -> None:
    """DB2: bob and carol already there (bob's "b-db1" is another bob: a session id of
    DB2 only)."""
    with Mind(target) as mind:
        mind.remember_turn("I live in Lisbon with my parrot", "ok", session_id="b1", user_id="bob")
        mind.remember_turn("my cat Tom likes tuna", "ok", session_id="c1", user_id="carol")


def _state(target: str) -> tuple[int, str | None, dict[str, str]]:
    with open_store(target) as store:
        report = store.verify()
        return store.count(), report.root, report.heads


def _lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def test_one_users_export_imports_into_a_database_of_other_users(
    log_target: str, tmp_path: Path
) -> None:
    src = _source(tmp_path / "db1.db")
    _target(log_target)
    exported = [d for d in _lines(src["file"]) if "id" in d]
    with Mind(log_target) as mind:
        before = mind.store.last_id()
        report = mind.import_events(src["file"])
        assert report.ok and report.user_head is not None
        assert mind.verify().ok and mind.verify(user_id="alice").ok
        alice = mind.store.events(user_id="alice")
        assert len(alice) == len(exported) + 1
        ids = [e.id for e in alice]
        assert ids == sorted(ids) and ids[0] > before  # new ids, in the file's order
        if not is_postgres_url(log_target):  # one writer: one block (PostgreSQL: see
            # tests/storage/postgres/test_import_concurrency.py, others' ids may interleave)
            assert ids == list(range(before + 1, before + 2 + len(exported)))
        assert [e.kind for e in alice[:-1]] == [d["kind"] for d in exported]
        assert {e.hash_version for e in alice} == {3}
        # the digests came along (derived data, written after the rows)
        carried = [(d["summary"], d["keywords"]) for d in exported if d["content"] is not None]
        assert any(summary for summary, _ in carried)
        assert [(e.summary, e.keywords) for e in alice[:-1] if e.content is not None] == carried
        # provenance: the file's verified head stays pinned in her new chain, last
        record = alice[-1]
        assert record.kind == IMPORTED_KIND and record.hash == report.user_head
        assert record.meta == {
            "imported": {
                "head": src["head"].hash,
                "head_id": src["head"].id,
                "events": len(exported),
            }
        }
        old_to_new = {d["id"]: e.id for d, e in zip(exported, alice, strict=False)}
        # remapped references point at her rows here
        [marker] = [e for e in alice if e.kind == REDACTION_KIND]
        redacted = mind.store.get(marker.meta["target"])
        assert redacted.content is None and redacted.id == old_to_new[src["secret_id"]]
        assert redacted.user_id == "alice" and redacted.session_id == "a-home"
        summary = mind.store.latest_summary("a-work")
        assert summary is not None and summary.user_id == "alice"
        covered = mind.store.summary_turns(
            "a-work", kinds=["prompt", "response"], upto=summary.meta["covers_upto"]
        )
        assert covered and all(t.user_id == "alice" for t in covered)
        assert summary.meta["covers_from"] == covered[0].id
        assert summary.meta["key"] == (
            f"{summary.meta['covers_from']}-{summary.meta['covers_upto']}:{summary.meta['turns']}"
        )
        covering = mind.store.edges_from(summary.id, "SUMMARIZES")
        assert covering and all(mind.store.get(i).user_id == "alice" for i in covering)
        [audit] = [e for e in alice if e.kind == AUDIT_KIND]
        assert audit.meta["summary_id"] == summary.id
        [sup] = [e for e in alice if e.kind == MARKER_KIND]
        assert mind.store.get(sup.meta["newer"]).content == "I moved to Bergen."
        assert mind.store.edge_targets([sup.meta["newer"]], SLOT_SUPERSEDES) == {
            sup.meta["newer"]: [sup.meta["older"]]
        }
        # recall and context: hers for her, nothing of hers for the others, and back
        hits = mind.recall("kayak trip", k=3, user_id="alice", mode="keyword")
        assert hits and all(h.event.user_id == "alice" for h in hits)
        assert "Bergen" in mind.context("a-home", user_id="alice").text()
        for other in ("bob", "carol"):
            assert not mind.recall("kayak trip", k=3, user_id=other, mode="keyword")
        assert not mind.recall("parrot Lisbon", k=3, user_id="alice", mode="keyword")
        assert not mind.recall("cat Tom tuna", k=3, user_id="alice", mode="keyword")
        # her export from here verifies on its own and goes verbatim into an empty database
        mind.export(str(tmp_path / "again.jsonl"), user_id="alice")
        # and she can be erased here like any user
        mind.forget(user_id="alice", reason="account deleted")
        assert mind.verify().ok and mind.store.count(user_id="alice") == 0
        assert mind.store.count(user_id="bob") == 2 and mind.store.count(user_id="carol") == 2
    with Mind(str(tmp_path / "db3.db")) as third:
        copied = third.import_events(str(tmp_path / "again.jsonl"))
        assert copied.ok and copied.rows == len(alice)
        assert third.verify(user_id="alice").user_head == report.user_head
    if not is_postgres_url(log_target):
        for name in ("db3.db",):
            assert b"4471 zebra" not in (tmp_path / name).read_bytes()
        raw = b"".join(
            p.read_bytes() for p in Path(log_target).parent.glob(Path(log_target).name + "*")
        )
        assert b"4471 zebra" not in raw


def _refused(target: str, file: str, error: type[Exception], match: str) -> None:
    before = _state(target)
    with Mind(target) as mind, pytest.raises(error, match=match):
        mind.import_events(file)
    assert _state(target) == before


def test_each_refusal_writes_nothing(log_target: str, tmp_path: Path) -> None:
    src = _source(tmp_path / "db1.db")
    _target(log_target)
    lines = Path(src["file"]).read_text().splitlines()
    tampered = tmp_path / "tampered.jsonl"
    data = [json.loads(line) for line in lines]
    data[3]["ts"] = "2020-01-01T00:00:00.000000Z"
    tampered.write_text("".join(json.dumps(d) + "\n" for d in data))
    _refused(log_target, str(tampered), IntegrityError, "does not verify")
    # a whole-database export (two users) and events without a user
    whole = tmp_path / "whole.jsonl"
    with Mind(str(tmp_path / "db1.db")) as mind:
        mind.export(str(whole))
    _refused(log_target, str(whole), InvalidInputError, "2 users")
    nouser = tmp_path / "nouser.db"
    with Mind(str(nouser)) as mind:
        mind.remember_turn("no user here", "ok", session_id="n1")
        mind.export(str(tmp_path / "nouser.jsonl"))
    _refused(log_target, str(tmp_path / "nouser.jsonl"), InvalidInputError, "has no user")
    # her session already used in the target, by another user, or by none
    with Mind(log_target) as mind:
        mind.remember("x", role="user", session_id="a-work", user_id="dave")
    _refused(log_target, src["file"], InvalidInputError, "'a-work' of the file")
    with Mind(log_target) as mind:
        mind.remember("x", role="user", session_id="a-home")
    _refused(log_target, src["file"], InvalidInputError, "'a-home' of the file")
    # she is there already (a second import of the same file)
    with Mind(str(tmp_path / "fresh.db")) as mind:
        mind.remember("y", role="user", session_id="z", user_id="zed")
        assert mind.import_events(src["file"]).ok
    _refused(str(tmp_path / "fresh.db"), src["file"], InvalidInputError, "already has events")


def test_a_reference_to_an_event_the_file_lacks_is_refused(log_target: str, tmp_path: Path) -> None:
    source = str(tmp_path / "db1.db")
    with open_store(source) as store:
        store.append_many(
            [
                NewEvent("prompt", "hello", "a1", "user", None, None, "ann"),
                NewEvent(REDACTION_KIND, "redacted event 99", "a1", "system", {"target": 99}),
            ]
        )
        events, keys = store.events(user_id="ann"), store.chain_keys("ann")
    _target(log_target)
    before = _state(log_target)
    refused = pytest.raises(InvalidInputError, match="names event 99, which the file does not")
    with open_store(log_target) as store, refused:
        store.import_events(events, keys=keys)
    assert _state(log_target) == before


def test_legacy_rows_are_imported_as_current_rows(log_target: str) -> None:
    checked = [
        check_new_event(NewEvent("prompt", f"old turn {n}", "old", "user", None, None, "ann"), 99)
        for n in range(3)
    ]
    legacy = seal(checked, last_id=0, prev_hash=None, ts=utc_now())  # version 2, as before
    _target(log_target)
    with open_store(log_target) as store:
        report = store.import_events(legacy)
        assert report.ok and report.rows == 4
        rows = store.events(user_id="ann")
        assert [e.hash_version for e in rows] == [3, 3, 3, 3]
        assert [e.content for e in rows[:3]] == [e.content for e in legacy]
        assert rows[-1].meta["imported"]["head"] == legacy[-1].hash
        assert store.verify().ok


def test_a_crafted_file_is_checked_like_an_append(log_target: str) -> None:
    """A file that verifies was hashed by whoever held its secret (the file carries it):
    its rows still pass the append's input checks, or nothing is written."""
    state = ChainState("eve", new_secret())
    text = "a\x00b"
    entry = NewEvent("prompt", text, "e1", "user", None, None, "eve")
    crafted = CheckedEvent(entry, hashlib.sha256(text.encode()).hexdigest(), "{}")
    events = seal_chains([crafted], {"eve": state}, ids=[1], ts=utc_now())
    _target(log_target)
    before = _state(log_target)
    with open_store(log_target) as store, pytest.raises(InvalidInputError, match="NUL"):
        store.import_events(events, keys=[("eve", state.secret)])
    assert _state(log_target) == before
