"""How long erasing one user on PostgreSQL stalls the other users' appends (issue 21).

    python bench/erase_stall.py              # throwaway cluster, fsync on, 1,000,000 events
    python bench/erase_stall.py --events 100000 --users 200 --writers 4
    python bench/erase_stall.py --quick      # 3,000 events, 30 users, 2 writers
    python bench/erase_stall.py --url postgresql://u@host/db      # an empty database
    python bench/erase_stall.py --erasures swap,swap:0.02,swap,swap:0.02   # PMM's, paused
    python bench/erase_stall.py --stats database --erasures vacuum,swap    # before 2026-11-25

Builds a log of ``--events`` events of ``--users`` users (one thread each; content,
window keys and one 16-float vector per event) through PMM's schema with
``INSERT ... SELECT generate_series`` (not one append at a time: the rows hold no valid
chain, which nothing here verifies). Then, twice on that database, starts ``--writers``
writer processes, each appending turns for its own user through
``PostgresEventStore.append_many`` (half of them users in the erased user's partition, half
in other partitions), waits ``--before`` seconds, erases one user (``forget`` of all her
sessions: the rows become NULL, then her partitions are rewritten) and keeps the writers
going until it is done: first the baseline, her partitions rewritten in place by ``VACUUM
FULL`` (what the partitioned design did before the swap), then PMM's erasure (copy beside
the live partition, swap), each erasing another user of a partition of the same size.
``--erasures`` lists the erasures to run, in order, each on a user of its own partition:
``vacuum`` (the baseline), ``swap`` (PMM's) and ``swap:SECONDS`` (PMM's with ``forget(...,
pause=SECONDS)`` between the copy's chunks).

``--stats`` says what the setup analyzes after loading: ``partitions`` (the default: every
table but the partitioned parents, which is what autovacuum leaves a deployment with, as it
never analyzes a partitioned table) or ``database`` (a database-wide ``ANALYZE``, which
gives the parents statistics of their own: then every erasure analyzes them again, reading
every partition).
Prints, for each group of writers, the longest append, p50 and p99 before and during the
erasure, the erasure's total time and its steps with the lock each holds, and what the
writers' backends were waiting on while the erasure ran (``pg_stat_activity`` sampled every
10 ms: a heavyweight ``Lock`` versus I/O and WAL waits).

Without ``--url`` a throwaway cluster is started (tests/storage/pg_cluster.py) with
PostgreSQL's default durability: fsync on, synchronous commit.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "storage"))
sys.path.insert(0, str(ROOT / "bench"))

import psycopg  # noqa: E402
from harness import Bench  # noqa: E402

import pmm.storage.postgres.erasure as pg_erasure  # noqa: E402
import pmm.storage.postgres.swap as pg_swap  # noqa: E402
from pmm.records import NewEvent  # noqa: E402
from pmm.storage.postgres import PostgresEventStore  # noqa: E402

WORDS = (
    "weather train Bergen football Lisbon passport garden recipe bicycle meeting invoice "
    "holiday doctor concert library kitchen mountain river coffee project deadline budget "
    "painting guitar museum ferry harbour market village winter summer birthday"
).split()
_ARRAY = "ARRAY[" + ", ".join(f"'{w}'" for w in WORDS) + "]"
_TEXT = (
    f"'Turn ' || i || ': we talked about the ' || ({_ARRAY})[1 + i %% 31] || ', the '"
    f" || ({_ARRAY})[1 + (i * 7) %% 31] || ' and the ' || ({_ARRAY})[1 + (i * 13) %% 31]"
    f" || ', then the ' || ({_ARRAY})[1 + (i * 17) %% 31] || ' near ' || md5(i::text) || '.'"
)
WRITER_APP = "pmm_bench_writer"
"""application_name of the writers' connections (what the sampler looks for), followed by
a space and the writer's user."""


