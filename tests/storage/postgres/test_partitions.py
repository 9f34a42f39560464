"""Tables partitioned by user on PostgreSQL (migrations/0009): rows go to their user's
partition, an append (two plpgsql calls) reads and locks no partition but its user's,
erasing a user rewrites her partitions only and her words leave the data files, and a log
written before 0009 moves into partitions and goes on verifying, appending and erasing."""

from __future__ import annotations

import re

import psycopg
import pytest
from pg_cluster import PostgresCluster
from pg_partitions import (
    SECRET,
    TOKENS,
    VECTOR,
    append,
    files,
    holding,
    pg_files,
    shard,
    users_apart,
)

from pmm.records import NewEvent
from pmm.storage.postgres import PostgresEventStore
from pmm.storage.postgres import connection as pg_connection


def test_rows_go_to_their_users_partition_and_no_user_to_zero(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as store:
        a, b, _ = users_apart(pg_url)
        ids = {
            append(store, a, "hello from a", "a/1"): shard(pg_url, a),
            append(store, b, "hello from b", "b/1"): shard(pg_url, b),
            append(store, None, "no user here", "anon"): 0,
        }
        store.put_embeddings("m", 2, [(i, VECTOR) for i in ids])
        with psycopg.connect(pg_url) as conn:
            for table in ("events", "embeddings", "event_windows"):
                key = "id" if table == "events" else "event_id"
                placed = dict(conn.execute(f"SELECT {key}, shard FROM {table}").fetchall())
                assert placed == ids, table
        assert store.session_owner("a/1") == (True, a)
        assert store.session_owner("anon") == (True, None)
        assert store.session_owner("nobody") == (False, None)
        assert store.verify().ok


def test_assigning_a_user_moves_the_session_to_her_partition(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as store:
        first = append(store, None, "written before users", "s")
        store.put_embeddings("m", 2, [(first, VECTOR)])
        store.assign_user("s", "zoe", reason="migrated")
        part = shard(pg_url, "zoe")
        with psycopg.connect(pg_url) as conn:
            for table, key in (("events", "id"), ("embeddings", "event_id"),
                               ("event_windows", "event_id")):  # fmt: skip
                row = conn.execute(f"SELECT shard FROM {table} WHERE {key} = %s", (first,))
                assert row.fetchone() == (part,), table
        assert store.session_owner("s") == (True, "zoe")
        append(store, "zoe", "and after", "s")
        assert [e.user_id for e in store.events(user_id="zoe")] == ["zoe"] * 3
        assert store.verify().ok


def test_an_append_locks_only_its_users_partitions_even_after_many_calls(pg_url: str) -> None:
    # plpgsql caches its statements' plans and may switch to a generic plan after five
    # calls, which would lock every partition: the functions plan each call for its values.
    with PostgresEventStore(pg_url, pool_size=1) as store:
        for i in range(12):
            append(store, "ann", f"turn {i}", "ann/1")
        with store._db.write() as conn:
            store._append_locked(conn, [store._checked(NewEvent(
                "prompt", "one more", "ann/1", "user", None, None, "ann"))])  # fmt: skip
            locked = {
                str(r[0])
                for r in conn.execute(
                    "SELECT relation::regclass::text FROM pg_locks"
                    " WHERE pid = pg_backend_pid() AND locktype = 'relation'"
                )
            }
    partitions = {n for n in locked if re.fullmatch(r"(events|event_windows)_s\d\d", n)}
    mine = f"_s{shard(pg_url, 'ann'):02d}"
    assert partitions == {f"events{mine}", f"event_windows{mine}"}


def test_reads_of_one_user_plan_her_partition_only(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as store:
        append(store, "ann", "hello", "ann/1")
        where = "shard = pmm_shard(%s::text) AND user_id = %s"
        with psycopg.connect(pg_url) as conn:
            conn.execute("SET plan_cache_mode = force_custom_plan")
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    f"EXPLAIN SELECT id FROM events WHERE {where}", ("ann", "ann")
                ).fetchall()
            )
        assert set(re.findall(r" on (events_s\d+)", plan)) == {
            f"events_s{shard(pg_url, 'ann'):02d}"
        }


@pytest.mark.parametrize("user", [None, "ünïcode ✓", "x" * 500, "a'b\"c%_\\"])
def test_any_user_id_has_a_partition(pg_url: str, user: str | None) -> None:
    with PostgresEventStore(pg_url) as store:
        first = append(store, user, "hello", "s")
        assert store.get(first).user_id == user and 0 <= shard(pg_url, user) <= 32
        assert (user is None) == (shard(pg_url, user) == 0)


def test_erasing_a_user_rewrites_her_partitions_only_and_her_words_leave_the_files(
    pg_cluster: PostgresCluster, pg_url: str
) -> None:
    with PostgresEventStore(pg_url) as store:
        victim, other, _ = users_apart(pg_url)
        secret = append(store, victim, SECRET, f"{victim}/t1")
        kept = append(store, other, "the zebrawood clock of the other user", f"{other}/t1")
        store.put_embeddings("m", 2, [(secret, VECTOR), (kept, b"\0\0\0\0\0\0\x80?")])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE")
            conn.execute("CHECKPOINT")
        base = pg_files(pg_cluster, pg_url)
        assert holding(base, TOKENS) == set(TOKENS)
        before = files(pg_url)

        report = store.forget(session_ids=[f"{victim}/t1"], reason="account deleted")

        assert report.erased == [secret]
        after = files(pg_url)
        mine = f"_s{shard(pg_url, victim):02d}"
        assert set(before) == set(after)  # the same partitions, by name
        assert {n for n in before if before[n] != after[n]} == {
            f"{t}{mine}" for t in ("events", "embeddings", "event_windows")
        }
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            assert conn.execute("SELECT count(*) FROM pmm_swap_log").fetchone() == (0,)
            assert conn.execute(
                "SELECT count(*) FROM pg_trigger WHERE tgname = 'pmm_swap'"
            ).fetchone() == (0,)
            assert not conn.execute(
                "SELECT 1 FROM pg_class WHERE relname LIKE '%%_swap'"
            ).fetchall()
        assert holding(base, ("QX77TRELLIS",)) == set()
        assert store.get(kept).content == "the zebrawood clock of the other user"
        assert [i for i, _ in store.search_text("zebrawood")] == [kept]
        assert store.verify().ok
        assert append(store, victim, "a new start", f"{victim}/t2") > kept  # her partition works


def test_a_log_written_before_0009_moves_into_partitions(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pg_connection.migrations
    monkeypatch.setattr(pg_connection, "migrations", lambda: tuple(m for m in real() if m[0] < 9))
    with PostgresEventStore(pg_url) as store:  # a real log as migrations 0001-0008 left it
        ids = [
            append(store, "ann", "Ann lives in Lisbon", "ann/1"),
            append(store, "bob", "Bob keeps bees", "bob/1"),
            append(store, None, "a turn without a user", "legacy"),
            append(store, "ann", "Ann has a cat", "ann/1"),
        ]
        assert max(store.applied_migrations_all()) == 8
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO embeddings VALUES (%s, 'm', 2, %s), (%s, 'm', 2, %s)",
            (ids[1], VECTOR, ids[2], VECTOR),
        )
        conn.execute("INSERT INTO edges VALUES (%s, %s, 'SUMMARIZES')", (ids[3], ids[0]))
    monkeypatch.setattr(pg_connection, "migrations", real)

    with PostgresEventStore(pg_url) as store:
        assert 9 in store.applied_migrations_all()
        assert store.verify().ok and store.count() == 4
        with psycopg.connect(pg_url) as conn:
            placed = dict(conn.execute("SELECT id, shard FROM events").fetchall())
            vectors_at = dict(conn.execute("SELECT event_id, shard FROM embeddings").fetchall())
            windows_at = dict(conn.execute("SELECT event_id, shard FROM event_windows").fetchall())
        want = {i: shard(pg_url, u) for i, u in zip(ids, ["ann", "bob", None, "ann"], strict=True)}
        assert placed == want and windows_at == want
        assert vectors_at == {ids[1]: want[ids[1]], ids[2]: 0}
        assert store.session_owner("bob/1") == (True, "bob")
        assert store.session_owner("legacy") == (True, None)
        assert [i for i, _ in store.search_text("bees")] == [ids[1]]
        assert store.edges_from(ids[3], "SUMMARIZES") == [ids[0]]
        new = append(store, "bob", "Bob moved to Porto", "bob/1")
        assert store.verify().ok and store.verify(user_id="bob").ok
        report = store.forget(session_ids=["bob/1"], reason="asked")
        assert report.erased == [ids[1], new] and store.verify().ok
        assert store.get(ids[0]).content == "Ann lives in Lisbon"
