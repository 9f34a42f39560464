"""Rewriting one user partition without stopping its writers (pg_repack's idea), so that the
dead row versions an erasure left behind leave the data files while other users append.

    report = rewrite_partition(db, "events", 5)      # -> SwapReport
    report.held_s                                     # how long appends were held back

``VACUUM FULL`` of a partition copies it under an ``ACCESS EXCLUSIVE`` lock: every append
to that partition (and, through the parent, any statement that cannot prune it) waits for
the whole copy. Here the copy is made beside the live partition, in steps that each take
only locks that writers do not wait for, and only the swap at the end holds them back:

1. ``CREATE TABLE <part>_swap (LIKE <parent> INCLUDING ALL)`` with ``CHECK (shard = n)``
   (so that ``ATTACH PARTITION`` need not scan it), its GIN indexes with the short pending
   list migrations/0013 gave the partitions'.
2. A trigger on the live partition records the key of every row written there from now on
   in ``pmm_swap_log`` (migrations/0009). ``CREATE TRIGGER`` takes ``SHARE ROW EXCLUSIVE``
   on that partition: it waits for its writers in flight and holds new ones back, so it
   runs under a short ``lock_timeout`` and is retried.
3. The live rows, up to the last key there when the trigger was in place, are copied in
   chunks of :data:`CHUNK` keys, one transaction each (each commit flushes a little WAL,
   not a partition's worth that other commits would queue behind), with ``pause`` seconds
   between chunks; rows written since are the trigger's to log. Only live row versions
   are read: the erased text is not copied.
4. The logged rows are replayed (deleted from the copy, copied again from the live
   partition) until few are left; ``ANALYZE`` of the copy.
5. The swap, one transaction under ``SET LOCAL lock_timeout`` (retried, so that it never
   queues appends behind a long transaction): ``LOCK TABLE ONLY <parent>`` (``ACCESS
   EXCLUSIVE``: appends of every user of that table wait from here), replay the last
   logged rows, ``DETACH`` the live partition, ``ATTACH`` the copy for the same value,
   ``DROP`` the old one (its files, TOAST and indexes included, are unlinked at commit),
   rename the copy. :attr:`SwapReport.held_s` is how long this transaction held the lock.

A crash or an error leaves the live partition as it was (with the trigger, which the next
rewrite of that partition removes) and, at worst, a ``_swap`` table, dropped by the next
rewrite. Two rewrites of one partition never run at once (:data:`REWRITE_LOCK`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pmm.errors import DatabaseError, InvalidInputError

if TYPE_CHECKING:
    import psycopg

    from pmm.storage.postgres.connection import Database

log = logging.getLogger(__name__)

PARTITIONED = {"events": "id", "embeddings": "event_id", "event_windows": "event_id"}
"""The tables partitioned by user (migrations/0009) and the key their rows are logged by."""
MAX_PAUSE = 10.0
"""The longest pause between two chunks of a partition's copy that ``forget`` accepts."""
REWRITE_LOCK = 0x504D_4D04
"""Session advisory lock class of a partition being rewritten (second key: its name)."""
CHUNK = 5000
"""Keys copied per transaction."""
LOCK_TIMEOUT_MS = 50
"""How long the trigger's creation and the swap may wait for a lock before retrying: the
longest that they hold back the appends queued behind them while waiting."""
TRIES = 200
"""Attempts at taking a lock before the rewrite gives up (with a growing pause between)."""


def partition(table: str, shard: int) -> str:
    """The name of ``table``'s partition for ``shard`` (``events_s05``)."""
    if table not in PARTITIONED or not 0 <= shard <= 32:
        raise ValueError(f"no partition {table!r} {shard!r}")
    return f"{table}_s{shard:02d}"


@dataclass
class SwapReport:
    """What one partition's rewrite did: rows copied, rows replayed from the change log,
    seconds of each step ``(step, seconds, lock held)``, attempts at the swap's lock, and
    ``held_s``: seconds the swap held the parent's ``ACCESS EXCLUSIVE`` lock."""

    partition: str
    copied: int = 0
    replayed: int = 0
    attempts: int = 0
    held_s: float = 0.0
    steps: list[tuple[str, float, str]] = field(default_factory=list)


def rewrite_partition(
    db: Database, table: str, shard: int, *, pause: float = 0.0, chunk: int = CHUNK
) -> SwapReport:
    """Rewrite ``table``'s partition for ``shard`` as the module docstring says; returns
    what it did. Raises :class:`~pmm.errors.DatabaseError` when a lock could not be taken
    in :data:`TRIES` attempts (the live partition is then left as it was)."""
    old = partition(table, shard)
    new = f"{old}_swap"
    key = PARTITIONED[table]
    report = SwapReport(old)
    with db.session() as conn:
        conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (REWRITE_LOCK, old))
        try:
            _rewrite(conn, table, shard, old, new, key, report, pause, chunk)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (REWRITE_LOCK, old))
    return report


