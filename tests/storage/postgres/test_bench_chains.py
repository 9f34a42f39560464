"""bench/chains.py's fill writes a log that verifies, through the partitioned schema
(migration 0009 routes every row by its shard), so that the verify figures cannot break
silently when the schema moves."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from pg_cluster import PostgresCluster

from pmm.records import NewEvent
from pmm.storage.postgres import PostgresEventStore

ROOT = Path(__file__).resolve().parents[3]


def _bench() -> ModuleType:
    # named as bench/ on sys.path names it: the erase stall's spawned writers import it so
    spec = importlib.util.spec_from_file_location("chains", ROOT / "bench" / "chains.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_fill_writes_partitioned_rows_that_verify(pg_url: str) -> None:
    bench = _bench()
    PostgresEventStore(pg_url).close()  # the schema, migrations included
    bench.fill(pg_url, 900, 30, batch=400)
    figures = bench.verify_figures(pg_url, runs=1)
    assert figures["full_rows"] == 900
    assert figures["user_rows"] == 30  # u7: every 30th event
    with PostgresEventStore(pg_url) as store:
        assert store.verify(user_id="u3").ok
        [appended] = store.append_many(
            [NewEvent("prompt", "after the fill", "u3-t0", "user", None, None, "u3")]
        )
        assert store.verify(user_id="u3").ok and appended.prev_hash is not None


class _Go:
    """The writers' start barrier, already open (one writer, no sampler)."""

    def wait(self) -> None:
        return None


def test_the_chained_floor_writes_rows_that_verify(pg_url: str) -> None:
    """The ``chained`` mode is a floor of PMM's append only if its rows are PMM's rows:
    sealed by PMM's code onto the user's chain, they pass PMM's own verify."""
    bench = _bench()
    PostgresEventStore(pg_url).close()
    done, _, _ = bench._chained_writer(pg_url, "user0", "prompt", _Go(), 0.3)
    assert done > 0
    with PostgresEventStore(pg_url) as store:
        report = store.verify(user_id="user0")
        assert report.ok, report
        assert report.rows == done
        assert store.verify().ok


def test_the_row_floor_writes_the_rows_an_append_would(pg_url: str) -> None:
    bench = _bench()
    PostgresEventStore(pg_url).close()
    done, _, _ = bench._row_writer(pg_url, "user0", "prompt", _Go(), 0.3)
    with PostgresEventStore(pg_url) as store:
        store.append_many(
            [NewEvent("prompt", "turn 0 of user0", "user0-s", "user", None, None, "user0")]
        )
        rows = store._db.read(
            "SELECT kind, session_id, role, content, user_id, shard FROM events"
            " WHERE user_id = 'user0' ORDER BY id"
        )
    assert len(rows) == done + 1
    assert rows[0] == rows[-1]  # the bench's row and PMM's own differ in hashes and time only


def test_the_erase_stall_figure_runs_an_erasure_beside_writers(pg_cluster: PostgresCluster) -> None:
    """bench/chains.py's erase-stall figure (its --erase-stall story underneath, which nothing
    else runs in the suite): other users' appends went on while one user was erased."""
    bench = _bench()
    figures = bench.erase_figures(pg_cluster.url, 3000, 60)
    assert figures["partition_rows"] > 0 and figures["erase_s"] > 0
    assert figures["appends_during"] > 0
    assert 0 < figures["other_ms"] < 60_000 and 0 < figures["same_ms"] < 60_000
    # what the longest appends' backends were sampled waiting on: counts by wait event
    for waits in (figures["same_waited_on"], figures["other_waited_on"]):
        assert all(isinstance(n, int) and n > 0 and ":" in w for w, n in waits.items())
