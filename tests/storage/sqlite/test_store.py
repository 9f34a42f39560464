"""EventStore basics: append, reads and filters, reopening, WAL, atomic batches, search."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_helpers import N_MIGRATIONS, filled_store, raw, snapshot

from pmm.errors import DatabaseError, EventNotFoundError, InvalidInputError, PMMError
from pmm.events.hashing import canonical_json, chain_payload_v3, keyed_digest, sha256_hex
from pmm.records import Event, NewEvent
from pmm.storage.sqlite import EventStore
from pmm.storage.sqlite.connection import READ_CACHE_KIB
from pmm.storage.sqlite.readonly import open_read_only

TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "pmm.db"


def test_append_returns_a_chained_event(db: Path):
    with EventStore(db) as store:
        before = datetime.now(UTC)
        first = store.append("prompt", "I moved to Lisbon", session_id="alice", role="user")
        second = store.append(
            "response", "Lisbon is lovely", session_id="alice", role="assistant", meta={"n": 1}
        )
        after = datetime.now(UTC)
        keys = store.chain_keys()

    assert isinstance(first, Event)
    assert (first.id, second.id) == (1, 2)
    for ev in (first, second):
        assert TS.match(ev.ts), ev.ts
        stamp = datetime.strptime(ev.ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert before - timedelta(seconds=1) <= stamp <= after + timedelta(seconds=1)
        assert ev.hash_version == 3
        assert ev.content_sha256 == hashlib.sha256(ev.content.encode()).hexdigest()
        assert re.fullmatch(r"[0-9a-f]{64}", ev.hash)
    assert first.prev_hash is None
    assert second.prev_hash == first.hash
    assert second.meta == {"n": 1}
    assert (first.kind, first.session_id, first.role) == ("prompt", "alice", "user")
    # the hash is the documented rule over the stored fields, the session as its keyed
    # digest under the chain's secret (this log has no users: the chain without one)
    [(chain, secret)] = keys
    assert chain == "" and second.user_digest is None
    assert second.session_digest == keyed_digest(secret, "session", "alice")
    assert second.hash == sha256_hex(
        chain_payload_v3(
            ts=second.ts,
            kind="response",
            role="assistant",
            content_sha256=second.content_sha256,
            meta_json=canonical_json({"n": 1}),
            prev_hash=first.hash,
            user_digest=None,
            session_digest=second.session_digest,
        )
    )


def test_stored_row_matches_returned_event(db: Path):
    with EventStore(db) as store:
        ev = store.append("event", "naïve café ☕ 日本語 \U0001f600", meta={"k": [1, None, "é"]})
        got = store.get(ev.id)
    assert got == ev
    row = sqlite3.connect(db).execute("SELECT meta, content, hash FROM events").fetchone()
    # Digests are stored as their 32 bytes (migrations/0008), shown as hex.
    assert row == ('{"k":[1,null,"é"]}', ev.content, bytes.fromhex(ev.hash))


def test_get_and_get_many(db: Path):
    with filled_store(db, 6) as store:
        assert store.get(3).content == "message number 3"
        with pytest.raises(EventNotFoundError, match="no event with id 99"):
            store.get(99)
        many = store.get_many([5, 1, 99, 5])
        assert sorted(many) == [1, 5]
        assert many[5].content == "message number 5"
        assert store.get_many([]) == {}
        big = store.get_many(range(1, 1200))  # more ids than one IN (...) chunk
        assert sorted(big) == [1, 2, 3, 4, 5, 6]


def test_events_filters(db: Path):
    with filled_store(db, 9) as store:
        assert [e.id for e in store.events()] == list(range(1, 10))
        alice = [e.id for e in store.events(session_id="alice")]
        assert alice == [1, 2, 4, 5, 7, 8]
        assert [e.id for e in store.events(session_id="bob")] == [3, 6, 9]
        assert [e.id for e in store.events(kinds=["prompt"])] == [1, 3, 5, 7, 9]
        assert [e.id for e in store.events(kinds="response")] == [2, 4, 6, 8]
        assert store.events(kinds=[]) == []
        assert [e.id for e in store.events(session_id="alice", kinds=["prompt"])] == [1, 5, 7]
        assert [e.id for e in store.events(after_id=3, before_id=7)] == [4, 5, 6]
        assert [e.id for e in store.events(newest_first=True, limit=3)] == [9, 8, 7]
        assert [e.id for e in store.events(session_id="alice", newest_first=True, limit=2)] == [
            8,
            7,
        ]
        assert [e.id for e in store.events(after_id=2, limit=2)] == [3, 4]
        assert store.events(session_id="nobody") == []
        assert [e.id for e in store.iter_events(batch=4)] == list(range(1, 10))
        assert [e.id for e in store.iter_events(batch=4, after_id=7)] == [8, 9]


def test_head_count_last_id(db: Path):
    with EventStore(db) as store:
        assert store.head() is None
        assert store.count() == 0
        assert store.last_id() == 0
        assert store.verify().ok
    with filled_store(db, 7) as store:
        head = store.head()
        assert head is not None and head.id == 7
        assert head.hash == snapshot(db)[1]
        assert store.count() == 7
        assert store.count(session_id="bob") == 2
        assert store.count(kinds=["response"]) == 3
        assert store.count(session_id="alice", kinds=["prompt"]) == 3
        assert store.last_id() == 7
        assert store.last_id(session_id="bob") == 6
        assert store.last_id(kinds=["prompt"]) == 7
        assert store.last_id(session_id="nobody") == 0


def test_append_many_chains_in_order(db: Path):
    with EventStore(db) as store:
        store.append("event", "zero")
        batch = store.append_many(
            [
                NewEvent("prompt", "one", "s", "user"),
                NewEvent("response", "two", "s", "assistant", {"x": 1}),
                NewEvent("event", "three"),
            ]
        )
        assert [e.id for e in batch] == [2, 3, 4]
        assert batch[0].prev_hash == store.get(1).hash
        assert [b.prev_hash for b in batch[1:]] == [a.hash for a in batch[:-1]]
        assert store.append_many([]) == []
        assert [e.content for e in store.events()] == ["zero", "one", "two", "three"]
        assert store.get(3) == batch[1]
        assert store.verify().ok


def test_append_many_invalid_entry_stores_nothing(db: Path):
    with filled_store(db, 3) as store:
        before = snapshot(db)
        with pytest.raises(InvalidInputError):
            store.append_many(
                [NewEvent("event", "fine"), NewEvent("event", 42), NewEvent("event", "fine")]  # type: ignore[arg-type]
            )
        assert snapshot(db) == before


def test_append_many_failing_inside_the_transaction_rolls_back(db: Path):
    """A row the database itself refuses (here: a trigger) makes the whole batch vanish."""
    with filled_store(db, 3) as store:
        with raw(db) as conn:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN new.content = 'boom'"
                " BEGIN SELECT RAISE(ABORT, 'refused by test'); END"
            )
        before = snapshot(db)
        with pytest.raises(DatabaseError, match="refused by test"):
            store.append_many(
                [NewEvent("event", "a"), NewEvent("event", "boom"), NewEvent("event", "c")]
            )
        assert snapshot(db) == before
        assert store.count() == 3
        # the store is still usable, and the chain carries on from the real head
        ev = store.append("event", "after")
        assert (ev.id, ev.prev_hash) == (4, before[1])
        assert store.verify().ok


def test_reopen_continues_the_chain(db: Path):
    with filled_store(db, 4) as store:
        old_head = store.head()
    with EventStore(db) as store:
        assert store.applied_migrations == []
        ev = store.append("event", "after reopen")
        assert ev.id == 5
        assert ev.prev_hash == old_head.hash
        report = store.verify(expect_head=old_head.hash)
        assert report.ok and report.rows == 5 and report.head == ev.hash and report.head_id == 5


def test_wal_mode_and_settings(db: Path):
    with EventStore(db) as store:
        store.append("event", "x")
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()
        assert store.stats()["schema_version"] == N_MIGRATIONS


def test_read_connections_get_the_recall_page_cache(db: Path):
    """Both the writable connection and a read-only archive's ask SQLite for
    READ_CACHE_KIB of page cache (the default 2,000 KiB re-reads recall's FTS pages)."""
    with EventStore(db) as store:
        store.append("event", "x")
        assert store._conn.execute("PRAGMA cache_size").fetchone()[0] == -READ_CACHE_KIB
    conn = open_read_only(str(db), timeout=1.0)
    try:
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -READ_CACHE_KIB
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 1
    finally:
        conn.close()


def test_migrations_applied_exactly_once(db: Path):
    store = EventStore(db)
    assert [m.version for m in store.applied_migrations] == list(range(1, N_MIGRATIONS + 1))
    store.close()
    for _ in range(2):
        with EventStore(db) as again:
            assert again.applied_migrations == []
    conn = sqlite3.connect(db)
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert versions == list(range(1, N_MIGRATIONS + 1))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == N_MIGRATIONS
    conn.close()


def test_memory_store(tmp_path: Path):
    with EventStore(":memory:") as store:
        a = store.append("event", "one")
        b = store.append("event", "two")
        assert b.prev_hash == a.hash
        assert store.verify().ok
    assert list(tmp_path.iterdir()) == []


def test_verify_report_on_a_good_log(db: Path):
    with filled_store(db, 25) as store:
        report = store.verify()
        head = store.head()
    assert report.ok
    assert (report.rows, report.head, report.head_id) == (25, head.hash, 25)
    assert report.first_bad_id is None and report.reason is None
    assert report.to_dict()["ok"] is True


def test_pmm_errors_are_pmm_errors():
    assert issubclass(InvalidInputError, PMMError)
    assert issubclass(EventNotFoundError, PMMError)
    assert issubclass(DatabaseError, PMMError)


# -- full-text search ----------------------------------------------------------------


@pytest.fixture
def search_store(db: Path):
    store = EventStore(db)
    store.append("prompt", "I moved to Lisbon last spring", session_id="alice", role="user")
    store.append("response", "Lisbon has lovely trams", session_id="alice", role="assistant")
    store.append("prompt", "My cat is called Pixel", session_id="bob", role="user")
    store.append("prompt", 'He said "hello" AND left (quickly)', session_id="bob", role="user")
    store.append("event", "NEAR the harbour, rates-of-interest*", session_id="carol")
    yield store
    store.close()


def ids(hits: list[tuple[int, float]]) -> list[int]:
    return [event_id for event_id, _ in hits]


def test_search_finds_words(search_store: EventStore):
    hits = search_store.search_text("Lisbon")
    assert sorted(ids(hits)) == [1, 2]
    assert all(isinstance(score, float) for _, score in hits)
    assert ids(search_store.search_text("cat pixel")) == [3]
    assert ids(search_store.search_text("trams")) == [2]
    assert search_store.search_text("zeppelin") == []
    assert search_store.search_text("") == []
    assert search_store.search_text("   ...  ") == []


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"hello',
        'said "hello" AND',
        "AND",
        "OR",
        "NOT",
        "hello OR",
        "AND OR NOT",
        "lisb*",
        "*",
        "-cat",
        "cat -",
        "(quickly",
        "quickly)",
        "((()))",
        "NEAR(harbour interest, 3)",
        "NEAR",
        "^harbour",
        "content:cat",
        "{summary}: cat",
        "c'at' 'O''Reilly'",
        "\\ ; -- DROP TABLE events;",
    ],
)
def test_search_syntax_is_taken_as_words(search_store: EventStore, query: str):
    before = snapshot(search_store.path)
    hits = search_store.search_text(query)  # must not raise
    assert isinstance(hits, list)
    assert snapshot(search_store.path) == before