def _load(url: str, events: int, users: int, stats: str, vacuum: bool = False) -> float:
    """Fill an empty log with the synthetic rows and analyze it (``stats``: "partitions",
    every table but the partitioned parents; "database", all); with ``vacuum``, VACUUM every
    table first (what autovacuum does to freshly inserted rows some time after the load);
    returns the seconds."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        step = 100_000
        for low in range(1, events + 1, step):
            high = min(events, low + step - 1)
            conn.execute(
                "INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256,"
                " meta, prev_hash, hash, hash_version, user_id, shard)"
                " SELECT i, '2026-01-01T00:00:00.000000Z', k, u || '/t0', r, c, md5(c), '{}',"
                " md5((i - 1)::text), md5(i::text), 2, u, pmm_shard(u) FROM"
                f" (SELECT i, 'u' || (i %% %s) AS u, {_TEXT} AS c,"
                " CASE WHEN i %% 2 = 0 THEN 'prompt' ELSE 'response' END AS k,"
                " CASE WHEN i %% 2 = 0 THEN 'user' ELSE 'assistant' END AS r"
                " FROM generate_series(%s::bigint, %s::bigint) AS i) AS g",
                (users, low, high),
            )
            conn.execute(
                "INSERT INTO event_windows(event_id, session_id, kind, search, shard)"
                " SELECT id, session_id, kind, setweight(to_tsvector('english', content), 'A'),"
                " shard FROM events WHERE id BETWEEN %s AND %s",
                (low, high),
            )
            conn.execute(
                "INSERT INTO embeddings(event_id, model, dim, vector, shard)"
                " SELECT id, 'bench', 16, decode(md5(id::text) || md5((id + 1)::text)"
                " || md5((id + 2)::text) || md5((id + 3)::text), 'hex'), shard"
                " FROM events WHERE id BETWEEN %s AND %s",
                (low, high),
            )
        # What PMM's appends keep (migrations/0006, 0009).
        conn.execute("SELECT setval('events_id_seq', %s)", (events + 1,))
        conn.execute("INSERT INTO session_owners SELECT DISTINCT session_id, user_id FROM events")
        if vacuum:
            conn.execute("VACUUM")
        if stats == "database":
            conn.execute("ANALYZE")
        else:  # what autovacuum does: it never analyzes a partitioned table
            tables = [
                str(r[0])
                for r in conn.execute(
                    "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n"
                    " ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'm')"
                    " AND n.nspname = current_schema()"
                )
            ]
            conn.execute(f"ANALYZE {', '.join(tables)}")
        conn.execute("CHECKPOINT")
    return time.perf_counter() - started


def _writer(url: str, user: str, stop: Any, out: Any) -> None:
    """Append turns for ``user`` until ``stop`` is set; sends ``[(start, seconds)]``."""
    samples: list[tuple[float, float]] = []
    session = f"{user}/writer"
    ready = False
    name = f"{WRITER_APP} {user}".replace(" ", "%20")
    with PostgresEventStore(f"{url}?application_name={name}", pool_size=1) as store:
        while not stop.is_set():
            t0 = time.time()
            entry = NewEvent("prompt", f"note {t0}", session, "user", None, None, user)
            store.append_many([entry])
            samples.append((t0, time.time() - t0))
            if not ready:
                out.put(("ready", user))
                ready = True
    out.put((user, samples))


class _Phases(logging.Handler):
    """Collects the erasure's timed steps (pmm.storage.postgres.erasure logs them)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.started = time.time()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"[ends at {time.time() - self.started:7.2f} s] {record.getMessage()}")


def _in_place(db: Any, shards: Any = pg_erasure.ALL_SHARDS, *, pause: float = 0.0) -> None:
    """The baseline rewrite: ``VACUUM FULL`` of each of her partitions (an exclusive lock on
    it for the time of the copy), then what PMM's erasure does after its swaps (the small
    tables, ANALYZE, pg_statistic)."""
    for shard in sorted(set(shards)):
        for table in pg_erasure.PARTITIONED:
            started = time.perf_counter()
            db.run(f"VACUUM FULL {table}_s{shard:02d}")
            pg_erasure.log.debug(
                "%.3f s: VACUUM FULL %s_s%02d (ACCESS EXCLUSIVE on it)",
                time.perf_counter() - started, table, shard,
            )  # fmt: skip
    pg_erasure.rewrite_rest(db)


def _erase(url: str, user: str, mode: str, pause: float) -> list[str]:
    """Erase ``user`` (``mode``: "swap", PMM's, ``pause`` seconds between the copy's
    chunks; "vacuum", the baseline); returns the timed steps of the erasure."""
    phases = _Phases()
    logger = logging.getLogger("pmm.storage.postgres.erasure")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(phases)
    real = pg_erasure.rewrite
    if mode == "vacuum":
        pg_erasure.rewrite = _in_place  # type: ignore[assignment]
    try:
        with PostgresEventStore(url, pool_size=1) as store:
            sessions = sorted({e.session_id or "" for e in store.events(user_id=user)})
            store.forget(session_ids=sessions, reason="bench", pause=pause)
    finally:
        pg_erasure.rewrite = real
        logger.removeHandler(phases)
    return phases.lines


