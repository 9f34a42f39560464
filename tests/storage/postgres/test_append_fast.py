"""The one-call append (migrations/0011, pmm/storage/postgres/append_cache.py): taken once a
store has appended to a chain, and given up, writing nothing, whenever a value it hashed
or indexed against changed underneath: another store's append, a redaction, a compaction,
an erasure, an assignment, a duplicate message. The rows it writes are the two-call
path's, byte for byte."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pmm.records import NewEvent
from pmm.storage.postgres import PostgresEventStore
from pmm.storage.postgres import chains as pg_chains

TS = "2026-01-02T03:04:05+00:00"


def _turn(text: str, session: str | None, user: str | None, **meta: Any) -> NewEvent:
    return NewEvent("prompt", text, session, "user", meta or None, TS, user)


def _tables(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row an append writes, in a stable order."""
    queries = {
        "events": "SELECT id, ts, kind, session_id, role, content, content_sha256, meta,"
        " prev_hash, hash, hash_version, user_id, user_digest, session_digest, shard"
        " FROM events ORDER BY id",
        "windows": "SELECT event_id, session_id, kind, search::text, shard FROM event_windows"
        " ORDER BY event_id",
        "chains": "SELECT chain, secret, head_id, head_hash FROM chains ORDER BY chain",
        "owners": "SELECT session_id, user_id FROM session_owners ORDER BY session_id",
    }
    with psycopg.connect(url) as conn:
        return {name: conn.execute(sql).fetchall() for name, sql in queries.items()}


@pytest.fixture
def fixed_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """One chain secret for every chain, so that two databases get the same ones (the
    two-call path draws a secret for each chain it opens, the one-call path none)."""
    monkeypatch.setattr(pg_chains, "new_secret", lambda: b"\x07" * 32)
    yield


def _script(store: PostgresEventStore) -> None:
    """Appends of every shape the fast path takes: turns of two users, a second batch,
    a row without a session, a unique_meta append, a session without a user."""
    for i in range(6):
        store.append_many([_turn(f"alice says {i} about Lisbon", "a-1", "alice")])
        store.append_many([_turn(f"bob says {i}", "b-1", "bob")])
    store.append_many([_turn("two at once", "a-1", "alice"), _turn("a new thread", "a-2", None)])
    store.append_many([NewEvent("note", "a note", None, None, None, TS, "alice")])
    store.append_many([_turn("once", "a-1", "alice", message_id="m1")], unique_meta="message_id")
    store.append_many([_turn("once", "a-1", "alice", message_id="m1")], unique_meta="message_id")
    for i in range(3):
        store.append_many([_turn(f"anonymous {i}", "anon-1", None)])


def _twin(url: str) -> str:
    """A new empty database beside ``url``'s."""
    name = url.rsplit("/", 1)[1] + "_twin"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def test_rows_equal_the_two_call_paths_and_the_fast_path_is_taken(
    pg_url: str, fixed_secrets: None
) -> None:
    urls = [pg_url, _twin(pg_url)]
    with PostgresEventStore(urls[0]) as fast, PostgresEventStore(urls[1]) as slow:
        slow.fast_appends = False
        _script(fast)
        _script(slow)
        assert slow.appends.fast == 0
        # the first append of each chain and session takes two calls, the rest one
        # (the second "m1" is found stored by the server: the two-call path leaves it out)
        assert fast.appends.fast == 15 and fast.appends.reasons == {"unique": 1}
        assert fast.verify().ok and slow.verify().ok
        assert fast.count() == slow.count() == 19
    assert _tables(urls[0]) == _tables(urls[1])


