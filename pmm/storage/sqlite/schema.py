"""Numbered SQL migrations, applied in order exactly once, and the legacy upgrade.

The SQL lives beside this module in ``migrations/NNNN_name.sql`` (package data: a checkout
and an installed wheel read the same folder). Applied versions are recorded in ``schema_migrations``
(and mirrored in ``PRAGMA user_version``). Each migration runs in its own
``BEGIN IMMEDIATE`` transaction, so two processes opening a new file at once apply it once.

A database written by the earlier PMM (an ``events`` table without ``content_sha256``) is
first copied to ``<name>.bak-<UTC time>`` and then rebuilt into the current schema, its
rows keeping their ids, hashes and ``hash_version = 0``.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from pmm.errors import MigrationError, NewerSchemaError, NotADatabaseError
from pmm.events.hashing import LEGACY_HASH_VERSION, sha256_hex, utc_now

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


READ_COMPATIBLE = "-- read-compatible"
"""A migration whose SQL holds this line leaves files that this PMM still reads correctly
without it: a read-only archive is opened (verify, search, export) without applying it."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def read_compatible(self) -> bool:
        return READ_COMPATIBLE in self.sql


@functools.cache
def migrations_dir() -> Path:
    """The folder holding the SQL files, ``pmm/storage/sqlite/migrations``."""
    folder = resources.files(__package__) / "migrations"
    if not folder.is_dir():
        raise MigrationError(
            "PMM's migrations folder is missing from this installation: reinstall pmm-memory"
        )
    return Path(str(folder))


def load_migrations(folder: Path | None = None) -> list[Migration]:
    """The migrations in ``folder`` (default: :func:`migrations_dir`), in order; read from
    disk once per process."""
    return list(_read_migrations(folder or migrations_dir()))


@functools.cache
def _read_migrations(folder: Path) -> tuple[Migration, ...]:
    found: list[Migration] = []
    for path in sorted(folder.iterdir()):
        match = _NAME.match(path.name)
        if match:
            found.append(Migration(int(match[1]), match[2], path.read_text("utf-8")))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise MigrationError(
            f"migrations in {folder} must be numbered 1..N without gaps: {versions}"
        )
    return tuple(found)


def split_statements(sql: str) -> list[str]:
    """Split a script into statements, keeping ``CREATE TRIGGER ... END;`` whole."""
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        if not buffer and line.strip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise MigrationError(f"unterminated SQL statement in migration: {buffer.strip()[:80]}")
    return statements


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def refuse_newer(conn: sqlite3.Connection, db_path: Path | str | None) -> None:
    """Raise :class:`NewerSchemaError` when the file was written by a newer PMM: its schema
    version (``PRAGMA user_version``, or the newest row of ``schema_migrations``) is above
    the newest migration this PMM has. Only reads: such a file is never written."""
    known = max(m.version for m in load_migrations())
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    has_table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if has_table:
        newest = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        found = max(found, int(newest or 0))
    if found > known:
        raise NewerSchemaError(
            f"{db_path or 'the database'} has schema version {found}, newer than the newest "
            f"this PMM knows ({known}): it was written by a newer PMM. Upgrade PMM "
            "(pip install -U pmm-memory) to open it; nothing was read or written"
        )


_LEGACY_COLUMNS = frozenset({"id", "ts", "kind", "content", "meta", "prev_hash", "hash"})


def _refuse_foreign(conn: sqlite3.Connection, db_path: Path | None) -> None:
    """Refuse a SQLite file that holds another application's tables (PMM would add its
    own to it): neither PMM's schema nor the earlier PMM's ``events`` table."""
    tables = {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if not tables or "schema_migrations" in tables or is_legacy(conn):
        return
    raise NotADatabaseError(
        f"{db_path or 'the database'} is a SQLite database of another application (tables: "
        f"{', '.join(sorted(tables)[:5])}): PMM will not add its tables to it; use a new file"
    )


def is_legacy(conn: sqlite3.Connection) -> bool:
    """True for a database written by the earlier PMM: an ``events`` table with its
    columns and no ``content_sha256``."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    # Not keyed on schema_migrations: migrate() creates that table (under its write lock)
    # just before it asks this again, and the legacy events table must still be seen then.
    if "events" not in tables:
        return False
    columns = {r[1] for r in conn.execute("PRAGMA table_info(events)")}
    return "content_sha256" not in columns and columns >= _LEGACY_COLUMNS


def migrate(conn: sqlite3.Connection, db_path: Path | None) -> list[Migration]:
    """Bring the database up to date; returns the migrations it applied.

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    _refuse_foreign(conn, db_path)
    refuse_newer(conn, db_path)
    if is_legacy(conn):
        if db_path is None:
            raise MigrationError("an in-memory legacy database cannot be backed up")
        _backup(conn, db_path)
    applied: list[Migration] = []
    done_before = applied_versions(conn)
    for migration in load_migrations():
        if migration.version in done_before:
            continue  # no write lock needed: opening a busy, up-to-date file only reads
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise MigrationError(
                f"cannot start migration {migration.version:04d}_{migration.name}: {exc}. "
                "Another process may hold the database longer than PMM_BUSY_TIMEOUT_MS: retry."
            ) from exc
        try:
            # Re-checked under the write lock: another process may have just applied it.
            if migration.version in applied_versions(conn):
                conn.execute("COMMIT")
                continue
            if migration.version == 1 and is_legacy(conn):
                _upgrade_legacy(conn, migration)
            else:
                for statement in split_statements(migration.sql):
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, utc_now()),
            )
            newest = max(applied_versions(conn))
            conn.execute(f"PRAGMA user_version = {newest}")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise MigrationError(
                f"migration {migration.version:04d}_{migration.name} failed: {exc}. "
                "The database was left as it was before this migration."
            ) from exc
        applied.append(migration)
        log.info("applied migration %04d_%s", migration.version, migration.name)
    return applied


def _backup(conn: sqlite3.Connection, db_path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = db_path.with_name(f"{db_path.name}.bak-{stamp}")
    try:
        with sqlite3.connect(target) as backup:
            conn.backup(backup)
        backup.close()
        shutil.copystat(db_path, target)
    except (OSError, sqlite3.Error) as exc:
        raise MigrationError(
            f"could not write the backup {target} before migrating the legacy database: {exc}. "
            "Free some space or make the folder writable; nothing was changed."
        ) from exc
    log.warning("legacy PMM database found: backed up to %s before migrating it", target)
    return target


def _upgrade_legacy(conn: sqlite3.Connection, migration: Migration) -> None:
    """Rebuild ``events(id, ts, kind, content, meta, prev_hash, hash)`` into the new schema.

    Legacy chat rows had no session: they join the session ``default``. Their role stays
    NULL (it is read from their ``User said:`` / ``I responded:`` prefix when shown).
    """
    conn.create_function("pmm_sha256", 1, lambda text: sha256_hex(text or ""), deterministic=True)
    conn.execute("ALTER TABLE events RENAME TO events_legacy")
    for index in [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='index'"
            " AND tbl_name='events_legacy' AND sql IS NOT NULL"
        )
    ]:
        conn.execute(f'DROP INDEX "{index}"')
    for statement in split_statements(migration.sql):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256, meta,"
        " prev_hash, hash, hash_version)"
        " SELECT id, ts, kind, 'default', NULL, content, pmm_sha256(content), COALESCE(meta, '{}'),"
        f" prev_hash, hash, {LEGACY_HASH_VERSION} FROM events_legacy ORDER BY id"
    )
    conn.execute("DROP TABLE events_legacy")