class _Sampler(threading.Thread):
    """What the writers' backends wait on, every 10 ms (pg_stat_activity), and how many
    lock requests are waiting (pg_locks); ``timeline`` keeps each writer's samples
    ``(time, wait)`` so that :meth:`during` can say what one append waited on."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.done = threading.Event()
        self.waits: Counter[str] = Counter()
        self.samples = 0
        self.lock_waits: Counter[str] = Counter()
        self.timeline: dict[str, list[tuple[float, str]]] = {}
        self.vacuums: Counter[str] = Counter()  # samples with a (auto)vacuum of the table

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.done.is_set():
                rows = conn.execute(
                    "SELECT a.application_name, a.wait_event_type, a.wait_event, l.locktype,"
                    " l.relation::regclass::text FROM pg_stat_activity a LEFT JOIN pg_locks l"
                    " ON l.pid = a.pid AND NOT l.granted"
                    " WHERE a.application_name LIKE %s AND a.state = 'active'",
                    (WRITER_APP + " %",),
                ).fetchall()
                now = time.time()
                self.samples += 1
                for (table,) in conn.execute(
                    "SELECT relid::regclass::text FROM pg_stat_progress_vacuum"
                ).fetchall():
                    self.vacuums[table] += 1
                for app, kind, event, locktype, relation in rows:
                    wait = f"{kind or 'CPU'}:{event or '-'}"
                    self.waits[wait] += 1
                    if locktype is not None:
                        lock = f"{locktype} {relation or ''}".strip()
                        self.lock_waits[lock] += 1
                        wait = f"{wait} ({lock})"
                    user = app.removeprefix(WRITER_APP + " ")
                    self.timeline.setdefault(user, []).append((now, wait))
                time.sleep(0.01)

    def during(self, user: str, start: float, seconds: float) -> dict[str, int]:
        """The samples of ``user``'s backend from ``start`` for ``seconds``, by wait."""
        found = Counter(w for t, w in self.timeline.get(user, []) if start <= t <= start + seconds)
        return dict(found.most_common())


