"""One hash chain per user on PostgreSQL (issue 21): appends/s by writer processes, and
verify of one user against verify of the whole log, all baselines measured in the same run.

    python bench/chains.py                       # a throwaway durable cluster, small sizes
    python bench/chains.py --events 1000000      # verify figures at 1,000,000 events
    python bench/chains.py --url postgresql://u@host/db --seconds 10
    python bench/chains.py --quick               # 0.5 s runs of one writer, 2,000 events
    python bench/chains.py --erase-stall --erase-events 1000000 --erasures vacuum,swap

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
``--erase-users`` users and PMM's erasure of one of them while four writers append for
others: the longest wait of their appends meanwhile (target < 200 ms at 1,000,000 events;
``--erase-stall`` prints the whole story, and the baseline).

``--erase-stall``: only that story, how long erasing one user stalls the other users'
appends (issue 21), in a database of its own on the server (``--quick``: 3,000 events, 30
users, 2 writers). Builds a log of ``--erase-events`` events of ``--erase-users`` users (one
thread each; content, window keys and one 16-float vector per event) through PMM's schema
with ``INSERT ... SELECT generate_series`` (not one append at a time: the rows hold no valid
chain, which nothing here verifies). Then, twice on that database, starts
``--stall-writers`` writer processes, each appending turns for its own user through
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
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "storage"))
warnings.filterwarnings("ignore")

import psycopg  # noqa: E402
from harness import Bench  # noqa: E402

import pmm.storage.postgres.erasure as pg_erasure  # noqa: E402
import pmm.storage.postgres.swap as pg_swap  # noqa: E402
from pmm.records import NewEvent  # noqa: E402
from pmm.storage.postgres import PostgresEventStore  # noqa: E402
from pmm.storage.postgres.connection import APPEND_LOCK  # noqa: E402

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
    ``events`` events of ``users`` users: :func:`erase_stall`'s PMM erasure (copy beside
    her partition, swap) with four writers, two in her partition and two in others, in a
    database of its own."""
    url = empty_database(admin, "bench_erase")
    result = erase_stall(url, events, users, writers=4, before=2.0, erasures=("swap",))
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


# -- the erase stall (--erase-stall) ---------------------------------------------------

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


def _stall_writer(url: str, user: str, stop: Any, out: Any) -> None:
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
    procs = [ctx.Process(target=_stall_writer, args=(url, u, stop, out)) for u in chosen]
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
    parser.add_argument("--erase-stall", action="store_true", help="only the erase stall's story")
    parser.add_argument("--stall-writers", type=int, default=4, help="with --erase-stall (4)")
    parser.add_argument("--before", type=float, default=4.0, help="seconds before erasing (4)")
    parser.add_argument(
        "--erasures",
        default="vacuum,swap",
        help="with --erase-stall, in order: vacuum, swap, swap:SECONDS (PMM's, paused)",
    )
    parser.add_argument(
        "--stats",
        choices=("partitions", "database"),
        default="partitions",
        help="what its setup analyzes (default: all but the partitioned parents)",
    )
    parser.add_argument(
        "--vacuum",
        action="store_true",
        help="VACUUM after loading (autovacuum's work on the new rows done before measuring)",
    )
    parser.add_argument(
        "--kind",
        default="prompt",
        help="kind of the appended events (prompt: a turn, with its window keys; note: none)",
    )
    args = bench.parse(argv)
    if args.quick:
        args.seconds, args.events, args.users, args.writers = 0.5, 2000, 50, "1"
        args.erase_events, args.erase_users = 3000, 60
        if args.erase_stall:
            args.erase_users, args.stall_writers, args.before = 30, 2, 1.0
    writers = [int(w) for w in args.writers.split(",") if w]

    cluster = None
    admin = args.url
    if admin is None:
        from pg_cluster import PostgresCluster

        cluster = PostgresCluster.start(durable=True)
        admin = cluster.url
    try:
        if args.erase_stall:
            result = erase_stall(
                empty_database(admin, "bench_erase"),
                args.erase_events,
                args.erase_users,
                writers=args.stall_writers,
                before=args.before,
                erasures=tuple(e.strip() for e in args.erasures.split(",") if e.strip()),
                stats=args.stats,
                vacuum=args.vacuum,
            )
            _print(result)
            bench.finish(result)
            return
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
