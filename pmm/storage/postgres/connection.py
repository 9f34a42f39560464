"""The PostgreSQL connection pool, migrations and error translation of the Postgres store.

    db = Database("postgresql://app@db.internal/pmm", timeout=30.0, pool_size=4)
    db.migrate()                              # numbered migrations, once, under a lock
    db.read("SELECT count(*) FROM events")    # [(n,)]
    with db.write() as conn:                  # one transaction
        conn.execute("...")

psycopg 3 and psycopg-pool come with the ``[postgres]`` extra; they are imported here only.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Generator, Iterator, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from pmm.errors import DatabaseError, MigrationError, MissingDependencyError, NewerSchemaError
from pmm.models.redact import mask_url, redact_secrets
from pmm.storage.shared import SharedLog

if TYPE_CHECKING:
    import psycopg

MIGRATE_LOCK = 0x504D_4D00
"""Session advisory lock held while migrations are applied ("PMM" 00)."""
APPEND_LOCK = 0x504D_4D01
"""Transaction advisory lock that every append holds *shared* (see
:mod:`pmm.storage.postgres.chains`) and the writers that rewrite the log hold exclusively."""

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@functools.cache
def migrations() -> tuple[tuple[int, str, str], ...]:
    """``(version, name, sql)`` of every Postgres migration, in order (read once)."""
    found = []
    for entry in (resources.files(__package__) / "migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append((int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    return tuple(sorted(found))


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Plan every statement for its parameters: a generic plan (which PostgreSQL may pick
    for a statement prepared by psycopg after a few runs) locks every partition of the
    tables partitioned by user (migrations/0009); a plan for the values reads and locks
    the partitions it names only. The append's functions set their own mode
    (migrations/0010: kept plans, the user's partition read by name)."""
    conn.execute("SET plan_cache_mode = force_custom_plan")


class PostgresBase(SharedLog):
    """The state the mixins of :class:`pmm.storage.postgres.PostgresEventStore` share (the
    pool, ``self._db``); the calls written once above the primitives come from
    :class:`~pmm.storage.shared.SharedLog`."""

    _db: Database
    window_radius: int


class Database:
    """A pool of connections to one database, with PMM's error messages."""

    def __init__(self, url: str, *, timeout: float, pool_size: int) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise MissingDependencyError(
                "PostgreSQL storage", exc.name or "psycopg", "postgres"
            ) from None
        self._errors = psycopg.Error
        self.where = self.redacted(url)
        self.timeout = timeout
        try:
            self._pool = ConnectionPool(
                url,
                min_size=1,
                max_size=max(1, pool_size),
                kwargs={"autocommit": True},
                configure=_configure,
                timeout=timeout,
                open=False,
            )
            self._pool.open(wait=True, timeout=timeout)
        except Exception as exc:
            raise DatabaseError(
                f"cannot connect to PostgreSQL at {self.where}: {redact_secrets(str(exc))}:"
                " check the URL, that the "
                "server runs and accepts this user"
            ) from None

    @staticmethod
    def redacted(url: str) -> str:
        """The URL without its password (for messages, logs and stats): see
        :func:`pmm.models.redact.mask_url`."""
        return mask_url(url)

    def close(self) -> None:
        self._pool.close()

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except self._errors as exc:
            raise DatabaseError(
                f"PostgreSQL at {self.where}: {redact_secrets(str(exc))}".strip()
            ) from exc

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of one statement, run outside any transaction."""
        with self._translated(), self._pool.connection() as conn:
            return conn.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement that returns no rows (``ANALYZE``, ``VACUUM``), outside any
        transaction."""
        with self._translated(), self._pool.connection() as conn:
            conn.execute(sql.encode(), params)

    def try_statement(self, sql: str) -> str | None:
        """Run one statement in its own transaction; returns None when it succeeded, else
        PostgreSQL's reason (first line), e.g. for ``CREATE EXTENSION`` that may fail."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(sql.encode())
        except self._errors as exc:
            return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None

    @contextlib.contextmanager
    def write(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction: committed when the block ends, rolled back on an error."""
        with self._translated(), self._pool.connection() as conn, conn.transaction():
            yield conn

    @contextlib.contextmanager
    def session(self) -> Iterator[psycopg.Connection[Any]]:
        """One connection, in autocommit mode, for a caller that runs several transactions
        of its own on it (a partition rewrite commits between its steps)."""
        with self._translated(), self._pool.connection() as conn:
            yield conn

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[psycopg.Connection[Any]]:
        """One read-only ``REPEATABLE READ`` transaction: every statement in it sees the
        same snapshot (verify reads the chain keys and then the rows), rolled back after."""
        with self._translated(), self._pool.connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield conn
            finally:
                conn.execute("ROLLBACK")

    def stream(
        self, sql: str, params: Sequence[Any] = (), *, batch: int = 2000
    ) -> Generator[Any, None, None]:
        """Rows of a large query through a server-side cursor, ``batch`` rows at a time."""
        with (
            self._translated(),
            self._pool.connection() as conn,
            conn.transaction(),
            conn.cursor(name="pmm_stream") as cur,
        ):
            cur.itersize = batch
            cur.execute(sql, params)
            yield from cur

    def migrate(self) -> list[int]:
        """Apply pending migrations under :data:`MIGRATE_LOCK`, each in its own transaction;
        returns the versions applied now (none when another process did it first)."""
        applied: list[int] = []
        with self._translated(), self._pool.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
            try:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                    " name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
                done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
                known = max(version for version, _, _ in migrations())
                if done and max(done) > known:
                    raise NewerSchemaError(
                        f"PostgreSQL at {self.where} has schema version {max(done)}, newer "
                        f"than the newest this PMM knows ({known}): it was written by a newer "
                        "PMM. Upgrade PMM (pip install -U pmm-memory) to open it; nothing "
                        "was written"
                    )
                for version, name, sql in migrations():
                    if version in done:
                        continue
                    try:
                        with conn.transaction():
                            conn.execute(sql.encode())
                            conn.execute(
                                "INSERT INTO schema_migrations(version, name) VALUES (%s, %s)",
                                (version, name),
                            )
                    except self._errors as exc:
                        raise MigrationError(
                            f"PostgreSQL migration {version:04d}_{name} failed at {self.where}:"
                            f" {exc}"
                        ) from exc
                    applied.append(version)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))
        return applied
