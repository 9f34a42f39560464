"""One hash chain per user on PostgreSQL (issue 21): appends/s by writer processes, and
verify of one user against verify of the whole log, all baselines measured in the same run.

    python bench/chains.py                       # a throwaway durable cluster, small sizes
    python bench/chains.py --events 1000000      # verify figures at 1,000,000 events
    python bench/chains.py --url postgresql://u@host/db --seconds 10
    python bench/chains.py --quick               # 0.5 s runs of one writer, 2,000 events

Without ``--url`` it starts a throwaway cluster (tests/storage/pg_cluster.py) with
PostgreSQL's *default durability* (fsync, synchronous commit and full page writes on: each
commit waits for its WAL flush), and stops it at the end. Appends: 1, 2, 4 and 8 writer
processes (spawned, each with its own connection and user, distinct sessions), each
appending one event per transaction for ``--seconds``, for

- ``per-user``: PMM's append (per-user advisory lock, ids from a sequence): in the steady
  state one statement in autocommit (``pmm_append_fast``, migrations/0011);
- ``two-call``: the same append always through the two calls between ``BEGIN`` and
  ``COMMIT`` (what every append took before the one-call append, and what it falls back to);
- ``global``: the same append under one global exclusive advisory lock held from before
  the head is read to commit: the path every append took before one chain per user;
- ``bare``: a bare INSERT of one row per transaction under a per-user advisory lock: what
  the server can do at best with this durability;
- ``row``: the same bare INSERT, of the row PMM stores (its ``events`` table: nine indexes,
  the generated ``search`` tsvector, partitioned by user) with the values an append of
  ``--kind`` writes, hashes made up: the floor PMM's schema sets, before any chain, check
  or window key;
- ``chained``: ``row`` with the chain: the client seals the row with PMM's code
  (:func:`pmm.events.chains.seal_chains`), and one statement compares and sets its chain's
  head and inserts the row: the least any append on a per-user chain can do with the row
  indexed in its own transaction (no session owner, newest-turns or duplicate check, no
  window key).

Then ``--events`` events over ``--users`` users: ``verify(user_id=...)`` p50 of one user
against one full ``verify()``. Targets (issue 21): 8 per-user writers >= 2x one writer,
the global path flat; one per-user writer >= half the bare rate; one user's verify at
1,000,000 events < 50 ms. Last, in a database of its own, ``--erase-events`` events of
``--erase-users`` users and bench/erase_stall.py's PMM erasure of one of them while four
writers append for others: the longest wait of their appends meanwhile (target < 200 ms at
1,000,000 events; bench/erase_stall.py prints the whole story, and the baseline).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "storage"))
warnings.filterwarnings("ignore")

from harness import Bench  # noqa: E402

from pmm.records import NewEvent  # noqa: E402
from pmm.storage.postgres import PostgresEventStore  # noqa: E402
from pmm.storage.postgres.connection import APPEND_LOCK  # noqa: E402

WRITERS = (1, 2, 4, 8)
MODES = ("per-user", "two-call", "global", "bare", "row", "chained")


class GlobalChainStore(PostgresEventStore):
    """The append path as it was with one global chain: one exclusive lock from before
    the head is read until commit, so appends of every user queue on it (in two calls:
    the one-call append takes no global lock, and a store that overrides
    ``_append_locked`` never takes it)."""

    def _append_locked(self, conn: Any, checked: Any, *args: Any) -> Any:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
        return super()._append_locked(conn, checked, *args)


class TwoCallStore(PostgresEventStore):
    """PMM's per-user append without the one-call path: two calls in a transaction."""

    fast_appends = False


