"""Every GIN index of the PostgreSQL schema keeps a pending list of 256 kB (migrations/0013):
with PostgreSQL's 4 MB, the append whose insert overflows the list merges it, hundreds of
milliseconds on its own time. A partitioned index takes no storage parameters, so every
partition's index carries it, and so does the copy an erasure swaps in for a partition."""

from __future__ import annotations

import psycopg
from pg_partitions import append, shard, users_apart

from pmm.storage.postgres import PostgresEventStore

_GIN = (
    "SELECT c.relname, coalesce(c.reloptions, '{}') FROM pg_class AS c"
    " JOIN pg_am AS a ON a.oid = c.relam WHERE a.amname = 'gin' AND c.relkind = 'i'"
)


def _gin_options(url: str) -> dict[str, list[str]]:
    with psycopg.connect(url) as conn:
        return {str(name): list(options) for name, options in conn.execute(_GIN)}


def _oid(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT %s::regclass::oid", (table,)).fetchone()[0])  # type: ignore[index]


def test_every_gin_index_keeps_a_short_pending_list(pg_url: str) -> None:
    PostgresEventStore(pg_url).close()
    options = _gin_options(pg_url)
    # events and event_windows, 33 partitions each
    assert len(options) == 66
    assert all("gin_pending_list_limit=256" in o for o in options.values()), options


def test_an_erased_users_partition_is_swapped_for_one_with_a_short_list(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as store:
        victim, apart, _ = users_apart(pg_url)
        for i in range(3):
            append(store, victim, f"turn {i} of hers", f"{victim}/t1")
            append(store, apart, f"turn {i} of his", f"{apart}/t1")
        with psycopg.connect(pg_url) as conn:
            before = conn.execute(
                "SELECT oid FROM pg_class WHERE relname = %s",
                (f"events_s{shard(pg_url, victim):02d}",),
            ).fetchone()
        store.forget(session_ids=[f"{victim}/t1"], reason="asked")
        with psycopg.connect(pg_url) as conn:
            after = conn.execute(
                "SELECT oid FROM pg_class WHERE relname = %s",
                (f"events_s{shard(pg_url, victim):02d}",),
            ).fetchone()
        assert before != after  # her partition is the copy now
        options = _gin_options(pg_url)
        assert len(options) == 66
        assert all("gin_pending_list_limit=256" in o for o in options.values()), options
        assert store.verify().ok
