"""Numbered migrations (checkout and installed wheel) and the legacy-database upgrade."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from store_helpers import (
    LEGACY_ENTRIES,
    MIGRATIONS,
    N_MIGRATIONS,
    REPO_ROOT,
    legacy_row_hash,
    make_legacy_db,
    open_worker,
    raw,
    raw_rows,
)

from pmm.errors import InvalidInputError, MigrationError
from pmm.events.hashing import sha256_hex
from pmm.storage.sqlite import EventStore, schema

# -- numbered migrations ---------------------------------------------------------------


def test_migration_files_are_numbered_without_gaps():
    assert N_MIGRATIONS >= 1
    loaded = schema.load_migrations()
    assert [m.version for m in loaded] == list(range(1, N_MIGRATIONS + 1))
    assert [f"{m.version:04d}_{m.name}.sql" for m in loaded] == [p.name for p in MIGRATIONS]
    assert (
        schema.migrations_dir().resolve()
        == (REPO_ROOT / "pmm" / "storage" / "sqlite" / "migrations").resolve()
    )


def test_load_migrations_refuses_a_gap(tmp_path: Path):
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE a(x);")
    (tmp_path / "0003_c.sql").write_text("CREATE TABLE c(x);")
    (tmp_path / "README.md").write_text("ignored")
    with pytest.raises(MigrationError, match="without gaps"):
        schema.load_migrations(tmp_path)


def test_split_statements_keeps_triggers_whole():
    sql = textwrap.dedent(
        """
        -- a comment line
        CREATE TABLE t(x);
        CREATE TRIGGER tr AFTER INSERT ON t BEGIN
            INSERT INTO t VALUES (1);
            INSERT INTO t VALUES (2);
        END;
        INSERT INTO t VALUES ('a;b');
        """
    )
    statements = schema.split_statements(sql)
    assert len(statements) == 3
    assert statements[1].startswith("CREATE TRIGGER") and statements[1].endswith("END;")
    with pytest.raises(MigrationError, match="unterminated"):
        schema.split_statements("CREATE TABLE x(a)")


def test_new_file_gets_every_migration_once(tmp_path: Path):
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        assert [m.version for m in store.applied_migrations] == list(range(1, N_MIGRATIONS + 1))
    for _ in range(3):
        with EventStore(db) as store:
            assert store.applied_migrations == []
    rows = raw_rows(db, "schema_migrations")
    assert [(r[0], r[1]) for r in rows] == [(m.version, m.name) for m in schema.load_migrations()]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == N_MIGRATIONS
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert {"events", "embeddings", "edges", "events_fts", "fts_state"} <= tables


def test_a_partly_migrated_file_gets_only_the_rest(tmp_path: Path):
    # Undo 0004 (index-only, so it can be undone by hand) on a file migrated to the end.
    last = next(m for m in schema.load_migrations() if m.name == "undigested_index")
    statements = schema.split_statements(last.sql)
    assert all(st.upper().startswith("CREATE INDEX") for st in statements)
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        store.append("event", "kept")
    with raw(db) as conn:  # undo the newest migration by hand
        conn.execute("DELETE FROM schema_migrations WHERE version = ?", (last.version,))
        for statement in statements:
            conn.execute(f"DROP INDEX {statement.split()[2]}")
        conn.execute(f"PRAGMA user_version = {N_MIGRATIONS - 1}")
    with EventStore(db) as store:
        assert [m.version for m in store.applied_migrations] == [last.version]
        assert store.get(1).content == "kept"
        assert store.verify().ok
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == N_MIGRATIONS
    conn.close()


def test_a_failing_migration_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch):
    db = tmp_path / "pmm.db"
    with EventStore(db) as store:
        store.append("event", "kept")
    good = schema.load_migrations()
    bad = schema.Migration(len(good) + 1, "broken", "CREATE TABLE ok_part(x);\nNOT SQL AT ALL;")
    monkeypatch.setattr(schema, "load_migrations", lambda folder=None: [*good, bad])
    with pytest.raises(MigrationError, match=r"0*\d+_broken failed") as info:
        EventStore(db)
    assert "left as it was" in str(info.value)
    conn = sqlite3.connect(db)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "ok_part" not in tables
    assert conn.execute("PRAGMA user_version").fetchone()[0] == N_MIGRATIONS
    conn.close()
    monkeypatch.undo()
    with EventStore(db) as store:
        assert store.applied_migrations == [] and store.verify().ok


# -- from an installed wheel --------------------------------------------------------------

WHEEL_CHECK = textwrap.dedent(
    """
    import json, sys
    import pmm, pmm.storage.sqlite.schema as schema
    from pmm.storage.sqlite import EventStore
    store = EventStore(sys.argv[1])
    ev = store.append("event", "from the wheel")
    again = EventStore(sys.argv[1])
    print(json.dumps({
        "pmm_file": pmm.__file__,
        "migrations_dir": str(schema.migrations_dir()),
        "applied": [m.version for m in store.applied_migrations],
        "applied_on_reopen": [m.version for m in again.applied_migrations],
        "files": sorted(p.name for p in schema.migrations_dir().iterdir()),
        "verify": store.verify().ok,
        "id": ev.id,
        "sys_path": sys.path,
    }))
    """
)


def test_migrations_apply_from_an_installed_wheel(tmp_path: Path):
    started = time.monotonic()
    wheels, target, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    for folder in (wheels, target, elsewhere):
        folder.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    build = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = wheels.glob("pmm_memory-*.whl")
    install = subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert sorted(
        p.name for p in (target / "pmm" / "storage" / "sqlite" / "migrations").iterdir()
    ) == [p.name for p in MIGRATIONS]

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(target)
    db = elsewhere / "wheel.db"
    run = subprocess.run(
        [sys.executable, "-c", WHEEL_CHECK, str(db)],
        capture_output=True,
        text=True,
        cwd=elsewhere,  # so the checkout is not importable from the working directory
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(out["pmm_file"]).resolve().is_relative_to(target.resolve()), out
    assert (
        Path(out["migrations_dir"]).resolve()
        == (target / "pmm" / "storage" / "sqlite" / "migrations").resolve()
    )
    assert out["applied"] == list(range(1, N_MIGRATIONS + 1))
    assert out["applied_on_reopen"] == []
    assert out["files"] == [p.name for p in MIGRATIONS]
    assert out["verify"] is True and out["id"] == 1
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == N_MIGRATIONS
    assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == N_MIGRATIONS
    conn.close()
    assert time.monotonic() - started < 120


# -- the earlier PMM's database ------------------------------------------------------------


@pytest.fixture
def legacy_db(tmp_path: Path) -> tuple[Path, list[tuple[object, ...]]]:
    db = tmp_path / "pmm.db"
    rows = make_legacy_db(db)
    assert len(rows) == len(LEGACY_ENTRIES)
    return db, rows


def test_legacy_fixture_is_what_the_earlier_pmm_wrote(legacy_db):
    _db, rows = legacy_db
    assert rows[0][5] is None  # first prev_hash is NULL
    for previous, current in itertools.pairwise(rows):
        assert current[5] == previous[6]
    for _id, _ts, kind, content, meta, prev, digest in rows:
        assert digest == legacy_row_hash(prev, kind, content, meta)
    assert any(r[3].startswith("User said: ") for r in rows)
    assert any(r[3].startswith("I responded: ") for r in rows)
    assert {r[4] for r in rows} >= {"{}", '{"source": "cli"}'}


def test_legacy_database_is_backed_up_then_migrated(legacy_db):
    db, rows = legacy_db
    with EventStore(db) as store:
        assert [m.version for m in store.applied_migrations] == list(range(1, N_MIGRATIONS + 1))
        events = store.events()
        report = store.verify()

    (backup,) = db.parent.glob(f"{db.name}.bak-*")
    assert backup.parent == db.parent
    assert backup.name[len(db.name) + len(".bak-") :].endswith("Z")
    # the backup holds the old database as it was: same schema, same rows
    conn = sqlite3.connect(backup)
    assert conn.execute("SELECT * FROM events ORDER BY id").fetchall() == rows
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert "events" in tables and "schema_migrations" not in tables
    columns = [r[1] for r in conn.execute("PRAGMA table_info(events)")]
    assert columns == ["id", "ts", "kind", "content", "meta", "prev_hash", "hash"]
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()

    assert report.ok, report
    assert report.rows == len(rows) and report.head == rows[-1][6]
    assert len(events) == len(rows)
    for ev, (id_, ts, kind, content, meta, prev, digest) in zip(events, rows, strict=True):
        assert (ev.id, ev.ts, ev.kind, ev.content, ev.prev_hash, ev.hash) == (
            id_,
            ts,
            kind,
            content,
            prev,
            digest,
        )
        assert ev.hash_version == 0
        assert ev.session_id == "default"
        assert ev.role is None
        assert ev.meta == json.loads(meta)
        assert ev.content_sha256 == sha256_hex(content)
    # the stored meta text is kept byte for byte (it is what the legacy hash covers)
    assert [r[0] for r in sqlite3.connect(db).execute("SELECT meta FROM events ORDER BY id")] == [
        r[4] for r in rows
    ]


def test_legacy_migration_happens_once(legacy_db):
    db, _rows = legacy_db
    EventStore(db).close()
    with EventStore(db) as store:
        assert store.applied_migrations == []
        assert store.verify().ok
    assert len(list(db.parent.glob(f"{db.name}.bak-*"))) == 1
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == N_MIGRATIONS
    conn.close()


def test_new_appends_start_their_own_chain_beside_the_legacy_one(legacy_db):
    db, rows = legacy_db
    with EventStore(db) as store:
        ev = store.append("prompt", "hello again", session_id="default", role="user")
        ev2 = store.append("response", "welcome back", session_id="default", role="assistant")
        assert ev.id == rows[-1][0] + 1
        assert ev.prev_hash is None  # the chain without a user starts here (version 3)
        assert ev.hash_version == 3 and ev2.prev_hash == ev.hash
        report = store.verify(expect_head=ev2.hash)
        assert report.ok and report.rows == len(rows) + 2
        assert report.heads == {"legacy": rows[-1][6], "no-user": ev2.hash}
        assert store.verify(expect_head=report.root).ok
        assert store.count(session_id="default") == len(rows) + 2
        assert store.search_text("Lisbon")  # legacy rows are searchable too


def test_tampered_legacy_content_is_caught(legacy_db):
    db, _rows = legacy_db
    EventStore(db).close()
    with raw(db) as conn:
        conn.execute("UPDATE events SET content = 'User said: I moved to Porto' WHERE id = 2")
    with EventStore(db) as store:
        report = store.verify()
    assert not report.ok and report.first_bad_id == 2 and "content" in report.reason


def test_tampered_legacy_content_and_digest_is_caught(legacy_db):
    db, _rows = legacy_db
    EventStore(db).close()
    forged = "User said: I moved to Porto"
    with raw(db) as conn:
        conn.execute(
            "UPDATE events SET content = ?, content_sha256 = ? WHERE id = 2",
            (forged, sha256_hex(forged)),
        )
    with EventStore(db) as store:
        report = store.verify()
    assert not report.ok and report.first_bad_id == 2 and "hash" in report.reason


def test_tampered_legacy_meta_and_deleted_row_are_caught(legacy_db):
    db, _rows = legacy_db
    EventStore(db).close()
    with raw(db) as conn:
        conn.execute("""UPDATE events SET meta = '{"source":"cli"}' WHERE id = 4""")
    with EventStore(db) as store:
        report = store.verify()
    assert not report.ok and report.first_bad_id == 4
    with raw(db) as conn:
        conn.execute("""UPDATE events SET meta = '{"source": "cli"}' WHERE id = 4""")
        conn.execute("DELETE FROM events WHERE id = 3")
    with EventStore(db) as store:
        report = store.verify()
    assert not report.ok and report.first_bad_id == 4 and "prev_hash" in report.reason


def test_processes_opening_a_legacy_file_at_once_migrate_it_once(legacy_db):
    db, rows = legacy_db
    openers = 3
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(openers), ctx.Queue()
    procs = [
        ctx.Process(target=open_worker, args=([str(db)], barrier, results)) for _ in range(openers)
    ]
    for proc in procs:
        proc.start()
    applied = [results.get(timeout=120)[0] for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    assert all(isinstance(a, list) for a in applied), applied
    assert sorted(v for a in applied for v in a) == list(range(1, N_MIGRATIONS + 1)), applied
    with EventStore(db) as store:
        report = store.verify()
        assert report.ok and report.rows == len(rows) and report.head == rows[-1][6]
        assert [e.hash_version for e in store.events()] == [0] * len(rows)
    # every opener that saw the legacy table backs it up first; one of them won the race
    # and migrated, so its backup holds the legacy rows as they were
    backups = sorted(db.parent.glob(f"{db.name}.bak-*"))
    assert 1 <= len(backups) <= openers
    assert any(raw_rows(b) == rows for b in backups)


def test_legacy_in_memory_cannot_be_backed_up():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(
        "CREATE TABLE events(id INTEGER PRIMARY KEY, ts, kind, content, meta, prev_hash, hash)"
    )
    assert schema.is_legacy(conn)
    with pytest.raises(MigrationError, match="in-memory"):
        schema.migrate(conn, None)


def test_legacy_rows_cannot_be_redacted(legacy_db):
    db, _rows = legacy_db
    with EventStore(db) as store:
        with pytest.raises(InvalidInputError, match="earlier PMM"):
            store.redact(1, reason="erase")
        assert store.get(1).content is not None
        assert store.verify().ok
