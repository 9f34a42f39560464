"""The append's server-side functions (migrations/0008) take the same advisory locks as
before, keyed as the Python constants say: a user's chain lock held elsewhere holds back
her appends and no one else's, a session's lock its appends, the exclusive append lock
every append; and an append whose user comes from its session's owner still goes to her
chain."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from pmm.records import Event, NewEvent
from pmm.storage.postgres import PostgresEventStore
from pmm.storage.postgres.chains import CHAIN_LOCK, SESSION_LOCK
from pmm.storage.postgres.connection import APPEND_LOCK

WAIT = 1.0
"""Seconds an append is given to show it is held back (it would take milliseconds)."""


@contextmanager
def _held(url: str, sql: str, params: tuple[Any, ...]) -> Iterator[None]:
    """A lock taken on another connection, in a transaction open for the block."""
    with psycopg.connect(url) as conn:
        conn.execute(sql, params)
        yield
        conn.rollback()


def _append_in_thread(store: PostgresEventStore, user: str, session: str) -> Callable[[], bool]:
    """Start an append; returns a function telling whether it finished within WAIT s."""
    done = threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            store.append_many([NewEvent("prompt", f"hello from {user}", session, "user",
                                        None, None, user)])  # fmt: skip
        except BaseException as exc:  # surfaced by the caller's assertion
            failures.append(exc)
        done.set()

    threading.Thread(target=run, daemon=True).start()

    def finished(timeout: float = WAIT) -> bool:
        ok = done.wait(timeout)
        assert not failures, failures
        return ok

    return finished


def test_a_users_chain_lock_holds_back_her_appends_only(pg_url: str) -> None:
    with PostgresEventStore(pg_url, pool_size=4) as store:
        store.append_many([NewEvent("prompt", "first", "a-1", "user", None, None, "alice")])
        lock = "SELECT pg_advisory_xact_lock(%s, hashtext(%s))"
        with _held(pg_url, lock, (CHAIN_LOCK, "alice")):
            alice = _append_in_thread(store, "alice", "a-2")
            bob = _append_in_thread(store, "bob", "b-1")
            assert bob()  # another user's append does not wait
            assert not alice()  # hers waits for her chain's lock
        assert alice(30)
        assert store.verify().ok


def test_a_sessions_lock_and_the_exclusive_append_lock_hold_back_appends(pg_url: str) -> None:
    with PostgresEventStore(pg_url, pool_size=4) as store:
        lock = "SELECT pg_advisory_xact_lock(%s, hashtext(%s))"
        with _held(pg_url, lock, (SESSION_LOCK, "shared-thread")):
            held = _append_in_thread(store, "carol", "shared-thread")
            free = _append_in_thread(store, "carol", "her-other-thread")
            assert free()
            assert not held()
        assert held(30)
        with _held(pg_url, "SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,)):
            everyone = _append_in_thread(store, "dave", "d-1")
            assert not everyone()  # forget/import hold it: no append runs meanwhile
        assert everyone(30)
        assert store.count() == 3 and store.verify().ok


def test_an_entry_without_a_user_joins_its_sessions_owners_chain(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as store:
        [first] = store.append_many([NewEvent("prompt", "hi", "t", "user", None, None, "erin")])
        # no user named: the owner is read under the session's lock (a second function call)
        marker, turn = store.append_many(
            [
                NewEvent("clear", "cleared", "t", "system", None, None, None),
                NewEvent("prompt", "again", "t", "user", None, None, None),
            ]
        )
        chain: list[Event] = store.events(user_id="erin")
        assert [e.id for e in chain] == [first.id, marker.id, turn.id]
        assert marker.prev_hash == first.hash and turn.prev_hash == marker.hash
        [loose] = store.append_many([NewEvent("note", "no session, no user")])
        assert loose.user_id is None
        assert store.verify().ok
