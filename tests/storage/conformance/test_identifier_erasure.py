"""Erasing a whole user also erases her identifiers (issue 21): her user id and thread ids
leave every row whose hash covers keyed digests of them (hash version 3), her chain's secret
is deleted, and every chain still verifies; nobody else's ids or rows change. On SQLite no
byte of her ids stays in the file (plain, or hex-encoded as the search index's tags were)."""

from __future__ import annotations

from pathlib import Path

from store_helpers import run_sql

from pmm import Mind

ALICE = "alice.liddell@example.org"
HER_THREADS = ("alice-thread-kyoto", "alice-thread-garden")
BOB = "bob.builder@example.org"


def _fill(mind: Mind) -> None:
    for thread in HER_THREADS:
        mind.remember_turn(f"plans for {thread}", "noted", session_id=thread, user_id=ALICE)
    mind.remember_turn("I build sheds", "nice", session_id="bob-thread", user_id=BOB)
    mind.forget(event_ids=[1], reason="a first, partial erasure")  # a marker of hers stays


def test_erasing_a_user_erases_her_ids_and_chain_key(log_target: str) -> None:
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
    assert run_sql(log_target, "SELECT count(*) FROM events WHERE user_id = ?", (ALICE,)) == [(0,)]
    for thread in HER_THREADS:
        held = run_sql(log_target, "SELECT count(*) FROM events WHERE session_id = ?", (thread,))
        assert held == [(0,)], thread
    assert run_sql(log_target, "SELECT count(*) FROM chains WHERE chain = ?", (ALICE,)) == [(0,)]
    assert run_sql(log_target, "SELECT count(*) FROM chains WHERE chain = ?", (BOB,)) == [(1,)]


def test_erasing_part_of_a_user_keeps_her_ids(log_target: str) -> None:
    with Mind(log_target) as mind:
        _fill(mind)
        mind.forget(user_id=ALICE, session_id=HER_THREADS[0], reason="one thread")
        assert mind.verify().ok
        assert {e.session_id for e in mind.store.events(user_id=ALICE)} == set(HER_THREADS)
    assert run_sql(log_target, "SELECT count(*) FROM chains WHERE chain = ?", (ALICE,)) == [(1,)]


def test_no_byte_of_her_ids_stays_in_the_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(str(db)) as mind:
        _fill(mind)
        mind.store.sync_search_index()  # her ids are in the search index's tags now
        mind.forget(user_id=ALICE, reason="account deleted")
        mind.store.sync_search_index()  # the records of the erasure are indexed too
        assert mind.verify().ok
    data = b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal") if Path(str(db) + s).exists()
    )
    for text in (ALICE, *HER_THREADS):
        for form in (text.encode(), text.encode().hex().upper().encode()):
            assert form not in data, (text, form[:20])
    assert BOB.encode() in data  # the check can see ids: bob's are there
