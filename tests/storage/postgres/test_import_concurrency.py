"""A rebased import on PostgreSQL beside other writers (issue 21): other users' appends
commit while the import's transaction is open, and their ids may fall between hers; two
imports of one user, or an import and her first append, are serialized by her locks.

Concurrency is proven by order, never by timing: a store whose ``_append_locked`` pauses
holds a transaction open (its locks taken) until the test lets it go, and a waiter is
seen waiting on an advisory lock in ``pg_stat_activity``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pmm import Mind
from pmm.errors import InvalidInputError
from pmm.events.rebase import IMPORTED_KIND
from pmm.records import Event, NewEvent
from pmm.storage import open_store
from pmm.storage.postgres import PostgresEventStore
from pmm.storage.postgres.chains import append_locked

WAIT = 60.0  # seconds before a test that should not wait at all fails


class Paused(PostgresEventStore):
    """A store that stops inside its append's transaction (after the rows, before the
    commit) until ``go`` is set; with ``before_rows``, only an import's append stops, its
    locks and ids taken and its rows not yet written."""

    def __init__(self, url: str, *, before_rows: bool = False, **kw: Any) -> None:
        super().__init__(url, **kw)
        self.inside = threading.Event()
        self.go = threading.Event()
        self.before_rows = before_rows

    def _append_locked(
        self, conn: Any, checked: Any, unique_meta: Any = None, seen: Any = None, ids: Any = None
    ) -> list[Event]:
        if self.before_rows and ids is not None:
            self._pause()
        events = super()._append_locked(conn, checked, unique_meta, seen, ids)
        if not self.before_rows:
            self._pause()
        return events

    def _pause(self) -> None:
        self.inside.set()
        assert self.go.wait(WAIT), "the test never let the paused append go"


def _source(tmp_path: Path) -> tuple[list[Event], list[tuple[str, bytes]]]:
    """Alice's history in a SQLite database of its own: two threads, one long enough for
    a session summary; returns her events and her chain's secret."""
    path = str(tmp_path / "db1.db")
    with Mind(path, enable_summary=True, summarizer="heuristic", summary_mode="deferred") as m:
        m.remember("I live in Oslo.", role="user", session_id="a-home", user_id="alice")
        for n in range(13):
            m.remember_turn(f"kayak trip {n}", f"noted {n}", session_id="a-work", user_id="alice")
        m.dream()
        assert m.store.latest_summary("a-work") is not None
    with open_store(path) as store:
        return store.events(user_id="alice"), store.chain_keys("alice")


def _bob(url: str) -> None:
    with Mind(url) as mind:
        mind.remember_turn("I live in Lisbon with my parrot", "ok", session_id="b1", user_id="bob")


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run ``fn`` in a thread; its result, or the exception it raised, lands in the list."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # handed to the test, which checks it
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _until_waiting(url: str, count: int = 1) -> None:
    """Return once ``count`` sessions of the database wait on an advisory lock."""
    deadline = time.monotonic() + WAIT
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event = 'advisory'"
            ).fetchone()
            if row is not None and row[0] >= count:
                return
            time.sleep(0.01)
    pytest.fail("no writer came to wait on the lock")


def _one(store: PostgresEventStore, text: str, session: str, user: str) -> Event:
    return store.append_many([NewEvent("prompt", text, session, "user", None, None, user)])[0]