def test_another_stores_append_sends_it_back_to_two_calls(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as a, PostgresEventStore(pg_url) as b:
        a.append_many([_turn("first", "s-1", "alice")])
        a.append_many([_turn("second", "s-1", "alice")])
        assert (a.appends.fast, a.appends.stale) == (1, 0)
        b.append_many([_turn("from b", "s-1", "alice")])
        third = a.append_many([_turn("third", "s-1", "alice")])[0]
        assert (a.appends.fast, a.appends.stale) == (1, 1)  # stale, then two calls
        fourth = a.append_many([_turn("fourth", "s-1", "alice")])[0]
        assert a.appends.fast == 2  # and one call again
        assert fourth.prev_hash == third.hash
        assert [e.content for e in a.events(session_id="s-1")] == [
            "first", "second", "from b", "third", "fourth"
        ]  # fmt: skip
        # b's cached tail lacks a's turns although its head would not: the window
        # keys of a session another store appended to are read again
        b.append_many([_turn("b again", "s-1", "alice")])
        assert b.appends.stale == 1
        assert a.verify().ok


def test_a_redaction_elsewhere_keeps_its_text_out_of_the_window_keys(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as a, PostgresEventStore(pg_url) as b:
        secret = a.append_many([_turn("my password is zebracorn", "s-1", "alice")])[0]
        a.append_many([_turn("hello", "s-1", "alice")])
        b.redact(secret.id, reason="secret")
        stale = a.appends.stale
        a.append_many([_turn("after", "s-1", "alice")])
        assert a.appends.stale == stale + 1
        with psycopg.connect(pg_url) as conn:
            found = conn.execute(
                "SELECT count(*) FROM event_windows WHERE search @@ to_tsquery('zebracorn')"
            ).fetchone()
        assert found == (0,)
        assert a.verify().ok


def test_forget_and_compact_by_the_same_store_fall_back(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as store:
        for i in range(3):
            store.append_many([_turn(f"turn {i} gamma", "s-1", "alice")])
        store.forget(session_id="s-1", reason="asked")
        stale = store.appends.stale
        again = store.append_many([_turn("a new start", "s-1", "alice")])[0]
        assert store.appends.stale == stale + 1
        store.append_many([_turn("and more", "s-1", "alice")])
        old = store.events(session_id="s-1")[-2:]
        store.set_digests([(e.id, f"summary {e.id}", ["k"], "test") for e in old])
        assert store.compact(older_than="0s", session_id="s-1").compacted
        before = dict(store.appends.reasons)
        last = store.append_many([_turn("after compaction", "s-1", "alice")])[0]
        # The compaction's record joins the chain without a user: alice's head has not
        # moved, her turns' text has. Only the newest-turns check sees it.
        assert store.appends.reasons == before | {"tails": before.get("tails", 0) + 1}
        assert last.id > again.id
        assert store.verify().ok


def test_an_assigned_session_sends_its_entries_to_the_new_owner(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as a, PostgresEventStore(pg_url) as b:
        a.append_many([_turn("no user yet", "s-1", None)])
        a.append_many([_turn("still none", "s-1", None)])
        assert a.appends.fast == 1
        b.assign_user("s-1", "carol")
        event = a.append_many([_turn("whose?", "s-1", None)])[0]
        assert event.user_id == "carol"
        assert a.appends.stale == 1
        assert a.append_many([_turn("hers", "s-1", None)])[0].user_id == "carol"
        assert a.appends.fast == 2
        assert a.verify().ok


def test_an_unknown_session_that_holds_events_is_not_taken_for_new(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as a, PostgresEventStore(pg_url) as b:
        a.append_many([_turn("a's own", "a-1", "dave")])
        b.append_many([_turn("b's thread", "shared", None)])
        # a guesses "shared" is new (it never saw it): the server says it is not, and
        # the two-call path finds it has no user, so dave may not write to it
        with pytest.raises(Exception, match="shared"):
            a.append_many([_turn("dave's?", "shared", "dave")])
        assert a.appends.stale == 1
        assert [e.content for e in a.events(session_id="shared")] == ["b's thread"]


def test_a_duplicate_message_from_another_store_is_left_out(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as a, PostgresEventStore(pg_url) as b:
        a.append_many([_turn("hi", "s-1", "erin", message_id="m0")], unique_meta="message_id")
        b.append_many([_turn("hello", "s-1", "erin", message_id="m1")], unique_meta="message_id")
        again = a.append_many(
            [_turn("hello", "s-1", "erin", message_id="m1")], unique_meta="message_id"
        )
        assert again == [] and a.appends.stale == 1


def test_racing_stores_store_each_message_once_and_verify(pg_url: str) -> None:
    stores = [PostgresEventStore(pg_url, pool_size=2) for _ in range(2)]
    try:
        for s in stores:  # both warm: each knows the chain and the session
            s.append_many([_turn(f"warm {id(s)}", "s-1", "fay")])
        failures: list[BaseException] = []

        def run(store: PostgresEventStore, n: int) -> None:
            try:
                for i in range(40):
                    store.append_many(
                        [_turn(f"message {i}", "s-1", "fay", message_id=f"m{i}")],
                        unique_meta="message_id",
                    )
                    store.append_many([_turn(f"store {n} turn {i}", f"own-{n}", "fay")])
            except BaseException as exc:  # surfaced below
                failures.append(exc)

        threads = [threading.Thread(target=run, args=(s, n)) for n, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures, failures
        messages = [e for e in stores[0].events(session_id="s-1") if e.meta.get("message_id")]
        assert sorted(e.meta["message_id"] for e in messages) == sorted(f"m{i}" for i in range(40))
        assert sum(s.appends.fast for s in stores) > 0
        assert sum(s.appends.stale for s in stores) > 0
        report = stores[0].verify()
        assert report.ok, report
        assert stores[1].verify(user_id="fay").ok
    finally:
        for s in stores:
            s.close()


def test_the_least_recently_used_sessions_are_forgotten(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pmm.storage.postgres import append_cache

    monkeypatch.setattr(append_cache, "SESSIONS_KEPT", 2)
    with PostgresEventStore(pg_url) as store:
        for session in ("s-1", "s-2", "s-1", "s-3"):  # s-2 is the least recently used
            store.append_many([_turn(f"in {session}", session, "gil")])
        fast = store.appends.fast
        store.append_many([_turn("s-1 again", "s-1", "gil")])
        assert store.appends.fast == fast + 1
        store.append_many([_turn("s-2 again", "s-2", "gil")])  # taken for new: sent back
        assert store.appends.reasons == {"owners": 1}
        assert store.verify().ok


def test_a_subclass_that_overrides_the_locked_append_is_never_bypassed(pg_url: str) -> None:
    calls = []

    class Audited(PostgresEventStore):
        def _append_locked(self, conn: Any, checked: Any, *args: Any) -> Any:
            calls.append(len(checked))
            return super()._append_locked(conn, checked, *args)

    with Audited(pg_url) as store:
        assert store.fast_appends is False
        for i in range(3):
            store.append_many([_turn(f"turn {i}", "s-1", "alice")])
        assert calls == [1, 1, 1]
        assert store.appends.fast == 0
    with PostgresEventStore(pg_url) as plain:
        assert plain.fast_appends is True


def test_a_window_row_without_a_session_is_sent_back_unwritten(pg_url: str) -> None:
    """migrations/0012 writes window rows by their session's owner; a row without a
    session (which the client never sends) is refused before any lock, not dropped."""
    with PostgresEventStore(pg_url) as store:
        store.append_many([_turn("first", "s-1", "alice")])
        store.append_many([_turn("second", "s-1", "alice")])
        assert store.appends.fast == 1
    doc = '{"windows": [[1152921504606846976, null, "prompt", "a window", "date"]]}'
    with psycopg.connect(pg_url, autocommit=True) as conn:
        answer = conn.execute("SELECT pmm_append_fast(%s::jsonb)", (doc,)).fetchone()
        assert answer == ({"stale": "windows"},)
        assert conn.execute("SELECT count(*) FROM event_windows").fetchone() == (2,)
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (2,)