def _users(url: str, users: int, writers: int, victim: str) -> list[str]:
    """The writers' users: half share the victim's partition."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT u, pmm_shard(u) = pmm_shard(%s) FROM"
            " (SELECT 'u' || i AS u FROM generate_series(2, %s) AS i) AS g WHERE u <> %s",
            (victim, users - 1, victim),
        ).fetchall()
    same = [u for u, s in rows if s][: writers // 2]
    other = [u for u, s in rows if not s][: writers - len(same)]
    return same + other


def _victims(url: str, users: int, n: int) -> list[str]:
    """``n`` users in ``n`` partitions holding about as many rows (the middle sizes)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT shard, count(*) FROM events GROUP BY shard HAVING shard > 0 ORDER BY 2"
        ).fetchall()
        if n > len(rows):
            raise SystemExit(f"{n} erasures need {n} partitions holding users; {len(rows)} do")
        low = max(0, min(len(rows) - n, len(rows) // 2 - n // 2 - 1))
        middle = rows[low : low + n]
        found = []
        for shard, _ in middle:
            found.append(
                conn.execute(
                    "SELECT u FROM (SELECT 'u' || i AS u FROM generate_series(1, %s) AS i) g"
                    " WHERE pmm_shard(u) = %s LIMIT 1",
                    (users - 1, shard),
                ).fetchone()[0]  # type: ignore[index]
            )
    return found


def _measure(
    url: str, victim: str, chosen: list[str], mode: str, pause: float, before: float, after: float
) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        shard_of = {
            u: conn.execute("SELECT pmm_shard(%s)", (u,)).fetchone()[0]  # type: ignore[index]
            for u in [victim, *chosen]
        }
        rows = conn.execute(
            "SELECT count(*) FROM events WHERE shard = %s", (shard_of[victim],)
        ).fetchone()
        parents_analyzed = [
            str(r[0])
            for r in conn.execute(
                "SELECT DISTINCT tablename FROM pg_stats WHERE inherited AND tablename = ANY(%s)",
                (list(pg_erasure.PARTITIONED),),
            )
        ]
    ctx = mp.get_context("spawn")
    stop, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, u, stop, out)) for u in chosen]
    for p in procs:
        p.start()
    for _ in procs:
        assert out.get(timeout=300)[0] == "ready"
    time.sleep(before)
    load = os.getloadavg()
    sampler = _Sampler(url)
    sampler.start()
    erase_start = time.time()
    phases = _erase(url, victim, mode, pause)
    erase_end = time.time()
    sampler.done.set()
    sampler.join()
    time.sleep(after)
    stop.set()
    results = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    groups: dict[str, list[str]] = {
        "all": chosen,
        "same partition": [u for u in chosen if shard_of[u] == shard_of[victim]],
        "other partitions": [u for u in chosen if shard_of[u] != shard_of[victim]],
    }
    report: dict[str, Any] = {
        "mode": mode,
        "pause_s": pause,
        "parents_with_statistics": parents_analyzed,
        "victim": victim,
        "partition_rows": int(rows[0]) if rows else 0,
        "erase_s": erase_end - erase_start,
        "phases": phases,
        "load_before": load,
        "load_after": os.getloadavg(),
        "waits": dict(sampler.waits.most_common()),
        "lock_waits": dict(sampler.lock_waits.most_common()),
        "wait_samples": sampler.samples,
        "vacuums": dict(sampler.vacuums.most_common()),
        "groups": {},
    }
    warmup = erase_start - before + 1.0  # every writer has appended once a second before
    for name, members in groups.items():
        samples = [s for u in members for s in results[u]]
        pre = [d for t, d in samples if warmup <= t < erase_start]
        # An append "during" the erasure: one that started before it ended and ended after
        # it began.
        overlapping = [
            (d, u, t)
            for u in members
            for t, d in results[u]
            if t < erase_end and t + d > erase_start
        ]
        during = [d for d, _, _ in overlapping]
        seconds, user, started = max(overlapping, default=(0.0, "", float("nan")))
        report["groups"][name] = {
            "writers": len(members),
            "max_wait_ms": 1000 * max(during, default=0.0),
            "before_p50_ms": 1000 * _pct(pre, 50),
            "before_p99_ms": 1000 * _pct(pre, 99),
            "during_p50_ms": 1000 * _pct(during, 50),
            "during_p99_ms": 1000 * _pct(during, 99),
            "appends_during": len(during),
            "longest_starts_at_s": started - erase_start,
            # what that append's backend was sampled waiting on (10 ms apart)
            "longest_waited_on": sampler.during(user, started, seconds),
        }
    return report


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[min(98, int(p) - 1)]


def erase_stall(
    url: str,
    events: int = 1_000_000,
    users: int = 1000,
    *,
    writers: int = 4,
    before: float = 4.0,
    after: float = 1.0,
    erasures: tuple[str, ...] = ("vacuum", "swap"),
    stats: str = "partitions",
    vacuum: bool = False,
) -> dict[str, Any]:
    """Build ``events`` events of ``users`` users in the empty database ``url`` (analyzed
    as ``stats`` says), then run ``erasures`` in order ("vacuum", "swap", "swap:SECONDS"),
    each erasing a user of another partition while ``writers`` processes append for others;
    returns the figures (see the module docstring)::

        figures = erase_stall("postgresql://pmm@127.0.0.1:5432/bench", events=100_000)
        figures["erasures"][1]["groups"]["other partitions"]["max_wait_ms"]
    """
    plan = [_parse_erasure(e) for e in erasures]
    PostgresEventStore(url).close()  # PMM's schema, every migration
    result: dict[str, Any] = {"events": events, "users": users, "stats": stats}
    result["build_s"] = _load(url, events, users, stats, vacuum)
    result["vacuumed"] = vacuum
    result["erasures"] = []
    for (mode, pause), victim in zip(plan, _victims(url, users, len(plan)), strict=True):
        chosen = _users(url, users, writers, victim)
        result["erasures"].append(_measure(url, victim, chosen, mode, pause, before, after))
    return result


def _parse_erasure(text: str) -> tuple[str, float]:
    """``"vacuum"``, ``"swap"`` or ``"swap:0.02"`` -> ``(mode, pause)``."""
    mode, _, pause = text.partition(":")
    if mode not in ("vacuum", "swap") or (pause and mode != "swap"):
        raise SystemExit(f"unknown erasure {text!r}: vacuum, swap or swap:SECONDS")
    try:
        return mode, pg_swap.checked_pause(float(pause or 0))
    except ValueError as exc:
        raise SystemExit(f"erasure {text!r}: {exc}") from None