def _writer(
    url: str, mode: str, worker: int, ready: Any, seconds: float, kind: str = "prompt"
) -> tuple[int, float, int]:
    """One process: connect, wait at the ``ready`` barrier for every other writer, then
    append for ``seconds``; returns how many committed, the process's CPU seconds
    meanwhile (the client's share of an append) and how many went in one call."""
    import psycopg

    user = f"user{worker}"
    done = 0
    if mode == "bare":
        with psycopg.connect(url, autocommit=True) as conn:
            ready.wait()
            start_at, cpu = time.time(), time.process_time()
            while time.time() < start_at + seconds:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (user,))
                    conn.execute(
                        "INSERT INTO bare(user_id, body) VALUES (%s, %s)", (user, f"turn {done}")
                    )
                done += 1
            spent = time.process_time() - cpu
            _stopped(ready)
        return done, spent, 0
    if mode == "row":
        return _row_writer(url, user, kind, ready, seconds)
    if mode == "chained":
        return _chained_writer(url, user, kind, ready, seconds)
    stores = {"global": GlobalChainStore, "two-call": TwoCallStore}
    cls = stores.get(mode, PostgresEventStore)
    with cls(url, pool_size=1) as store:
        ready.wait()
        start_at, cpu = time.time(), time.process_time()
        while time.time() < start_at + seconds:
            store.append_many(
                [NewEvent(kind, f"turn {done} of {user}", f"{user}-s", "user", None, None, user)]
            )
            done += 1
        spent = time.process_time() - cpu
        _stopped(ready)
        return done, spent, store.appends.fast


def _stopped(ready: Any) -> None:
    """Wait, still connected, until every writer has stopped and the sampler has read the
    server's CPU: a backend that exits before that sample takes its CPU with it."""
    ready.wait()  # every writer's loop is over
    ready.wait()  # the sampler has read the server's CPU


_EVENT_COLUMNS = (
    "events(id, ts, kind, session_id, role, content, content_sha256, meta, prev_hash, hash,"
    " hash_version, user_id, user_digest, session_digest, shard)"
)
"""The columns an append writes (``search`` is generated from them)."""
_ROW = (
    f"INSERT INTO {_EVENT_COLUMNS}"
    " VALUES (nextval('events_id_seq'), %s, %s, %s, 'user', %s, %s, '{}', %s, %s, %s, %s, %s,"
    " %s, pmm_shard(%s))"
)


def _row_writer(
    url: str, user: str, kind: str, ready: Any, seconds: float
) -> tuple[int, float, int]:
    """``row`` mode: PMM's event row, inserted bare (see the module docstring)."""
    import hashlib

    import psycopg

    from pmm.events.hashing import CHAIN_HASH_VERSION, utc_now

    done, digest = 0, "0" * 64
    with psycopg.connect(url, autocommit=True) as conn:
        ready.wait()
        start_at, cpu = time.time(), time.process_time()
        while time.time() < start_at + seconds:
            content = f"turn {done} of {user}"
            unique = hashlib.sha256(f"{user}/{done}".encode()).hexdigest()
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (user,))
                conn.execute(
                    _ROW,
                    (utc_now(), kind, f"{user}-s", content, digest, digest, unique,
                     CHAIN_HASH_VERSION, user, digest, digest, user),
                )  # fmt: skip
            done += 1
        spent = time.process_time() - cpu
        _stopped(ready)
    return done, spent, 0


_CHAINED = (
    "WITH n AS (SELECT nextval('events_id_seq') AS id),"
    " head AS (UPDATE chains SET head_id = n.id, head_hash = %s FROM n"
    " WHERE chain = %s AND head_hash IS NOT DISTINCT FROM %s RETURNING n.id)"
    f" INSERT INTO {_EVENT_COLUMNS}"
    " SELECT head.id, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, pmm_shard(%s) FROM head"
)