def test_other_users_append_and_commit_while_an_import_is_open(pg_url: str, tmp_path: Path) -> None:
    events, keys = _source(tmp_path)
    _bob(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER SEQUENCE events_id_seq CACHE 20")  # 20 ids per connection at a time
    importer = Paused(pg_url, before_rows=True, pool_size=1)
    bobs: list[int] = []
    with importer, PostgresEventStore(pg_url, pool_size=1) as bob:
        # Each store has one connection (one sequence cache). The importer's takes a block
        # of 20 ids, bob's the next block: the import's ids run through the rest of its
        # block, then past bob's, and bob's appends during the import take ids of his.
        _one(importer, "carol was here", "c1", "carol")
        bobs.append(_one(bob, "bees", "b1", "bob").id)
        thread, out = _in_thread(lambda: importer.import_events(events, keys=keys))
        assert importer.inside.wait(WAIT)  # the import's locks and ids are taken
        for n in range(3):  # they commit while the import's transaction is open
            bobs.append(_one(bob, f"more bees {n}", "b1", "bob").id)
        assert bob.count(user_id="alice") == 0  # nothing of hers is visible yet
        importer.go.set()
        thread.join(WAIT)
        [report] = out
        assert not isinstance(report, BaseException), report
        assert report.ok and report.rows == len(events) + 1
    with Mind(pg_url) as mind:
        hers = [e.id for e in mind.store.events(user_id="alice")]
        assert len(hers) == len(events) + 1 and hers == sorted(hers)
        assert any(hers[0] < b < hers[-1] for b in bobs[1:]), (hers, bobs)  # interleaved
        assert mind.verify().ok and mind.verify(user_id="alice").ok
        assert mind.verify(user_id="bob").ok and mind.store.count(user_id="bob") == 2 + 4
        summary = mind.store.latest_summary("a-work")
        assert summary is not None and summary.user_id == "alice"
        covered = mind.store.summary_turns(
            "a-work", kinds=["prompt", "response"], upto=summary.meta["covers_upto"]
        )
        assert covered and all(t.user_id == "alice" and t.session_id == "a-work" for t in covered)
        covering = mind.store.edges_from(summary.id, "SUMMARIZES")
        assert covering and all(mind.store.get(i).user_id == "alice" for i in covering)
        text = mind.context("a-work", user_id="alice").text()
        assert "kayak" in text and "bees" not in text and "parrot" not in text
        hits = mind.recall("kayak trip", k=5, user_id="alice", mode="keyword")
        assert hits and all(h.event.user_id == "alice" for h in hits)
        assert not mind.recall("bees", k=5, user_id="alice", mode="keyword")
        assert not mind.recall("kayak trip", k=5, user_id="bob", mode="keyword")
        assert all(e.user_id == "bob" for e in mind.store.events(user_id="bob"))


def _alice_rows(url: str) -> Sequence[Event]:
    with open_store(url) as store:
        assert store.verify().ok
        return store.events(user_id="alice")


def test_two_imports_of_one_user_at_once_one_is_refused(pg_url: str, tmp_path: Path) -> None:
    events, keys = _source(tmp_path)
    _bob(pg_url)
    first = Paused(pg_url, before_rows=True)
    with first, open_store(pg_url) as second:
        one, out1 = _in_thread(lambda: first.import_events(events, keys=keys))
        assert first.inside.wait(WAIT)
        two, out2 = _in_thread(lambda: second.import_events(events, keys=keys))
        _until_waiting(pg_url)  # the second waits for the first's locks
        first.go.set()
        one.join(WAIT)
        two.join(WAIT)
    assert out1[0].ok
    assert isinstance(out2[0], InvalidInputError) and "already" in str(out2[0])
    assert len(_alice_rows(pg_url)) == len(events) + 1


def test_an_import_waits_for_her_first_append_then_is_refused(pg_url: str, tmp_path: Path) -> None:
    events, keys = _source(tmp_path)
    _bob(pg_url)
    writer = Paused(pg_url)  # her append stops before its commit, its locks held
    with writer, open_store(pg_url) as importer:
        appending, appended = _in_thread(lambda: _one(writer, "hello", "a-new", "alice"))
        assert writer.inside.wait(WAIT)
        importing, imported = _in_thread(lambda: importer.import_events(events, keys=keys))
        _until_waiting(pg_url)
        writer.go.set()
        appending.join(WAIT)
        importing.join(WAIT)
    assert isinstance(imported[0], InvalidInputError) and "already" in str(imported[0])
    assert [e.id for e in _alice_rows(pg_url)] == [appended[0].id]


def test_her_first_append_waits_for_an_import_and_lands_after(pg_url: str, tmp_path: Path) -> None:
    events, keys = _source(tmp_path)
    _bob(pg_url)
    importer = Paused(pg_url, before_rows=True)
    with importer, open_store(pg_url) as writer:
        importing, imported = _in_thread(lambda: importer.import_events(events, keys=keys))
        assert importer.inside.wait(WAIT)
        appending, appended = _in_thread(lambda: _one(writer, "hello", "a-new", "alice"))
        _until_waiting(pg_url)
        importer.go.set()
        importing.join(WAIT)
        appending.join(WAIT)
    assert imported[0].ok
    rows = _alice_rows(pg_url)
    assert len(rows) == len(events) + 2 and rows[-1].id == appended[0].id
    assert rows[-2].kind == IMPORTED_KIND and rows[-1].prev_hash == rows[-2].hash


def test_ids_taken_beforehand_must_fit_the_entries(pg_url: str) -> None:
    _bob(pg_url)
    with PostgresEventStore(pg_url) as store:
        checked = [store._checked(NewEvent("prompt", "x", "b1", "user", None, None, "bob"))]
        before = store.count()
        for ids, unique in (([], None), ([7, 8], None), ([9], "turn_id")):
            with store._db.write() as conn, pytest.raises(ValueError, match="one increasing"):
                append_locked(conn, checked, 3, unique, ids=ids)
        with store._db.write() as conn:
            [taken] = [int(r[0]) for r in conn.execute("SELECT nextval('events_id_seq')")]
            [event] = append_locked(conn, checked, 3, ids=[taken])
        assert event.id == taken and store.count() == before + 1 and store.verify().ok
