"""Where acknowledged memory lives (issue 22): after a program exits without close(), or
drops a Mind unclosed, the ``.db`` file alone holds every event (the -wal file is
checkpointed into it); ``pmm stats`` and the chat's ``/stats`` report the same size; the
``sqlite_synchronous`` setting reaches SQLite."""

from __future__ import annotations

import gc
import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pmm import Mind
from pmm.errors import ConfigurationError, InvalidInputError
from pmm.storage.sqlite import EventStore

ROOT = Path(__file__).resolve().parents[3]


def _events_in_db_alone(db: Path, tmp_path: Path) -> int:
    """Copy only the .db file (no -wal, no -shm) and count the events it holds."""
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir(exist_ok=True)
    copy = copy_dir / "alone.db"
    shutil.copyfile(db, copy)
    with sqlite3.connect(copy) as conn:
        (count,) = conn.execute("SELECT count(*) FROM events").fetchone()
    return int(count)


def _run(script: str, cwd: Path) -> None:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("summaries", [False, True])
def test_a_script_that_never_closes_leaves_everything_in_the_db_file(
    tmp_path: Path, summaries: bool
) -> None:
    """The README's quick starts never call close(): a real interpreter exit must still
    leave the .db file complete (with summaries on, the worker's digests too)."""
    _run(
        f"""
        from pmm import Mind, PersistentMindMemory
        mind = Mind("pmm.db", enable_summary={summaries}, summarizer="heuristic")
        for i in range(150):
            mind.remember(f"note number {{i}} about Lisbon and the sea", role="user",
                          session_id="alice")
        memory = PersistentMindMemory(db_path="pmm.db", session_id="bob")
        memory.save_context({{"input": "I live in Porto"}}, {{"output": "Noted."}})
        """,
        tmp_path,
    )
    db = tmp_path / "pmm.db"
    wal = tmp_path / "pmm.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    assert _events_in_db_alone(db, tmp_path) == 152
    if summaries:
        with sqlite3.connect(tmp_path / "copy" / "alone.db") as conn:
            (pending,) = conn.execute(
                "SELECT count(*) FROM events WHERE digest_method IS NULL AND kind='prompt'"
            ).fetchone()
        assert pending == 0  # the worker finished before the checkpoint


def test_an_unclosed_mind_is_checkpointed_when_collected(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    keeper = EventStore(db)  # another connection: SQLite would not checkpoint on its own
    mind = Mind(str(db))
    for i in range(100):
        mind.remember(f"turn {i} of a long chat", role="user", session_id="s")
    assert (tmp_path / "pmm.db-wal").stat().st_size > 0
    del mind
    gc.collect()
    assert (tmp_path / "pmm.db-wal").stat().st_size == 0
    assert _events_in_db_alone(db, tmp_path) == 100
    keeper.close()


def test_close_checkpoints_while_another_connection_is_open(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    keeper = EventStore(db)
    store = EventStore(db)
    for i in range(50):
        store.append("prompt", f"turn {i}", session_id="s", role="user")
    store.close()
    store.close()  # twice is harmless
    assert _events_in_db_alone(db, tmp_path) == 50
    keeper.close()


def test_pmm_stats_and_chat_stats_report_the_same_size(tmp_path: Path) -> None:
    """The chat's /stats ran while its -wal file held the turns, `pmm stats` after it
    exited: both must report the database's size, not whatever the -wal file held."""
    db = tmp_path / "pmm.db"
    keeper = EventStore(db)  # keeps the -wal file from being checkpointed at close
    from pmm.chat.offline import OfflineResponder
    from pmm.chat.repl import Chat

    lines: list[str] = []
    chat = Chat(Mind(str(db)), "s", OfflineResponder(), write=lines.append)
    for i in range(80):
        chat.mind.remember(f"line {i} of the chat", role="user", session_id="s")
    chat.show_stats()
    assert (tmp_path / "pmm.db-wal").stat().st_size > 0
    chat.mind.close()
    keeper.close()
    shown = lines[-1].split("(")[-1].split(" bytes")[0]
    cli = subprocess.run(
        [sys.executable, str(ROOT / "pmm_cli.py"), "--db", str(db), "--json", "stats"],
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["bytes_on_disk"] == int(shown.replace(",", ""))
    assert json.loads(cli.stdout)["bytes_on_disk"] == db.stat().st_size


@pytest.mark.parametrize(("setting", "pragma"), [("normal", 1), ("full", 2)])
def test_sqlite_synchronous_setting_reaches_sqlite(
    tmp_path: Path, setting: str, pragma: int
) -> None:
    with Mind(str(tmp_path / "pmm.db"), sqlite_synchronous=setting) as mind:
        assert mind.store._conn.execute("PRAGMA synchronous").fetchone()[0] == pragma  # type: ignore[attr-defined]


def test_sqlite_synchronous_refuses_other_modes(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="sqlite_synchronous"):
        Mind(str(tmp_path / "pmm.db"), sqlite_synchronous="off")
    with pytest.raises(InvalidInputError, match="synchronous"):
        EventStore(tmp_path / "x.db", synchronous="off")
