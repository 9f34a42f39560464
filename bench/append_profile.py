"""Where the server's time goes in one writer's PostgreSQL appends (issue 21): the server
time per append of every statement, the ones inside the append's plpgsql functions
included, execution and planning apart, from ``pg_stat_statements``.

    python bench/append_profile.py                  # 1,500 appends after 300 to warm up
    python bench/append_profile.py --appends 3000 --kind note

It starts a throwaway cluster (tests/storage/pg_cluster.py) with PostgreSQL's default
durability, loads ``pg_stat_statements`` (``track = all``, ``track_planning = on``: a
restart), appends ``--warm`` events and then ``--appends`` more, one per transaction, to
one session of one user (as bench/chains.py's one writer does), and prints the
statements that took the most server time, per append. The nested statements' time is
also inside their function's line (the ``top`` column says which are top-level); the
function's own line, less its statements, is the plpgsql and JSON work around them.
The client's CPU per append is printed too. Run it from each tree (``PYTHONPATH`` set to
the tree) in turn to compare two builds on the same machine.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "storage"))
warnings.filterwarnings("ignore")

from pmm.records import NewEvent  # noqa: E402
from pmm.storage.postgres import PostgresEventStore  # noqa: E402

REPORT = (
    "SELECT calls, total_exec_time / %s * 1000, total_plan_time / %s * 1000, toplevel,"
    " left(regexp_replace(query, '\\s+', ' ', 'g'), 90)"
    " FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat_statements%%'"
    " ORDER BY total_exec_time + total_plan_time DESC LIMIT %s"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=1500, help="appends measured (1,500)")
    parser.add_argument("--warm", type=int, default=300, help="appends before (300)")
    parser.add_argument("--kind", default="prompt", help="prompt (a turn) or note (no window)")
    parser.add_argument("--top", type=int, default=20, help="statements printed (20)")
    args = parser.parse_args()

    import psycopg
    from pg_cluster import PostgresCluster

    cluster = PostgresCluster.start(durable=True)
    try:
        with psycopg.connect(cluster.url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        log = str(cluster.datadir / "server.log")
        restart = cluster._run("pg_ctl", "-D", str(cluster.datadir), "-l", log, "-w", "restart")
        if restart.returncode != 0:
            raise SystemExit(f"cannot restart with pg_stat_statements: {restart.stderr}")
        with psycopg.connect(cluster.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
            conn.execute("SELECT pg_reload_conf()")
        with PostgresEventStore(cluster.url, pool_size=1) as store:

            def append(text: str) -> None:
                entry = NewEvent(args.kind, text, "u1/s", "user", None, None, "u1")
                store.append_many([entry])

            for i in range(args.warm):
                append(f"warm-up turn {i} about the garden")
            with psycopg.connect(cluster.url, autocommit=True) as conn:
                conn.execute("SELECT pg_stat_statements_reset()")
            started, cpu = time.perf_counter(), time.process_time()
            for i in range(args.appends):
                append(f"turn {i} of the user about the weather in town")
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        n = args.appends
        print(
            f"{n} {args.kind} appends after {args.warm}, one writer, fsync on:"
            f" {n / wall:,.0f}/s, client CPU {cpu / n * 1e3:.3f} ms per append"
        )
        print(f"{'calls':>6} {'exec µs':>9} {'plan µs':>9} {'top':>4}  statement (per append)")
        with psycopg.connect(cluster.url, autocommit=True) as conn:
            for calls, run, plan, top, query in conn.execute(REPORT, (n, n, args.top)):
                print(f"{calls:>6} {run:>9.1f} {plan:>9.1f} {'yes' if top else '':>4}  {query}")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
