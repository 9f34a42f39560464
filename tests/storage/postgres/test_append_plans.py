"""The append's cached plans (migrations/0010): a session's newest turns are read from her
partition by an index walk whose plan is made once and kept, whatever the partition's
statistics say, and a kept plan follows the partition through an erasure's swap (the copy
that replaces it takes its name); a client from before 0010 still records its sessions'
owners."""

from __future__ import annotations

import json
import re
from typing import Any

import psycopg
import pytest
from pg_partitions import append, files, shard

from pmm.records import NewEvent
from pmm.storage.postgres import PostgresEventStore
from pmm.storage.postgres import chains as pg_chains
from pmm.storage.postgres.swap import rewrite_partition


def _plans(store: PostgresEventStore, user: str, text: str, session: str) -> list[str]:
    """One append on the store's only connection, with every statement's plan (the nested
    ones of the functions included) sent back by auto_explain."""
    notices: list[str] = []
    with store._db.write() as conn:
        conn.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
        for sql in (
            "LOAD 'auto_explain'",
            "SET LOCAL auto_explain.log_min_duration = 0",
            "SET LOCAL auto_explain.log_nested_statements = on",
            "SET LOCAL auto_explain.log_level = notice",
        ):
            conn.execute(sql)
        store._append_locked(conn, [store._checked(NewEvent(
            "prompt", text, session, "user", None, None, user))])  # fmt: skip
    return notices


def _tail_plan(notices: list[str]) -> str:
    [plan] = [n for n in notices if "e.session_id = sid" in n]
    return plan


def test_the_newest_turns_are_read_by_a_kept_index_walk_on_a_partition_without_statistics(
    pg_url: str,
) -> None:
    with PostgresEventStore(pg_url, pool_size=1) as store:
        for i in range(300):  # rows the partition's statistics (none yet) do not know of
            append(store, "ann", f"turn {i}", "ann/1")
        plan = _tail_plan(_plans(store, "ann", "one more", "ann/1"))
        part = f"events_s{shard(pg_url, 'ann'):02d}"
        # a generic plan (parameters, not values), walking the index backwards: no bitmap
        # of the session's 300 rows and no sort of them
        assert re.search(rf"Index Scan Backward using \S+ on {part} e", plan), plan
        assert "Bitmap" not in plan and "Sort" not in plan, plan
        assert "$" in plan and "'ann/1'" not in plan, plan


def test_a_kept_plan_reads_the_partition_that_replaced_it_after_a_swap(pg_url: str) -> None:
    with PostgresEventStore(pg_url, pool_size=1) as store:
        for i in range(8):  # enough calls for every plan to be a kept one
            append(store, "ann", f"turn {i} about apricots", "ann/1")
        part = shard(pg_url, "ann")
        before = files(pg_url)
        for table in ("events", "event_windows"):
            rewrite_partition(store._db, table, part)
        after = files(pg_url)
        assert before[f"events_s{part:02d}"] != after[f"events_s{part:02d}"]
        new = append(store, "ann", "then bananas", "ann/1")
        # the new turn's window key holds the turns before it, read from the new partition
        with psycopg.connect(pg_url) as conn:
            row: Any = conn.execute(
                "SELECT search::text FROM event_windows WHERE event_id = %s", (new,)
            ).fetchone()
        assert "'apricot'" in row[0] and "'banana'" in row[0], row
        assert [e.content for e in store.events(user_id="ann")][-2:] == [
            "turn 7 about apricots",
            "then bananas",
        ]
        assert store.verify().ok


def test_a_client_from_before_0010_still_records_the_sessions_it_begins(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an app server not yet upgraded sends pmm_append_rows no "owners" (a rolling upgrade)
    def old_request(value: Any) -> str:
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "owners"}
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    with PostgresEventStore(pg_url, pool_size=1) as store:
        monkeypatch.setattr(pg_chains, "_dumps", old_request)
        append(store, "ann", "first words", "ann/1")
        append(store, None, "a turn without a user", "loose/1")
        monkeypatch.undo()
        assert store.session_owner("ann/1") == (True, "ann")
        assert store.session_owner("loose/1") == (True, None)
        append(store, "ann", "and more", "ann/1")
        assert [e.content for e in store.events(session_id="ann/1")] == [
            "first words",
            "and more",
        ]
