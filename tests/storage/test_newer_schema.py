"""A database written by a newer PMM (a schema version above the newest migration this PMM
has) is refused on open, naming both versions and "upgrade PMM", and nothing is written to
it: SQLite (writable and read-only) and PostgreSQL (issue 36)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pmm.cli import main
from pmm.errors import NewerSchemaError
from pmm.storage import open_store
from pmm.storage.postgres.connection import migrations as pg_migrations
from pmm.storage.sqlite import schema


def _newer_sqlite(path: Path) -> int:
    """A PMM file whose schema is one version past this PMM's; returns that version."""
    with open_store(str(path)) as store:
        store.append("prompt", "written by a newer PMM", session_id="s", role="user")
    future = max(m.version for m in schema.load_migrations()) + 1
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at)"
            " VALUES (?, 'from_the_future', '2030-01-01T00:00:00Z')",
            (future,),
        )
        conn.execute(f"PRAGMA user_version = {future}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return future


def _assert_names_both(message: str, found: int, known: int) -> None:
    assert f"version {found}" in message and f"({known})" in message, message
    assert "Upgrade PMM" in message, message


def test_a_sqlite_file_of_a_newer_pmm_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    future = _newer_sqlite(db)
    before = db.read_bytes()
    with pytest.raises(NewerSchemaError) as refused:
        open_store(str(db))
    _assert_names_both(str(refused.value), future, future - 1)
    assert db.read_bytes() == before


def test_only_user_version_says_newer(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    future = _newer_sqlite(db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = ?", (future,))
    conn.close()
    with pytest.raises(NewerSchemaError):
        open_store(str(db))


def test_a_read_only_sqlite_file_of_a_newer_pmm_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    future = _newer_sqlite(db)
    db.chmod(0o444)
    try:
        with pytest.raises(NewerSchemaError) as refused:
            open_store(str(db))
    finally:
        db.chmod(0o644)
    _assert_names_both(str(refused.value), future, future - 1)


def test_the_cli_says_upgrade_pmm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "pmm.db"
    _newer_sqlite(db)
    assert main(["--db", str(db), "stats"]) == 1
    err = capsys.readouterr().err
    assert "Upgrade PMM" in err and "Traceback" not in err


def test_a_postgres_database_of_a_newer_pmm_is_refused(pg_url: str) -> None:
    import psycopg

    with open_store(pg_url) as store:
        store.append("prompt", "written by a newer PMM", session_id="s", role="user")
    known = max(version for version, _, _ in pg_migrations())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schema_migrations(version, name) VALUES (%s, 'from_the_future')",
            (known + 1,),
        )
        before = conn.execute("SELECT count(*) FROM events").fetchone()
    with pytest.raises(NewerSchemaError) as refused:
        open_store(pg_url)
    _assert_names_both(str(refused.value), known + 1, known)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == before
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert max(versions) == known + 1 and len(versions) == known + 1