def _chained_writer(
    url: str, user: str, kind: str, ready: Any, seconds: float
) -> tuple[int, float, int]:
    """``chained`` mode: PMM's sealed row onto its chain (see the module docstring)."""
    import psycopg

    from pmm.events.chain import check_new_event
    from pmm.events.chains import ChainState, new_secret, seal_chains
    from pmm.events.hashing import utc_now

    state = ChainState(user, new_secret())
    done = 0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO chains(chain, secret, head_id, head_hash) VALUES (%s, %s, 0, NULL)",
            (user, state.secret),
        )
        ready.wait()
        start_at, cpu = time.time(), time.process_time()
        while time.time() < start_at + seconds:
            entry = NewEvent(kind, f"turn {done} of {user}", f"{user}-s", "user", None, None, user)
            checked = check_new_event(entry, 1 << 20)
            before = state.head_hash
            (e,) = seal_chains([checked], {user: state}, ids=[0], ts=utc_now())
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (user,))
                stored = conn.execute(
                    _CHAINED,
                    (e.hash, user, before, e.ts, e.kind, e.session_id, e.role, e.content,
                     e.content_sha256, checked.meta_json, e.prev_hash, e.hash, e.hash_version,
                     e.user_id, e.user_digest, e.session_digest, user),
                ).rowcount  # fmt: skip
            if stored != 1:
                raise RuntimeError(f"{user}'s chain head moved: nothing else appends to it")
            state.head_hash = e.hash
            done += 1
        spent = time.process_time() - cpu
        _stopped(ready)
    return done, spent, 0


def appends_per_second(
    url: str,
    mode: str,
    writers: int,
    seconds: float,
    kind: str = "prompt",
    datadir: Path | None = None,
) -> tuple[float, float, float | None, float]:
    """Committed appends per second of ``writers`` processes in ``mode``, the writers'
    client CPU per append in ms, the server's CPU per append in ms while they ran (None
    without a local cluster) and the share of appends that went in one call."""
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(writers) as pool:
        # every writer connected, and this sampler; a writer that fails breaks it
        ready = manager.Barrier(writers + 1, timeout=seconds + 120)
        jobs = [(url, mode, w, ready, seconds, kind) for w in range(writers)]
        result = pool.starmap_async(_writer, jobs)
        try:
            ready.wait()
            before = server_cpu_seconds(datadir)
            ready.wait()  # every writer has stopped, and is still connected
            after = server_cpu_seconds(datadir)
            ready.wait()
        except threading.BrokenBarrierError:
            result.get(timeout=60)  # the writer's own error, where one failed
            raise
        counts = result.get()
    done = sum(c[0] for c in counts)
    server = None if before is None or after is None else (after - before) / max(1, done) * 1e3
    one_call = sum(c[2] for c in counts) / max(1, done)
    return done / seconds, sum(c[1] for c in counts) / max(1, done) * 1e3, server, one_call


def server_cpu_seconds(datadir: Path | None) -> float | None:
    """CPU seconds the throwaway cluster has used so far (its postmaster, its live
    processes and the backends it has reaped, from /proc); None without a local cluster."""
    if datadir is None:
        return None
    try:
        postmaster = int((datadir / "postmaster.pid").read_text().split()[0])
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # exited meanwhile
                continue
            pid, ppid = int(entry.name), int(fields[1])
            if pid == postmaster:  # its own, and its reaped children's
                total += sum(int(f) for f in fields[11:15])
            elif ppid == postmaster:
                total += int(fields[11]) + int(fields[12])
        return total / tick
    except (OSError, ValueError, IndexError):
        return None


def empty_database(admin_url: str, name: str) -> str:
    """A new, empty database ``name`` on the server of ``admin_url``; its URL."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return admin_url.rsplit("/", 1)[0] + "/" + name


def fresh_database(admin_url: str, name: str) -> str:
    """:func:`empty_database` with PMM's schema and the ``bare`` table."""
    import psycopg

    url = empty_database(admin_url, name)
    PostgresEventStore(url).close()  # migrated before the clock starts
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bare (id BIGSERIAL PRIMARY KEY, user_id TEXT, body TEXT)")
    return url


