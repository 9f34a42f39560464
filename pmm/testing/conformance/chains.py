"""One hash chain per user (issue 21) on either backend: each user's events link to her
previous one, verify checks every chain and reports their heads and one root, verify of
one user reads her rows alone, and each tamper is caught: a truncation against the head
each chain's store recorded (and named as one, not blamed on the next honest append), and
what rewrites that record too (a truncation, a chain forged with the secret) only against
a pinned head or root, as the design says."""

from __future__ import annotations

from typing import Any

import pytest

from pmm.events.chains import NO_USER, user_digest
from pmm.events.hashing import chain_payload_v3, keyed_digest, sha256_hex
from pmm.events.merkle import merkle_root
from pmm.records import NewEvent
from pmm.storage.base import EventLog
from pmm.testing.backend import SqlRunner
from pmm.testing.fixtures import *  # noqa: F403

_DIGESTS = ("content_sha256", "prev_hash", "hash", "user_digest", "session_digest")


@pytest.fixture
def target(log_target: str, raw_sql: SqlRunner) -> str:
    """The store's target, for a test that reads and rewrites its rows behind PMM's back
    (skipped for a backend without ``Backend.sql``)."""
    return log_target


@pytest.fixture
def store(log: EventLog) -> EventLog:
    return log


def _rows(sql: SqlRunner, target: str, user: str) -> list[dict[str, Any]]:
    cols = (
        "id, ts, kind, role, content, content_sha256, meta, prev_hash, hash, user_digest,"
        " session_digest"
    )
    found = sql(target, f"SELECT {cols} FROM events WHERE user_id = ? ORDER BY id", (user,))
    names = [c.strip() for c in cols.split(",")]
    return [
        {k: (v.hex() if isinstance(v, bytes) else v) for k, v in zip(names, r, strict=True)}
        for r in found
    ]


def _write(sql: SqlRunner, target: str, row: dict[str, Any], *columns: str) -> None:
    """Store ``columns`` of ``row`` (hex digests as each backend keeps them)."""
    sqlite = not target.startswith("postgresql://")
    values = [
        bytes.fromhex(row[c]) if sqlite and c in _DIGESTS and row[c] is not None else row[c]
        for c in columns
    ]
    sets = ", ".join(f"{c} = ?" for c in columns)
    sql(target, f"UPDATE events SET {sets} WHERE id = ?", (*values, row["id"]))


def _rehash(row: dict[str, Any]) -> str:
    return sha256_hex(
        chain_payload_v3(
            ts=row["ts"], kind=row["kind"], role=row["role"],
            content_sha256=row["content_sha256"], meta_json=row["meta"],
            prev_hash=row["prev_hash"], user_digest=row["user_digest"],
            session_digest=row["session_digest"],
        )
    )  # fmt: skip


def _fill(log: EventLog) -> None:
    """Alice and bob interleaved, two threads each, and a few events without a user."""
    for i in range(4):
        log.append_many(
            [
                NewEvent("prompt", f"alice {i}", f"a{i % 2}", "user", None, None, "alice"),
                NewEvent("prompt", f"bob {i}", f"b{i % 2}", "user", None, None, "bob"),
                NewEvent("event", f"system {i}"),
            ]
        )


def test_each_user_has_her_own_chain_and_one_root_covers_them(store: EventLog) -> None:
    _fill(store)
    alice = store.events(user_id="alice")
    assert [e.hash_version for e in alice] == [3] * 4
    assert alice[0].prev_hash is None
    assert [e.prev_hash for e in alice[1:]] == [e.hash for e in alice[:-1]]
    report = store.verify()
    assert report.ok and report.rows == 12, report
    keys = dict(store.chain_keys())
    assert set(keys) == {"alice", "bob", ""}
    assert alice[0].user_digest == user_digest(keys["alice"], "alice")
    assert alice[0].session_digest == keyed_digest(keys["alice"], "session", "a0")
    assert report.heads == {
        user_digest(keys["alice"], "alice"): alice[-1].hash,
        user_digest(keys["bob"], "bob"): store.events(user_id="bob")[-1].hash,
        NO_USER: store.events(kinds=["event"])[-1].hash,
    }
    assert report.root == merkle_root(report.heads) and report.root is not None
    mine = store.verify(user_id="alice")
    assert mine.ok and mine.rows == 4 and mine.user_head == alice[-1].hash and mine.root is None
    assert store.verify(expect_head=report.root).ok
    assert store.verify(user_id="alice", expect_head=alice[1].hash).ok  # she grew since


