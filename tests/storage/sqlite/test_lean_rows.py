"""Lean rows (issue 11): digests stored as 32-byte BLOBs (migration 0008, applied in place,
old and legacy rows keep verifying, round trips stay exact), and the contentless window-key
index (migration 0010) kept exactly in step by recomputing the text it indexed."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
from store_helpers import N_MIGRATIONS, make_legacy_db, raw, with_users, without_users

from pmm.errors import IntegrityError
from pmm.storage.copy import copy_log
from pmm.storage.sqlite import EventStore, schema
from pmm.storage.sqlite.windows import sync_windows

WORDS = "tomato garden Lisbon tram rent landlord piano lesson marathon knee Kyoto visa".split()


def typeofs(path: Path, column: str) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute(f"SELECT DISTINCT typeof({column}) FROM events")}
    finally:
        conn.close()


def old_file(path: Path, monkeypatch: pytest.MonkeyPatch, upto: int = 7) -> list[dict[str, object]]:
    """A file written by the schema as it was at migration ``upto`` (hex text digests)."""
    every = schema.load_migrations()
    older = with_users([m for m in every if m.version <= upto])
    monkeypatch.setattr(schema, "load_migrations", lambda: older)
    with EventStore(path) as old:
        for i in range(30):
            old.append(
                "prompt" if i % 2 == 0 else "response",
                f"turn {i} about the {WORDS[i % len(WORDS)]} " * (1 + i % 3),
                session_id=f"s{i % 3}",
                role="user" if i % 2 == 0 else "assistant",
                meta={"n": i, "é": [None, 1.5]},
            )
        exported = [e.to_dict() for e in old.events()]
    monkeypatch.undo()
    rehashed = without_users(path)
    for row in exported:  # re-hashed as the version-1 chain of that schema
        row.pop("user_digest", None)
        row.pop("session_digest", None)
        row["prev_hash"], row["hash"] = rehashed[int(str(row["id"]))]
        row["hash_version"] = 1
    with raw(path) as conn:  # as the PMM of that schema wrote them: 64 hex characters
        conn.execute(
            "UPDATE events SET content_sha256 = lower(hex(content_sha256)),"
            " prev_hash = lower(hex(prev_hash)), hash = lower(hex(hash))"
        )
        conn.execute("UPDATE events SET prev_hash = NULL WHERE id = 1")
    return exported


def test_new_rows_store_32_byte_digests_and_show_hex(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        first = store.append("prompt", "hello", session_id="s", role="user")
        second = store.append("response", "hi", session_id="s", role="assistant")
        assert store.get(second.id) == second and second.prev_hash == first.hash
        assert len(second.hash) == 64 and int(second.hash, 16) >= 0
        assert store.verify().ok
    assert typeofs(db, "hash") == {"blob"} and typeofs(db, "content_sha256") == {"blob"}
    assert typeofs(db, "prev_hash") == {"null", "blob"}
    conn = sqlite3.connect(db)
    assert {r[0] for r in conn.execute("SELECT length(hash) FROM events")} == {32}


def test_migration_converts_an_old_file_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "old.db"
    before = old_file(db, monkeypatch)
    assert typeofs(db, "hash") == {"text"}
    with EventStore(db) as store:
        assert [m.version for m in store.applied_migrations] == list(range(8, N_MIGRATIONS + 1))
        after = [e.to_dict() for e in store.events()]
        report = store.verify()
    assert after == before  # every field, hex digests included, exactly as before
    assert report.ok and report.rows == 30 and report.head == before[-1]["hash"]
    assert typeofs(db, "hash") == {"blob"}


def test_legacy_rows_keep_verifying_after_the_migration(tmp_path: Path) -> None:
    db = tmp_path / "legacy.db"
    rows = make_legacy_db(db)
    with EventStore(db) as store:
        report = store.verify()
        events = store.events()
    assert report.ok and report.rows == len(rows)
    assert [e.hash for e in events] == [r[6] for r in rows]  # the earlier PMM's hex hashes
    assert {e.hash_version for e in events} == {0}
    assert typeofs(db, "hash") == {"blob"}


def test_a_value_that_is_not_hex_stays_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "odd.db"
    old_file(db, monkeypatch)
    with raw(db) as conn:  # e.g. a damaged legacy value: kept, reported, exported as is
        conn.execute("UPDATE events SET hash = 'ABCDEF-not-hex' WHERE id = 5")
    with EventStore(db) as store:
        assert store.get(5).hash == "ABCDEF-not-hex"
        report = store.verify()
    assert not report.ok and report.first_bad_id == 5
    assert typeofs(db, "hash") == {"blob", "text"}


def test_export_import_and_copy_round_trips_are_exact(tmp_path: Path) -> None:
    source = tmp_path / "a.db"
    legacy = make_legacy_db(source)
    with EventStore(source) as store:
        for i in range(5):
            store.append("prompt", f"new turn {i}", session_id="s", role="user", meta={"i": i})
        exported = [e.to_dict() for e in store.events()]
        events = store.events()
        keys = store.chain_keys()
    assert len(exported) == len(legacy) + 5
    with EventStore(tmp_path / "b.db") as target:
        with pytest.raises(IntegrityError, match="no chain key"):
            target.import_events(events)  # version-3 rows verify only with their secrets
        assert target.import_events(events, keys=keys).ok
        assert [e.to_dict() for e in target.events()] == exported
    assert copy_log(source, tmp_path / "c.db").ok
    with EventStore(tmp_path / "c.db") as copy:
        assert [e.to_dict() for e in copy.events()] == exported
    assert json.loads(json.dumps(exported)) == exported


# -- the contentless window-key index ---------------------------------------------------


def window_hits(store: EventStore, word: str) -> list[int]:
    return sorted(i for i, _ in store.search_text(word, key="window", limit=1000, sync=False))


def test_window_index_stores_no_text(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        store.append("prompt", "I planted tomatoes", session_id="s", role="user")
        store.append("response", "how lovely", session_id="s", role="assistant")
        store.sync_search_index()
        assert window_hits(store, "tomatoes") == [1, 2]
    conn = sqlite3.connect(db)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "events_window_fts_content" not in names


@pytest.mark.parametrize("radius", [1, 2, 3])
def test_incremental_window_index_equals_a_rebuild(tmp_path: Path, radius: int) -> None:
    """Turns appended in bursts across sessions and `clear` markers, indexed after each
    burst: every word finds exactly the turns a from-scratch index finds. (A row removed
    with the wrong text would leave stray or missing postings.)"""
    rng = random.Random(radius)
    with EventStore(tmp_path / "pmm.db", window_radius=radius) as store:
        for _burst in range(40):
            for _ in range(rng.randint(1, 6)):
                session = rng.choice(["a", "b", "c"])
                if rng.random() < 0.08:
                    store.append("clear", "cleared", session_id=session, role="system")
                    continue
                kind = rng.choice(["prompt", "response", "event"])
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
                store.append(kind, f"{text} {rng.randint(0, 50)}", session_id=session, role="user")
            store.sync_search_index()
        vocabulary = [*WORDS, *map(str, range(51))]
        incremental = {w: window_hits(store, w) for w in vocabulary}
        with store._lock, store._write() as conn:
            sync_windows(conn, radius, rebuild=True)
        rebuilt = {w: window_hits(store, w) for w in vocabulary}
        conn = store._conn
        conn.execute("INSERT INTO events_window_fts(events_window_fts) VALUES ('integrity-check')")
    assert incremental == rebuilt
    assert sum(map(len, rebuilt.values())) > 100