def fill(url: str, events: int, users: int, batch: int = 20_000) -> None:
    """``events`` events spread over ``users`` users (three threads each), sealed by PMM's
    chain rule (:func:`pmm.events.chains.seal_chains`, each user's secret and head in
    ``chains``) and written with COPY: the rows verify exactly as appended ones, without
    the hours one transaction per event would take at 1,000,000 (window keys, which verify
    does not read, are left out)."""
    import psycopg

    from pmm.events.chain import check_new_event
    from pmm.events.chains import ChainState, new_secret, seal_chains
    from pmm.events.hashing import utc_now

    states: dict[str | None, ChainState] = {
        f"u{n}": ChainState(f"u{n}", new_secret()) for n in range(users)
    }
    columns = (
        "id, ts, kind, session_id, role, content, content_sha256, meta, prev_hash, hash,"
        " hash_version, user_id, user_digest, session_digest"
    )
    with psycopg.connect(url, autocommit=True) as conn:
        for start in range(0, events, batch):
            ids = list(range(start + 1, min(events, start + batch) + 1))
            checked = [
                check_new_event(
                    NewEvent(
                        "prompt" if n % 2 == 0 else "response",
                        f"event {n} about the weather and {n % 97} other things",
                        f"u{n % users}-t{n // users % 3}",
                        "user" if n % 2 == 0 else "assistant",
                        None,
                        None,
                        f"u{n % users}",
                    ),
                    1 << 20,
                )
                for n in ids
            ]
            sealed = seal_chains(checked, states, ids=ids, ts=utc_now())
            # events are partitioned by user (migration 0009): COPY into a plain staging
            # table, then route each row by its shard, as the append does
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(
                    "CREATE TEMP TABLE IF NOT EXISTS fill_stage"
                    " (LIKE events INCLUDING DEFAULTS) ON COMMIT DELETE ROWS;"
                    " ALTER TABLE fill_stage ALTER COLUMN shard DROP NOT NULL"
                )
                with cur.copy(f"COPY fill_stage({columns}) FROM STDIN") as copy:
                    for e, c in zip(sealed, checked, strict=True):
                        copy.write_row(
                            (e.id, e.ts, e.kind, e.session_id, e.role, e.content,
                             e.content_sha256, c.meta_json, e.prev_hash, e.hash,
                             e.hash_version, e.user_id, e.user_digest, e.session_digest)
                        )  # fmt: skip
                cur.execute(
                    f"INSERT INTO events({columns}, shard)"
                    f" SELECT {columns}, pmm_shard(user_id) FROM fill_stage"
                )
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO chains(chain, secret, head_id, head_hash) VALUES (%s, %s, %s, %s)",
                [(u, st.secret, st.head_id, st.head_hash) for u, st in states.items()],
            )
            cur.execute("SELECT setval('events_id_seq', (SELECT max(id) + 1 FROM events), false)")
        conn.execute("ANALYZE events")


def verify_figures(url: str, runs: int = 7) -> dict[str, float]:
    """One user's verify p50 and one full verify, in ms, and their row counts."""
    with PostgresEventStore(url) as store:
        samples = []
        for _ in range(runs):
            report = store.verify(user_id="u7")
            assert report.ok, report
            samples.append(report.seconds)
        user_rows = report.rows
        started = time.perf_counter()
        full = store.verify()
        full_seconds = time.perf_counter() - started
        assert full.ok, full
    return {
        "user_ms": statistics.median(samples) * 1e3,
        "user_rows": user_rows,
        "full_ms": full_seconds * 1e3,
        "full_rows": full.rows,
    }