def test_search_operators_are_matched_as_words(search_store: EventStore):
    # "AND", "NEAR" and "hello" in quotes are words here, not syntax
    assert 4 in ids(search_store.search_text('"hello"'))
    assert ids(search_store.search_text("quickly)")) == [4]
    assert ids(search_store.search_text("NEAR")) == [5]
    assert ids(search_store.search_text("harbour*")) == [5]
    assert ids(search_store.search_text("-interest")) == [5]
    # OR is a word, so 'Pixel OR harbour' finds both, as any word may match
    assert sorted(ids(search_store.search_text("Pixel OR harbour"))) == [3, 5]


def test_search_session_and_kind_filters(search_store: EventStore):
    assert ids(search_store.search_text("Lisbon", session_id="alice", kinds=["response"])) == [2]
    assert ids(search_store.search_text("Lisbon", kinds=["prompt"])) == [1]
    assert search_store.search_text("Lisbon", session_id="bob") == []
    assert ids(search_store.search_text("harbour", session_id="carol", kinds="event")) == [5]
    assert len(search_store.search_text("Lisbon pixel harbour hello", limit=2)) == 2


def test_search_sees_new_appends(search_store: EventStore):
    assert search_store.sync_search_index() == 5  # appends are indexed in batches
    assert search_store.sync_search_index() == 0
    ev = search_store.append("prompt", "Ferries to Cacilhas", session_id="alice")
    assert ids(search_store.search_text("cacilhas")) == [ev.id]
    ev2 = search_store.append("prompt", "Cacilhas again")
    assert search_store.sync_search_index() == 1
    assert sorted(ids(search_store.search_text("cacilhas"))) == [ev.id, ev2.id]