def _rewrite(
    conn: psycopg.Connection[Any],
    table: str,
    shard: int,
    old: str,
    new: str,
    key: str,
    report: SwapReport,
    pause: float,
    chunk: int,
) -> None:
    started = time.perf_counter()

    def step(name: str, lock: str) -> None:
        nonlocal started
        now = time.perf_counter()
        report.steps.append((name, now - started, lock))
        started = now

    if conn.execute(
        "SELECT 1 FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname = 'pmm_swap'", (old,)
    ).fetchone():
        _retried(conn, [f"DROP TRIGGER pmm_swap ON {old}"], report)
    conn.execute(f"DROP TABLE IF EXISTS {new}")
    conn.execute("DELETE FROM pmm_swap_log WHERE part = %s", (old,))
    columns = ", ".join(
        r[0]
        for r in conn.execute(
            "SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = %s::regclass"
            " AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
            (table,),
        )
    )
    with conn.transaction():
        conn.execute(f"CREATE TABLE {new} (LIKE {table} INCLUDING ALL)")
        conn.execute(f"ALTER TABLE {new} ADD CONSTRAINT {new}_bounds CHECK (shard = {shard})")
        gin_short_pending_list(conn, new)
    step("create the copy", "none on the live tables")
    report.attempts += _retried(
        conn,
        [
            f"CREATE TRIGGER pmm_swap AFTER INSERT OR UPDATE OR DELETE ON {old}"
            f" FOR EACH ROW EXECUTE FUNCTION pmm_swap_capture('{key}')"
        ],
        report,
    )
    step("create the change trigger", f"SHARE ROW EXCLUSIVE on {old} (lock_timeout)")
    # Rows written from here on are logged by the trigger and replayed below: the copy
    # stops at today's last key, or it would chase the writers for as long as they write.
    row = conn.execute(f"SELECT max({key}) FROM {old}").fetchone()
    bound = None if row is None or row[0] is None else int(row[0])
    last: int | None = None
    while bound is not None and (last is None or last < bound):
        with conn.transaction():
            after = "" if last is None else f" AND {key} > {int(last)}"
            row = conn.execute(
                f"SELECT max({key}) FROM (SELECT {key} FROM {old} WHERE {key} <= {bound}{after}"
                f" ORDER BY {key} LIMIT {int(chunk)}) AS c"
            ).fetchone()
            high = None if row is None else row[0]
            if high is None:
                break
            lower = "" if last is None else f"{key} > {int(last)} AND "
            report.copied += conn.execute(
                f"INSERT INTO {new} ({columns}) SELECT {columns} FROM {old}"
                f" WHERE {lower}{key} <= {int(high)}"
            ).rowcount
        last = int(high)
        if pause:
            time.sleep(pause)
    step("copy the live rows", f"ACCESS SHARE on {old}")
    for _ in range(5):
        with conn.transaction():
            replayed = _replay(conn, old, new, key, columns)
        report.replayed += replayed
        if replayed < 100:
            break
    conn.execute(f"ANALYZE {new}")
    step("replay the logged rows, ANALYZE the copy", f"ROW EXCLUSIVE on {new}")

    def swap() -> None:
        conn.execute(f"LOCK TABLE ONLY {table} IN ACCESS EXCLUSIVE MODE")
        locked = time.perf_counter()
        report.replayed += _replay(conn, old, new, key, columns)
        conn.execute(f"ALTER TABLE {table} DETACH PARTITION {old}")
        conn.execute(f"ALTER TABLE {table} ATTACH PARTITION {new} FOR VALUES IN ({shard})")
        conn.execute(f"DROP TABLE {old}")
        conn.execute(f"ALTER TABLE {new} RENAME TO {old}")
        conn.execute(f"ALTER TABLE {old} DROP CONSTRAINT {new}_bounds")
        report.held_s = time.perf_counter() - locked

    report.attempts += _retried(conn, swap, report)
    step("swap", f"ACCESS EXCLUSIVE on {table} (lock_timeout), held {report.held_s:.3f} s")