def erase_figures(admin: str, events: int, users: int) -> dict[str, Any]:
    """The longest wait of another user's append while one user is erased from a log of
    ``events`` events of ``users`` users: bench/erase_stall.py's PMM erasure (copy beside
    her partition, swap) with four writers, two in her partition and two in others, in a
    database of its own."""
    import erase_stall

    url = empty_database(admin, "bench_erase")
    result = erase_stall.erase_stall(url, events, users, writers=4, before=2.0, erasures=("swap",))
    [erased] = result["erasures"]
    groups = erased["groups"]
    return {
        "erase_s": erased["erase_s"],
        "partition_rows": erased["partition_rows"],
        "same_ms": groups["same partition"]["max_wait_ms"],
        "other_ms": groups["other partitions"]["max_wait_ms"],
        "before_p99_ms": groups["all"]["before_p99_ms"],
        "appends_during": groups["all"]["appends_during"],
        "same_waited_on": groups["same partition"]["longest_waited_on"],
        "other_waited_on": groups["other partitions"]["longest_waited_on"],
    }


def append_figures(
    admin: str,
    writers: list[int],
    seconds: float,
    rates: dict[tuple[str, int], float],
    kind: str = "prompt",
    datadir: Path | None = None,
) -> None:
    """Print appends/s of each mode with each writer count (into ``rates``) and the
    ratios the targets are about."""
    print(f"\nappends/s (one {kind} event per transaction), writer processes on distinct users")
    cpu: dict[tuple[str, int], float] = {}
    server: dict[tuple[str, int], float] = {}
    shares: list[float] = []
    print(f"{'writers':>8}" + "".join(f"{m:>12}" for m in MODES))
    for n in writers:
        row = f"{n:>8}"
        for mode in MODES:
            url = fresh_database(admin, f"bench_{mode.replace('-', '_')}_{n}")
            rates[mode, n], cpu[mode, n], on_server, one_call = appends_per_second(
                url, mode, n, seconds, kind, datadir
            )
            if mode == "per-user":
                shares.append(one_call)
            if on_server is not None:
                server[mode, n] = on_server
            row += f"{rates[mode, n]:>12,.0f}"
        print(row, flush=True)
    print("per-user appends that went in one call: " + ", ".join(f"{s:.1%}" for s in shares))
    print("client CPU ms per append (the writer processes' own CPU)")
    for n in writers:
        print(f"{n:>8}" + "".join(f"{cpu[m, n]:>12.3f}" for m in MODES), flush=True)
    if server:
        print(
            "server CPU ms per append (every process of the cluster, from start to end of the run)"
        )
        for n in writers:
            print(f"{n:>8}" + "".join(f"{server.get((m, n), 0.0):>12.3f}" for m in MODES))
    one, top = writers[0], writers[-1]
    scale = {m: rates[m, top] / rates[m, one] for m in MODES}
    print(f"\nper-user: {top} writers / {one} = {scale['per-user']:.2f}x  (target >= 2x)")
    if ("per-user", top) in server:
        # the writers and the server share this machine's cores: at most cores / CPU per
        # append of both sides, whatever the locks do
        cores = os.cpu_count() or 1
        spent = cpu["per-user", top] + server["per-user", top]
        print(
            f"          at most {cores / spent * 1e3 / rates['per-user', one]:.2f}x: {cores}"
            f" cores / {spent:.2f} ms of CPU per append at {top} writers"
        )
    print(f"global:   {top} writers / {one} = {scale['global']:.2f}x  (the old path: flat)")
    print(f"bare:     {top} writers / {one} = {scale['bare']:.2f}x")
    print(f"row:      {top} writers / {one} = {scale['row']:.2f}x")
    print(f"chained:  {top} writers / {one} = {scale['chained']:.2f}x")
    print(
        f"per-user / bare, {one} writer: {rates['per-user', one] / rates['bare', one]:.2f}"
        "  (target >= 0.5)"
    )
    print(
        f"row / bare, {one} writer: {rates['row', one] / rates['bare', one]:.2f}"
        "  (PMM's row alone: the floor of per-user / bare)"
    )
    print(
        f"chained / bare, {one} writer: {rates['chained', one] / rates['bare', one]:.2f}"
        "  (the row on its chain: the floor of any per-user append)"
    )
    print(
        f"two-call / bare, {one} writer: {rates['two-call', one] / rates['bare', one]:.2f}"
        f"  (one call / two calls: {rates['per-user', one] / rates['two-call', one]:.2f}x)"
    )