def _set_recorded_head(sql: SqlRunner, target: str, chain: str, event: Any) -> None:
    """Rewrite the head a chain's store recorded (what a tamperer who knows the schema
    does after cutting the chain)."""
    digest = bytes.fromhex(event.hash) if not target.startswith("postgresql://") else event.hash
    sql(
        target, "UPDATE chains SET head_id = ?, head_hash = ? WHERE chain = ?",
        (event.id, digest, chain),
    )  # fmt: skip


def test_a_row_deleted_mid_chain_breaks_that_user_alone(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    _fill(store)
    alice = store.events(user_id="alice")
    raw_sql(target, "DELETE FROM events WHERE id = ?", (alice[1].id,))
    report = store.verify()
    assert not report.ok and report.first_bad_id == alice[2].id  # where the walk stopped
    assert report.reason and f"between id {alice[0].id} and id {alice[2].id}" in report.reason
    assert f"the row at id {alice[2].id} is intact" in report.reason
    assert "no longer in the log" in report.reason and "'alice'" in report.reason
    assert not store.verify(user_id="alice").ok
    assert store.verify(user_id="bob").ok


def test_a_truncated_chain_is_caught_by_its_recorded_head_and_named(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    _fill(store)
    root = store.verify().root
    alice_head = store.verify(user_id="alice").user_head
    bob_head = store.verify(user_id="bob").user_head
    alice = store.events(user_id="alice")
    raw_sql(target, "DELETE FROM events WHERE id >= ? AND user_id = 'alice'", (alice[2].id,))
    cut = (
        f"chain 'alice' ends at id {alice[1].id} but its recorded head is {alice[-1].id}: "
        "events were removed from its end"
    )
    for report in (store.verify(), store.verify(user_id="alice")):
        assert not report.ok and report.reason == cut and report.first_bad_id is None
    assert store.verify(user_id="bob").ok and store.verify(user_id="bob", expect_head=bob_head).ok
    # One who also sets the recorded head back is seen only against a pin:
    _set_recorded_head(raw_sql, target, "alice", alice[1])
    assert store.verify().ok  # from inside, a shorter chain is a valid chain...
    assert store.verify(user_id="alice").ok
    pinned = store.verify(expect_head=root)
    assert not pinned.ok and pinned.reason and "pinned head" in pinned.reason
    assert not store.verify(user_id="alice", expect_head=alice_head).ok
    assert store.verify(user_id="bob", expect_head=bob_head).ok  # ...and bob's is intact


def test_the_first_honest_append_after_a_cut_is_not_blamed(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    _fill(store)
    alice = store.events(user_id="alice")
    raw_sql(target, "DELETE FROM events WHERE id >= ? AND user_id = 'alice'", (alice[2].id,))
    [new] = store.append_many(
        [NewEvent("prompt", "alice is back", "a0", "user", None, None, "alice")]
    )
    for report in (store.verify(), store.verify(user_id="alice")):
        # the walk stops at the new row, and the reason says it is intact: rows were cut
        assert not report.ok and report.first_bad_id == new.id, report
        assert (
            report.reason
            and (
                f"chain 'alice' breaks between id {alice[1].id} and id {new.id}: the row at id "
                f"{new.id} is intact but follows a row that is no longer in the log: events were "
                f"removed from the chain's end before id {new.id} was appended"
            )
            in report.reason
        )
    assert store.verify(user_id="bob").ok


def test_reordered_rows_of_one_chain_are_caught(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    _fill(store)
    alice = store.events(user_id="alice")
    a, b = alice[1].id, alice[2].id
    raw_sql(target, "UPDATE events SET id = -1 WHERE id = ?", (a,))
    raw_sql(target, "UPDATE events SET id = ? WHERE id = ?", (a, b))
    raw_sql(target, "UPDATE events SET id = ? WHERE id = -1", (b,))
    report = store.verify(user_id="alice")
    assert not report.ok and report.first_bad_id == a and "prev_hash" in (report.reason or "")
    assert not store.verify().ok


def test_a_chain_moved_to_another_user_is_caught(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    _fill(store)
    raw_sql(target, "UPDATE events SET user_id = 'bob' WHERE user_id = 'alice'")
    report = store.verify()
    assert not report.ok and "moved to another user" in (report.reason or "")
    assert not store.verify(user_id="bob").ok


def test_a_chain_forged_without_the_secret_is_caught(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    # Rewritten as mallory's: her digest must be made up (the secret is not known), and
    # every hash recomputed; the digest is not the keyed digest of the stored user id.
    _fill(store)
    store.append_many([NewEvent("prompt", "mallory is here", "m", "user", None, None, "mallory")])
    made_up = sha256_hex("mallory")
    prev = None
    for row in _rows(raw_sql, target, "alice"):
        row["user_digest"], row["prev_hash"] = made_up, prev
        row["hash"] = prev = _rehash(row)
        _write(raw_sql, target, row, "user_digest", "prev_hash", "hash")
    raw_sql(target, "UPDATE events SET user_id = 'mallory' WHERE user_id = 'alice'")
    report = store.verify()
    assert not report.ok and "moved to another user" in (report.reason or "")


def test_a_chain_forged_with_the_secret_is_caught_by_the_pinned_root(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    _fill(store)
    root = store.verify().root
    alice_head = store.verify(user_id="alice").user_head
    prev = None
    for i, row in enumerate(_rows(raw_sql, target, "alice")):
        if i == 1:
            row["content"] = "I never said that"
            row["content_sha256"] = sha256_hex(row["content"])
        row["prev_hash"] = prev
        row["hash"] = prev = _rehash(row)
        _write(raw_sql, target, row, "content", "content_sha256", "prev_hash", "hash")
    report = store.verify()  # the chain's recorded head is not its new last row...
    assert not report.ok and "recorded head" in (report.reason or "")
    assert "rewritten" in (report.reason or "")
    _set_recorded_head(raw_sql, target, "alice", store.events(user_id="alice")[-1])
    assert store.verify().ok  # ...and rewritten too, the chain verifies from inside
    assert not store.verify(expect_head=root).ok
    assert not store.verify(user_id="alice", expect_head=alice_head).ok


def test_rows_moved_between_chains_are_caught(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    _fill(store)
    keys = dict(store.chain_keys())
    bob = _rows(raw_sql, target, "bob")
    row = bob[2]  # into alice's chain: her digest, linked after her newest row, re-hashed
    row["user_digest"] = user_digest(keys["alice"], "alice")
    row["prev_hash"] = store.events(user_id="alice")[-1].hash
    row["hash"] = _rehash(row)
    _write(raw_sql, target, row, "user_digest", "prev_hash", "hash")
    raw_sql(target, "UPDATE events SET user_id = 'alice' WHERE id = ?", (row["id"],))
    report = store.verify()
    assert not report.ok, report
    assert not store.verify(user_id="bob").ok  # bob's chain has a hole
    assert not store.verify(user_id="alice").ok


def test_assigning_a_session_keeps_every_chain_verifying(store: EventLog) -> None:
    store.append("prompt", "an old chat", session_id="old", role="user")
    store.append("prompt", "hi", session_id="a", role="user", ts=None)
    store.append_many([NewEvent("prompt", "mine", "a2", "user", None, None, "alice")])
    marker = store.assign_user("old", "alice")
    assert marker.hash_version == 3 and marker.user_id == "alice"
    after = store.append("response", "welcome back", session_id="old", role="assistant")
    assert after.user_id == "alice" and after.prev_hash == marker.hash
    assert store.verify().ok
    mine = store.verify(user_id="alice")
    assert mine.ok and mine.user_head == after.hash


def test_rows_whose_ids_and_secret_were_erased_still_verify(
    store: EventLog, target: str, raw_sql: SqlRunner
) -> None:
    # What a future erasure of a user can leave: her rows without her ids, her secret
    # gone; the hashes cover the stored digests, so every chain still verifies.
    _fill(store)
    before = store.verify()
    raw_sql(target, "UPDATE events SET user_id = NULL, session_id = NULL WHERE user_id = 'alice'")
    raw_sql(target, "DELETE FROM chains WHERE chain = 'alice'")
    after = store.verify()
    assert after.ok, after
    assert after.root == before.root and after.heads == before.heads
    # with her ids still there, a missing secret is a failure, not a pass
    raw_sql(target, "DELETE FROM chains WHERE chain = 'bob'")
    report = store.verify()
    assert not report.ok and "no chain key" in (report.reason or "")