def test_digests_are_searchable(search_store: EventStore):
    search_store.sync_search_index()  # rows already indexed: updates go through triggers
    assert search_store.set_digests([(3, "user owns a tabby", ["feline", "pet"], "rules")]) == 1
    assert ids(search_store.search_text("tabby")) == [3]
    assert ids(search_store.search_text("feline")) == [3]
    ev = search_store.get(3)
    assert (ev.summary, ev.keywords, ev.digest_method) == (
        "user owns a tabby",
        ["feline", "pet"],
        "rules",
    )
    # a digest replaced: the old words no longer find it
    search_store.set_digests([(3, "user owns a dog now", ["canine"], "rules")])
    assert search_store.search_text("tabby") == []
    assert ids(search_store.search_text("canine")) == [3]
    # digests of not-yet-indexed rows are picked up by the next sync
    new = search_store.append("event", "plain text")
    search_store.set_digests([(new.id, "summary mentions zanzibar", ["zanzibar"], "rules")])
    assert ids(search_store.search_text("zanzibar")) == [new.id]
    assert search_store.verify().ok  # digests are not chained


def test_redact_removes_text_from_search(search_store: EventStore):
    search_store.sync_search_index()
    search_store.set_digests([(3, "pixel the cat", ["pixel"], "rules")])
    before_count = search_store.count()
    marker = search_store.redact(3, reason="user asked")
    assert marker.kind == "redaction" and marker.id == before_count + 1
    assert marker.session_id == search_store.get(3).session_id  # recorded in its session
    assert marker.meta == {"target": 3, "reason": "user asked"}
    assert "Pixel" not in marker.content
    assert search_store.search_text("pixel") == []
    assert search_store.search_text("cat") == []
    ev = search_store.get(3)
    assert ev.content is None and ev.summary is None and ev.keywords == []
    assert ev.digest_method == "redacted"
    assert ev.content_sha256 == hashlib.sha256(b"My cat is called Pixel").hexdigest()
    report = search_store.verify()
    assert report.ok and report.rows == before_count + 1
    # a redaction of a row not yet indexed also keeps it out of the index
    late = search_store.append("prompt", "secret quokka", session_id="bob")
    search_store.redact(late.id, reason="oops")
    assert search_store.search_text("quokka") == []
    assert search_store.verify().ok
    with pytest.raises(EventNotFoundError):
        search_store.redact(3, reason="again")
    with pytest.raises(InvalidInputError):
        search_store.redact(1, reason="  ")


def test_a_digest_finished_after_a_redaction_is_dropped(search_store: EventStore):
    search_store.redact(3, reason="erase")
    assert search_store.set_digests([(3, "pixel the cat", ["pixel"], "late")]) == 0
    assert search_store.get(3).summary is None
    assert search_store.search_text("pixel") == []


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path):
    import sqlite3

    from pmm.errors import NotADatabaseError

    path = tmp_path / "other-app.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT)")
    with pytest.raises(NotADatabaseError, match="another application"):
        EventStore(path)
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"customers"}