def _replay(conn: psycopg.Connection[Any], old: str, new: str, key: str, columns: str) -> int:
    """Copy again the rows the trigger logged (the caller's transaction); returns how
    many keys. A row changed after this statement's snapshot leaves a log row of its own,
    which this one does not consume."""
    ids = sorted(
        {
            int(r[0])
            for r in conn.execute(
                "DELETE FROM pmm_swap_log WHERE part = %s RETURNING event_id", (old,)
            )
        }
    )
    if ids:
        conn.execute(f"DELETE FROM {new} WHERE {key} = ANY(%s)", (ids,))
        conn.execute(
            f"INSERT INTO {new} ({columns}) SELECT {columns} FROM {old} WHERE {key} = ANY(%s)",
            (ids,),
        )
    return len(ids)


def _retried(conn: psycopg.Connection[Any], work: Any, report: SwapReport) -> int:
    """Run ``work`` (statements, or a function of the connection's open transaction) in one
    transaction under :data:`LOCK_TIMEOUT_MS`, again after a pause while a lock is not
    granted in time; returns the attempts it took."""
    for attempt in range(1, TRIES + 1):
        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT_MS}ms'")
                if callable(work):
                    work()
                else:
                    for sql in work:
                        conn.execute(sql)
            return attempt
        except Exception as exc:
            if getattr(exc, "sqlstate", None) != "55P03":  # lock_not_available
                raise
            time.sleep(min(1.0, 0.01 * attempt))
    raise DatabaseError(
        f"rewriting {report.partition}: a lock was not granted in {TRIES} attempts of "
        f"{LOCK_TIMEOUT_MS} ms (a long transaction holds the table); the partition is as it "
        "was: run the rewrite again (PostgresEventStore.rewrite_tables)"
    )


def checked_pause(pause: float) -> float:
    """``pause`` (seconds between the copy's chunks) if it is a number from 0 to
    :data:`MAX_PAUSE`; raises :class:`~pmm.errors.InvalidInputError` (a ``ValueError``)
    otherwise."""
    if isinstance(pause, bool) or not isinstance(pause, (int, float)):
        raise InvalidInputError(f"pause must be a number of seconds, not {pause!r}")
    if not 0.0 <= float(pause) <= MAX_PAUSE:  # NaN fails too
        raise InvalidInputError(f"pause must be from 0 to {MAX_PAUSE} seconds, not {pause!r}")
    return float(pause)


SNAPSHOT_WAIT = 30.0
"""Seconds :func:`rewrite_rest` waits for older snapshots of other sessions to end."""


def older_snapshots_gone(
    db: Database, timeout: float = SNAPSHOT_WAIT, *, warn: bool = False
) -> bool:
    """Wait until no other session of this database holds a transaction or snapshot that
    began before now (a long query, an autovacuum ``ANALYZE``): ``VACUUM FULL`` must keep
    every row version such a session could still see, the dropped partitions' statistics
    and the erased rows' old versions included. False after ``timeout`` seconds (logged
    once as a warning with ``warn``)."""
    [(current,)] = db.read("SELECT pg_current_xact_id()::text")
    now = str(int(current) % (1 << 32))  # xid8 -> the 32-bit xid the views show
    deadline = time.monotonic() + timeout
    while True:
        [(older,)] = db.read(
            "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
            " AND (datname = current_database() OR datname IS NULL)"
            " AND (age(backend_xmin) >= age(%s::xid) OR age(backend_xid) >= age(%s::xid))",
            (now, now),
        )
        if not older:
            return True
        if time.monotonic() >= deadline:
            if warn:
                log.warning(
                    "%s: another session kept a snapshot older than this erasure for %.0f s:"
                    " VACUUM FULL keeps the row versions it could still see, so samples of the"
                    " erased text may remain in the data files until `pmm forget --scrub`"
                    " runs again",
                    db.where,
                    timeout,
                )
            return False
        time.sleep(0.05)


GIN_PENDING_LIST_KB = 256
"""The pending list of PMM's GIN indexes (migrations/0013)."""
_GIN_INDEXES = (
    "SELECT i.indexrelid::regclass::text FROM pg_index AS i"
    " JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_am AS a ON a.oid = c.relam"
    " WHERE i.indrelid = %s::regclass AND a.amname = 'gin'"
)


def gin_short_pending_list(conn: psycopg.Connection[Any], table: str) -> None:
    """Give ``table``'s GIN indexes the 256 kB pending list migrations/0013 gave every
    partition's: a partitioned index holds no storage parameters, so a copy made ``LIKE``
    the parent would get PostgreSQL's 4 MB, which one append in thousands pays hundreds of
    milliseconds to merge."""
    for (index,) in conn.execute(_GIN_INDEXES, (table,)).fetchall():
        conn.execute(f"ALTER INDEX {index} SET (gin_pending_list_limit = {GIN_PENDING_LIST_KB})")
