"""bench/chains.py's fill writes a log that verifies, through the partitioned schema
(migration 0009 routes every row by its shard), so that the verify figures cannot break
silently when the schema moves."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from pmm.records import NewEvent
from pmm.storage.postgres import PostgresEventStore

ROOT = Path(__file__).resolve().parents[3]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_chains", ROOT / "bench" / "chains.py")
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