def _label(r: dict[str, Any]) -> str:
    if r["mode"] == "vacuum":
        return "VACUUM FULL (baseline)"
    return "copy + swap (PMM)" + (f", pause {r['pause_s']:g} s" if r["pause_s"] else "")


def _print(result: dict[str, Any]) -> None:
    print(f"{result['events']:,} events, {result['users']:,} users, built in "
          f"{result['build_s']:.0f} s, setup analyzed: {result['stats']}"
          f"{', vacuumed' if result['vacuumed'] else ''}")  # fmt: skip
    print(
        f"{'rewrite':<34} {'writers':<17} {'n':>2} {'max wait':>9} {'p50 before':>11}"
        f" {'p99 before':>11} {'p50 during':>11} {'p99 during':>11} {'erase':>8}"
    )
    for r in result["erasures"]:
        for name, g in r["groups"].items():
            print(
                f"{_label(r):<34} {name:<17} {g['writers']:>2} {g['max_wait_ms']:>7.0f}ms"
                f" {g['before_p50_ms']:>9.1f}ms {g['before_p99_ms']:>9.1f}ms"
                f" {g['during_p50_ms']:>9.1f}ms {g['during_p99_ms']:>9.1f}ms"
                f" {r['erase_s']:>7.2f}s  (longest starts at {g['longest_starts_at_s']:.2f} s)"
            )
            waits = ", ".join(f"{w} {n}" for w, n in g["longest_waited_on"].items())
            print(f"{'':<34} {'':<17} the longest append's samples: {waits or 'none'}")
    for r in result["erasures"]:
        print(
            f"{_label(r)}: erased {r['victim']} (partition of {r['partition_rows']:,} rows);"
            f" load average {r['load_before'][0]:.1f} before, {r['load_after'][0]:.1f} after;"
            f" parents with statistics: {', '.join(r['parents_with_statistics']) or 'none'}"
        )
        print("  steps:")
        for line in r["phases"]:
            print("   ", line)
        total = max(1, sum(r["waits"].values()))
        print(f"  writers' backends while erasing ({r['wait_samples']} samples of 10 ms):")
        for event, n in list(r["waits"].items())[:8]:
            print(f"    {event:<32} {n:>6} ({100 * n / total:.0f}%)")
        for what, n in list(r["lock_waits"].items())[:5]:
            print(f"    waiting for lock: {what:<24} {n:>6}")
        vacuums = ", ".join(f"{t} {n}" for t, n in r["vacuums"].items())
        print(f"  samples with a VACUUM running (autovacuum's included): {vacuums or 'none'}")


def main(argv: list[str] | None = None) -> None:
    bench = Bench("erase_stall", __doc__)
    parser = bench.parser
    parser.add_argument("--url", help="an empty database (default: a throwaway cluster)")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--before", type=float, default=4.0, help="seconds before erasing")
    parser.add_argument(
        "--erasures",
        default="vacuum,swap",
        help="comma-separated, in order: vacuum, swap, swap:SECONDS (PMM's, paused)",
    )
    parser.add_argument(
        "--stats",
        choices=("partitions", "database"),
        default="partitions",
        help="what the setup analyzes (default: all but the partitioned parents)",
    )
    parser.add_argument(
        "--vacuum",
        action="store_true",
        help="VACUUM after loading (autovacuum's work on the new rows done before measuring)",
    )
    args = bench.parse(argv)
    if args.quick:
        args.events, args.users, args.writers, args.before = 3000, 30, 2, 1.0
    cluster = None
    url = args.url
    if url is None:
        from pg_cluster import PostgresCluster

        cluster = PostgresCluster.start(durable=True)
        url = cluster.url
        print(f"throwaway PostgreSQL cluster at {url} (fsync on, synchronous_commit on)")
    try:
        result = erase_stall(
            url,
            args.events,
            args.users,
            writers=args.writers,
            before=args.before,
            erasures=tuple(e.strip() for e in args.erasures.split(",") if e.strip()),
            stats=args.stats,
            vacuum=args.vacuum,
        )
        _print(result)
        bench.finish(result)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
