"""Erasing a whole user also erases her identifiers (issue 21): her user id and thread ids
leave every row whose hash covers keyed digests of them (hash version 3), her chain's secret
is deleted, and every chain still verifies; nobody else's ids or rows change."""

from __future__ import annotations

from pmm import Mind
from pmm.testing.backend import SqlRunner
from pmm.testing.fixtures import *  # noqa: F403

ALICE = "alice.liddell@example.org"
HER_THREADS = ("alice-thread-kyoto", "alice-thread-garden")
BOB = "bob.builder@example.org"


def _fill(mind: Mind) -> None:
    for thread in HER_THREADS:
        mind.remember_turn(f"plans for {thread}", "noted", session_id=thread, user_id=ALICE)
    mind.remember_turn("I build sheds", "nice", session_id="bob-thread", user_id=BOB)
    mind.forget(event_ids=[1], reason="a first, partial erasure")  # a marker of hers stays


def test_erasing_a_user_erases_her_ids_and_chain_key(log_target: str, raw_sql: SqlRunner) -> None:
    with Mind(log_target) as mind:
        _fill(mind)
        bob_before = [(e.id, e.hash, e.session_id) for e in mind.store.events(user_id=BOB)]
        bob_head = mind.verify(user_id=BOB).user_head
        report = mind.forget(user_id=ALICE, reason="account deleted")
        assert report.erased and all(m.user_id is None for m in report.markers)
        assert all(m.session_id is None for m in report.markers)
        after = mind.verify()
        assert after.ok, after
        assert mind.verify(user_id=BOB).user_head == bob_head
        assert [(e.id, e.hash, e.session_id) for e in mind.store.events(user_id=BOB)] == (
            bob_before
        )
        assert mind.store.events(user_id=ALICE) == []
        # her turns, the earlier marker and this erasure's records are all still chained
        assert len(after.heads) == 2 and after.rows == len(mind.store.events())
    assert raw_sql(log_target, "SELECT count(*) FROM events WHERE user_id = ?", (ALICE,)) == [(0,)]
    for thread in HER_THREADS:
        held = raw_sql(log_target, "SELECT count(*) FROM events WHERE session_id = ?", (thread,))
        assert held == [(0,)], thread
    assert raw_sql(log_target, "SELECT count(*) FROM chains WHERE chain = ?", (ALICE,)) == [(0,)]
    assert raw_sql(log_target, "SELECT count(*) FROM chains WHERE chain = ?", (BOB,)) == [(1,)]


def test_erasing_part_of_a_user_keeps_her_ids(log_target: str, raw_sql: SqlRunner) -> None:
    with Mind(log_target) as mind:
        _fill(mind)
        mind.forget(user_id=ALICE, session_id=HER_THREADS[0], reason="one thread")
        assert mind.verify().ok
        assert {e.session_id for e in mind.store.events(user_id=ALICE)} == set(HER_THREADS)
    assert raw_sql(log_target, "SELECT count(*) FROM chains WHERE chain = ?", (ALICE,)) == [(1,)]
