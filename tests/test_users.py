"""Users above sessions (issue 20): the user column, one user per session, the chain rule
that covers the user, assigning an old session, the recall scopes, erasing one user, and
the CLI and REPL options. Isolation across many users and every surface, on SQLite and
PostgreSQL, is tests/postgres/test_users_isolation.py."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from mind_helpers import HashEmbedder

from pmm import Mind
from pmm.chat.offline import OfflineResponder
from pmm.chat.repl import Chat
from pmm.cli import main
from pmm.errors import EventNotFoundError, InvalidInputError
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "pmm.db"


# -- storage: the column, ownership, the chain -------------------------------------------


def test_each_event_stores_its_user_and_is_hashed_with_it(db: Path) -> None:
    with EventStore(db) as store:
        a = store.append("prompt", "hi", session_id="t1", role="user")
        b = store.append_many([NewEvent("prompt", "hello", "t2", "user", user_id="alice")])[0]
        assert (a.user_id, a.hash_version, a.user_digest) == (None, 3, None)  # no user's chain
        assert (b.user_id, b.hash_version) == ("alice", 3) and b.user_digest is not None
        assert store.get(b.id) == b and store.verify().ok
        assert store.session_owner("t2") == (True, "alice")
        assert store.session_owner("t1") == (True, None)
        assert store.session_owner("nope") == (False, None)
    conn = sqlite3.connect(db)
    plan = " ".join(
        r[3]
        for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM events WHERE user_id = ? ORDER BY id", ("alice",)
        )
    )
    conn.close()
    assert "events_by_user" in plan


def test_a_row_moved_to_another_user_does_not_verify(db: Path) -> None:
    with Mind(str(db)) as mind:
        mind.remember_turn("my passport is P1", "ok", session_id="t1", user_id="alice")
        mind.remember_turn("hi", "hello", session_id="t2", user_id="bob")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE events SET user_id = 'bob' WHERE id = 1")
    conn.close()
    with EventStore(db) as store:
        report = store.verify()
    assert not report.ok and report.first_bad_id == 1 and "user" in str(report.reason)


def test_an_unassigned_old_row_given_a_user_does_not_verify(db: Path) -> None:
    with Mind(str(db)) as mind:
        mind.remember_turn("old text", "ok", session_id="old")
        mind.remember_turn("hi", "hello", session_id="b1", user_id="bob")
    conn = sqlite3.connect(db)
    with conn:  # a version-1 row claimed by bob without a user_assigned event
        conn.execute("UPDATE events SET user_id = 'bob' WHERE id = 2")
    conn.close()
    with EventStore(db) as store:
        report = store.verify()
    assert not report.ok and report.first_bad_id == 2 and "user_assigned" in str(report.reason)


def test_a_session_belongs_to_one_user(db: Path) -> None:
    with Mind(str(db)) as mind:
        mind.remember("I live in Lisbon", role="user", session_id="t1", user_id="alice")
        with pytest.raises(InvalidInputError, match="belongs to another user") as caught:
            mind.remember("mine now", role="user", session_id="t1", user_id="bob")
        assert "alice" not in str(caught.value)  # the owner is not named
        with pytest.raises(InvalidInputError, match="belongs to another user"):
            mind.context("t1", query="Lisbon", user_id="bob")
        with pytest.raises(InvalidInputError, match="belongs to another user"):
            mind.history("t1", user_id="bob")
        with pytest.raises(InvalidInputError, match="belongs to another user"):
            mind.recall("Lisbon", session_id="t1", user_id="bob")
        # a batch that gives one new session two users is refused whole
        with pytest.raises(InvalidInputError, match="belongs to another user"):
            mind.remember_many(
                [
                    NewEvent("prompt", "a", "t9", "user", user_id="alice"),
                    NewEvent("prompt", "b", "t9", "user", user_id="bob"),
                ]
            )
        assert mind.store.count(session_id="t9") == 0
        # no user given: the session's user (markers, clears, notes belong to her)
        note = mind.remember("a note", role="system", session_id="t1")
        marker = mind.clear("t1")
        assert note.user_id == marker.user_id == "alice"
        for bad in ("", "   ", "a\x00b", 7):
            with pytest.raises(InvalidInputError, match="user_id"):
                mind.remember("x", role="user", session_id="t5", user_id=bad)  # type: ignore[arg-type]
        assert mind.store.count(session_id="t5") == 0
        assert mind.verify().ok


def test_concurrent_writers_cannot_claim_one_new_session_for_two_users(db: Path) -> None:
    import threading

    EventStore(db).close()
    errors: list[Exception] = []
    barrier = threading.Barrier(8)

    def write(user: str) -> None:
        with EventStore(db) as store:
            barrier.wait()
            try:
                store.append_many(
                    [NewEvent("prompt", f"from {user}", "shared", "user", None, None, user)]
                )
            except InvalidInputError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=write, args=(f"user{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with EventStore(db) as store:
        rows = store.events(session_id="shared")
        assert len(rows) == 1 and len(errors) == 7
        assert store.verify().ok


def test_old_sessions_are_assigned_once_as_a_chained_event(db: Path) -> None:
    with Mind(str(db)) as mind:
        mind.remember_turn("My name is Ana and I live in Porto", "hi Ana", session_id="old")
        mind.store.sync_search_index()  # indexed before the assignment
        with pytest.raises(InvalidInputError, match="written without a user"):
            mind.remember("more", role="user", session_id="old", user_id="ana")
        event = mind.assign_user("old", "ana", reason="migrated")
        assert (event.kind, event.user_id, event.hash_version) == ("user_assigned", "ana", 3)
        assert {e.user_id for e in mind.store.events(session_id="old")} == {"ana"}
        with pytest.raises(InvalidInputError, match="already belongs"):
            mind.assign_user("old", "ana")
        with pytest.raises(InvalidInputError, match="another user"):
            mind.assign_user("old", "bob")
        with pytest.raises(InvalidInputError, match="no events"):
            mind.assign_user("never-written", "ana")
        # her old turns are found as hers now, by every key
        for key in ("turn", "window"):
            assert mind.store.search_text("Porto", key=key, user_id="ana")
            assert not mind.store.search_text("Porto", key=key, user_id="bob")
        mind.remember("what's new?", role="user", session_id="new", user_id="ana")
        text = mind.context("new", query="where do I live", user_id="ana").text()
        assert "Lives in: Porto (20" in text  # dated; the thread id stays out of the prompt
        assert mind.verify().ok


# -- scopes -------------------------------------------------------------------------------


def seed(mind: Mind) -> None:
    mind.remember_turn(
        "Hi, I'm Alice. I live in Lisbon and I have a cat called Pixel.",
        "Nice to meet you!",
        session_id="a1",
        user_id="alice",
    )
    mind.remember_turn("I love jazz music", "Great taste", session_id="a1", user_id="alice")
    mind.remember_turn(
        "Hi, I'm Bob. I live in Oslo and my dog is called Rex.",
        "Hello Bob",
        session_id="b1",
        user_id="bob",
    )


def test_user_scope_brings_a_users_facts_and_memories_to_her_new_thread(db: Path) -> None:
    with Mind(str(db)) as mind:
        seed(mind)
        mind.remember_turn("anything new?", "not much", session_id="a2", user_id="alice")
        ctx = mind.context("a2", query="where do I live, and my cat Pixel?", user_id="alice")
        text = ctx.text()
        assert "- Lives in: Lisbon (20" in text and "Pixel" in text
        assert "thread 1]\nHuman: Hi, I'm Alice" in text  # a memory under its date and thread
        assert "a1" not in text  # thread ids stay out of the prompt
        assert [t.text for t in ctx.history] == ["anything new?", "not much"]  # this thread's
        for word in ("Bob", "Oslo", "Rex"):
            assert word not in text
        # the thread's user is known from its events: no user_id needed
        assert (
            mind.context("a2", query="Pixel").text()
            == mind.context("a2", query="Pixel", user_id="alice").text()
        )
        # session scope: this thread alone
        mind.settings = mind.settings.with_(recall_scope="session")
        text = mind.context("a2", query="where do I live, and my cat Pixel?").text()
        assert "Lisbon" not in text and "Pixel" not in text


def test_all_scope_crosses_users_and_says_so(db: Path) -> None:
    with Mind(str(db), recall_scope="all") as mind:
        seed(mind)
        text = mind.context("b2", query="Lisbon cat Pixel", user_id="bob").text()
        assert "Lisbon" in text  # the whole log: only for single-user apps
    # the setting's description (kept in step with .env.example by test_settings) warns
    example = Path(__file__).resolve().parents[1].joinpath(".env.example").read_text()
    assert "all (crosses users!)" in example


def test_recall_keeps_to_the_user_in_every_mode(db: Path) -> None:
    with Mind(str(db), enable_embeddings=True, embedder=HashEmbedder()) as mind:
        seed(mind)
        mind.dream()
        for mode in ("keyword", "semantic", "hybrid"):
            hits = mind.recall("I live in a city with a pet", 10, mode=mode, user_id="bob")
            assert hits and {h.event.user_id for h in hits} == {"bob"}, mode
            everyone = mind.recall("I live in a city with a pet", 10, mode=mode)
            assert {h.event.user_id for h in everyone} == {"alice", "bob"}, mode


# -- erasing one user ---------------------------------------------------------------------


def counts(db: Path, user: str) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        q = {
            "rows": "SELECT count(*) FROM events WHERE user_id = ?",
            "texts": "SELECT count(content) FROM events WHERE user_id = ?"
            " AND kind != 'redaction'",  # the markers: ids and reason, no erased text
            "digests": "SELECT count(summary) FROM events WHERE user_id = ?",
            "vectors": "SELECT count(*) FROM embeddings JOIN events ON id = event_id"
            " WHERE user_id = ?",
            "windows": "SELECT count(*) FROM events_window_fts WHERE events_window_fts MATCH"
            " 'tags : ' || ?",
        }
        out = {}
        for name, sql in q.items():
            arg = user if name != "windows" else '"u' + user.encode().hex() + '0"'
            out[name] = conn.execute(sql, (arg,)).fetchone()[0]
        return out
    finally:
        conn.close()


def test_forget_a_user_erases_all_her_threads_and_nothing_else(db: Path) -> None:
    secret = "ZQ77PASSPORT"
    with Mind(
        str(db), enable_summary=True, summarizer="heuristic", summary_mode="inline",
        enable_embeddings=True, embedder=HashEmbedder(),
    ) as mind:  # fmt: skip
        seed(mind)
        mind.remember_turn(f"my passport is {secret}", "noted", session_id="a2", user_id="alice")
        mind.remember_turn("I like skiing", "cool", session_id="b2", user_id="bob")
        mind.dream()
        mind.store.sync_search_index()
        bob_before = counts(db, "bob")
        assert bob_before["rows"] == bob_before["vectors"] == bob_before["digests"] == 4
        assert bob_before["windows"] == 4
        report = mind.forget(user_id="alice", reason="account deleted")
        assert len(report.erased) == 6 and len(report.markers) == 2  # one per thread of hers
        # all of her: the records name no thread of hers, her ids leave her rows (issue 21)
        assert {(m.session_id, m.user_id) for m in report.markers} == {(None, None)}
        assert counts(db, "bob") == bob_before
        alice = counts(db, "alice")
        assert alice["texts"] == alice["digests"] == alice["vectors"] == alice["windows"] == 0
        assert not mind.recall("passport Lisbon Pixel", 10, user_id="alice")
        assert mind.verify().ok
        with pytest.raises(EventNotFoundError):
            mind.forget(user_id="carol", reason="x")
        with pytest.raises(InvalidInputError, match="another user"):
            mind.forget(user_id="alice", session_id="b1", reason="x")
        with pytest.raises(InvalidInputError, match="not one of user"):
            mind.forget(user_id="alice", event_ids=[bob_event(mind)], reason="x")
    data = b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal") if Path(str(db) + s).exists()
    )
    assert secret.encode() not in data and b"Pixel" not in data


def bob_event(mind: Mind) -> int:
    return mind.store.events(user_id="bob", limit=1)[0].id


# -- CLI and REPL -------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_user_options(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Mind(str(db)) as mind:
        seed(mind)
        mind.remember_turn("legacy passport talk", "ok", session_id="old")
    code, out, _ = run(capsys, "search", "live", "--user", "bob", "--json", "--db", str(db))
    assert code == 0 and {h["event"]["user_id"] for h in json.loads(out)} == {"bob"}
    code, out, _ = run(capsys, "tail", "--user", "alice", "--json", "--db", str(db))
    assert code == 0 and {e["user_id"] for e in json.loads(out)} == {"alice"}
    code, out, _ = run(capsys, "stats", "--user", "alice", "--json", "--db", str(db))
    stats = json.loads(out)
    assert code == 0 and stats["events"] == 4 and stats["by_session"] == {"a1": 4}
    export = tmp_path / "alice.jsonl"
    code, _, _ = run(capsys, "export", str(export), "--user", "alice", "--db", str(db))
    key, *lines = [json.loads(line) for line in export.read_text().splitlines()]
    assert key["chain_key"] == "alice"  # her chain's secret alone, then her events
    assert code == 0 and len(lines) == 4 and {e["user_id"] for e in lines} == {"alice"}
    code, out, _ = run(capsys, "assign-user", "old", "carol", "--db", str(db))
    assert code == 0 and "now belongs to user 'carol'" in out
    code, _, err = run(capsys, "assign-user", "old", "dave", "--db", str(db))
    assert code == 2 and "another user" in err
    code, out, _ = run(capsys, "forget", "--user", "bob", "--yes", "--db", str(db))
    assert code == 0 and "forgot 2 events" in out
    with EventStore(db) as store:
        assert store.verify().ok
        # as Mind.forget(user_id=...): her rows keep no user id, her chain's secret is gone
        assert store.events(user_id="bob") == [] and store.chain_keys("bob") == []
        assert store.count(user_id="alice") == 4


def test_repl_user_and_search(db: Path) -> None:
    lines: list[str] = []
    with Mind(str(db)) as mind:
        seed(mind)
        chat = Chat(mind, "b5", OfflineResponder(), write=lines.append, user="bob")
        chat.handle("/search live")
        assert any("[b1]" in line for line in lines) and not any("Lisbon" in x for x in lines)
        chat.handle("where do I live?")
        assert mind.store.session_owner("b5") == (True, "bob")
        lines.clear()
        chat.handle("/user alice b5")  # bob's thread: refused, still bob
        assert chat.user == "bob" and "not switched" in lines[-1]
        chat.handle("/user alice a9")
        assert (chat.user, chat.session) == ("alice", "a9")
        lines.clear()
        chat.handle("/search live")
        assert any("Lisbon" in line for line in lines) and not any("Oslo" in x for x in lines)
        chat.handle("/session b1")
        assert chat.session == "a9" and "not switched" in lines[-1]


def test_the_search_indexes_stay_consistent_through_assignment_and_erasure(db: Path) -> None:
    with Mind(str(db), enable_summary=True, summarizer="heuristic", summary_mode="inline") as mind:
        mind.remember_turn("alpha beta", "gamma", session_id="s")
        mind.remember_turn("delta talk", "epsilon", session_id="o")
        mind.remember_turn("zeta", "eta", session_id="u1", user_id="carol")
        mind.store.sync_search_index()
        conn = mind.store._conn  # type: ignore[attr-defined]
        tags = {r[0] for r in conn.execute("SELECT tags FROM events_fts_source")}
        # rows without a user are tagged exactly as before migration 0013
        assert tags == {"s730", "s6F0", "s7531" + "0 u" + b"carol".hex().upper() + "0"}
        mind.assign_user("o", "bob")
        mind.forget(event_ids=[1], reason="test")
        mind.remember("theta", role="user", session_id="o")
        assert mind.store.search_text("delta", user_id="bob")
        assert mind.store.search_text("delta", key="window", user_id="bob")
        for table in ("events_fts", "events_window_fts"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        assert mind.verify().ok


def test_compaction_covers_users_rows(db: Path) -> None:
    with Mind(str(db), enable_summary=True, summarizer="heuristic", summary_mode="inline") as mind:
        said, _ = mind.remember_turn(
            "We took the night train from Lisbon to Porto and talked about books " * 4,
            "That sounds like a lovely trip, tell me more about the books " * 4,
            session_id="t1",
            user_id="ann",
            ts="2020-01-01T00:00:00Z",
        )
        report = mind.compact(older_than="30d")
        assert said.id in report.compacted and report.marker is not None
        assert mind.store.get(said.id).content is None
        assert mind.verify().ok


def test_recover_keeps_users_and_checks_their_rows(db: Path, tmp_path: Path) -> None:
    from pmm.storage.sqlite.backup import recover

    with Mind(str(db)) as mind:
        seed(mind)
        mind.remember_turn("old", "row", session_id="legacy")
    report = recover(db, tmp_path / "new.db")
    assert report.unverified == [] and report.broken_links == [] and report.salvaged == 8
    with EventStore(tmp_path / "new.db") as store:
        assert store.verify().ok and store.count(user_id="alice") == 4


def test_symbol_only_recall_keeps_to_the_user(db: Path) -> None:
    """A query of emoji alone is answered by a scan of the text: it must keep to the user."""
    with Mind(str(db)) as mind:
        for n in range(30):  # many of bob's first, so that a global top-k would be all his
            mind.remember("🐶", role="user", session_id=f"b{n}", user_id="bob")
        mind.remember("🐶 is my dog Bolt", role="user", session_id="a1", user_id="alice")
        hits = mind.recall("🐶", 5, user_id="alice")
        assert [h.event.user_id for h in hits] == ["alice"]
        assert {h.event.user_id for h in mind.recall("🐶", 50)} == {"alice", "bob"}