def main(argv: list[str] | None = None) -> None:
    bench = Bench("chains", __doc__)
    parser = bench.parser
    parser.add_argument(
        "--url",
        help="an existing server (its admin database); default: a throwaway durable cluster",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="per append run (5)")
    parser.add_argument("--events", type=int, default=20_000, help="events for verify (20,000)")
    parser.add_argument("--users", type=int, default=1_000, help="users for verify (1,000)")
    parser.add_argument("--writers", default="1,2,4,8", help="writer process counts")
    parser.add_argument(
        "--erase-events",
        type=int,
        default=100_000,
        help="events of the erase-stall figure (100,000; 1,000,000 for the target; 0: none)",
    )
    parser.add_argument("--erase-users", type=int, default=1_000, help="their users (1,000)")
    parser.add_argument(
        "--kind",
        default="prompt",
        help="kind of the appended events (prompt: a turn, with its window keys; note: none)",
    )
    args = bench.parse(argv)
    if args.quick:
        args.seconds, args.events, args.users, args.writers = 0.5, 2000, 50, "1"
        args.erase_events, args.erase_users = 3000, 60
    writers = [int(w) for w in args.writers.split(",") if w]

    cluster = None
    admin = args.url
    if admin is None:
        from pg_cluster import PostgresCluster

        cluster = PostgresCluster.start(durable=True)
        admin = cluster.url
    try:
        import psycopg

        with psycopg.connect(admin, autocommit=True) as conn:
            settings = {
                name: conn.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
                for name in ("fsync", "synchronous_commit", "full_page_writes", "server_version")
            }
        print(
            f"PostgreSQL {settings['server_version']}: fsync={settings['fsync']}"
            f" synchronous_commit={settings['synchronous_commit']}"
            f" full_page_writes={settings['full_page_writes']}; {args.seconds:g} s per run"
        )
        rates: dict[tuple[str, int], float] = {}
        if writers:
            datadir = None if cluster is None else cluster.datadir
            append_figures(admin, writers, args.seconds, rates, args.kind, datadir)
        url = fresh_database(admin, "bench_verify")
        started = time.perf_counter()
        fill(url, args.events, args.users)
        print(
            f"\nverify: {args.events:,} events over {args.users:,} users"
            f" (filled in {time.perf_counter() - started:.0f} s)"
        )
        figures = verify_figures(url)
        print(
            f"  one user's verify p50: {figures['user_ms']:.2f} ms"
            f" ({figures['user_rows']:,.0f} rows)"
            "  (target < 50 ms at 1,000,000 events)"
        )
        print(
            f"  full verify:           {figures['full_ms']:,.0f} ms"
            f" ({figures['full_rows']:,.0f} rows)"
            f"  = {figures['full_ms'] / figures['user_ms']:,.0f}x one user's"
        )
        erased: dict[str, Any] = {}
        if args.erase_events:
            erased = erase_figures(admin, args.erase_events, args.erase_users)
            print(
                f"\nerase stall: one user of {args.erase_events:,} events erased in"
                f" {erased['erase_s']:.1f} s (her partition: {erased['partition_rows']:,} rows)"
            )
            print(
                f"  longest append of another user meanwhile: {erased['same_ms']:.0f} ms in her"
                f" partition, {erased['other_ms']:.0f} ms in others (p99 before:"
                f" {erased['before_p99_ms']:.0f} ms)  (target < 200 ms at 1,000,000 events)"
            )
            for where in ("same", "other"):
                waits = ", ".join(f"{w} {n}" for w, n in erased[f"{where}_waited_on"].items())
                print(f"  {where}: the longest append's samples, 10 ms apart: {waits or 'none'}")
        appends = {f"{how} x{n}": rate for (how, n), rate in rates.items()}
        bench.finish({"postgres": settings, "appends_per_s": appends, "verify": figures,
                      "erase_stall": erased})  # fmt: skip
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
