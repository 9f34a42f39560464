"""The ``pmm`` admin CLI: every command, --json output, exit codes 0/1/2, export/import."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from store_helpers import N_MIGRATIONS, make_legacy_db, raw, snapshot

from pmm.cli import main
from pmm.mind import Mind
from pmm.storage.sqlite import EventStore

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "pmm_cli.py"
COMMANDS = [
    "init",
    "migrate",
    "stats",
    "verify",
    "tail",
    "show",
    "export",
    "import",
    "dream",
    "embed",
    "search",
    "doctor",
    "redact",
]
LONG_TEXT = (
    "I spent the whole weekend repainting the kitchen of my flat in Oslo a pale green, "
    "then fixed the dripping tap and finally assembled the bookshelf that had waited in "
    "the hallway since March, so on Monday my back hurt but the place looked wonderful."
)


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No PMM_* or OpenAI settings from the machine, and no .env from a parent folder."""
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "pmm.db"


@pytest.fixture
def filled(db: Path) -> Path:
    """A log with turns in two sessions (one long enough for a real digest)."""
    with Mind(str(db)) as mind:
        mind.remember_turn(
            "Hi, my name is Zed and I live in Oslo", "Nice to meet you, Zed!", session_id="s1"
        )
        mind.remember_turn("I like skiing in winter", "Skiing is great fun.", session_id="s2")
        mind.remember_turn(LONG_TEXT, "That sounds like a productive weekend.", session_id="s1")
    return db


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``pmm ARGV`` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def script(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real program, ``python pmm_cli.py ARGV``."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PMM_", "OPENAI_"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, str(SCRIPT), *argv],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def export_lines(capsys: pytest.CaptureFixture[str], path: Path) -> list[str]:
    code, out, _ = run(capsys, "export", "-", "--db", str(path))
    assert code == 0
    return out.splitlines()


# -- the real program ----------------------------------------------------------------


def test_script_help_lists_every_command(tmp_path: Path) -> None:
    result = script("--help", cwd=tmp_path)
    assert result.returncode == 0
    for name in COMMANDS:
        assert f"    {name} " in result.stdout
    assert "exit codes" in result.stdout


def test_script_init_then_stats_json(tmp_path: Path) -> None:
    target = tmp_path / "new.db"
    init = script("init", "--db", str(target), "--json", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    data = json.loads(init.stdout)
    assert data["created"] is True
    assert data["schema_version"] == N_MIGRATIONS
    assert Path(data["path"]) == target.resolve()
    # PMM_DB_PATH is the default --db
    stats = script("stats", "--json", cwd=tmp_path, env={"PMM_DB_PATH": str(target)})
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["events"] == 0


def test_script_exit_codes_without_tracebacks(filled: Path, tmp_path: Path) -> None:
    missing = script("show", "999", "--db", str(filled), cwd=tmp_path)
    assert missing.returncode == 2
    assert "no event with id 999" in missing.stderr
    assert "Traceback" not in missing.stderr

    no_db = script("stats", "--db", str(tmp_path / "nope.db"), cwd=tmp_path)
    assert no_db.returncode == 2
    assert "pmm init" in no_db.stderr and "Traceback" not in no_db.stderr
    assert not (tmp_path / "nope.db").exists()

    bad_setting = script("stats", "--db", str(filled), cwd=tmp_path, env={"PMM_MAX_TOKENS": "x"})
    assert bad_setting.returncode == 2
    assert "PMM_MAX_TOKENS" in bad_setting.stderr and "Traceback" not in bad_setting.stderr

    with raw(filled) as conn:
        conn.execute("UPDATE events SET content = 'I live in Bergen' WHERE id = 1")
    tampered = script("verify", "--db", str(filled), cwd=tmp_path)
    assert tampered.returncode == 1
    assert "FAILED at event 1" in tampered.stdout
    assert "Traceback" not in tampered.stderr


# -- usage ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: pmm {command}" in out
    assert "--db" in out and "--json" in out


def test_usage_errors_exit_2(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2  # no command: help on stderr
    assert "COMMAND" in capsys.readouterr().err
    for argv in (["tail", "-n", "0"], ["show", "one"], ["redact", "1"], ["frobnicate"]):
        assert main([*argv, "--db", str(db)]) == 2
        err = capsys.readouterr().err
        assert "usage: pmm" in err and "error:" in err


def test_options_work_before_the_command(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--db", str(filled), "--json", "stats")
    assert code == 0
    assert json.loads(out)["events"] == 6


# -- init, migrate -------------------------------------------------------------------


def test_init_creates_and_reopens(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "init", "--db", str(db))
    assert code == 0
    assert f"Created {db.resolve()} (schema version {N_MIGRATIONS})" in out
    assert db.exists()
    again = run_json(capsys, "init", "--db", str(db))
    assert again["created"] is False and again["applied"] == []
    assert again["schema_version"] == N_MIGRATIONS


def test_migrate_backs_up_a_legacy_database(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_legacy_db(db)
    data = run_json(capsys, "migrate", "--db", str(db))
    assert len(data["applied"]) == N_MIGRATIONS
    assert data["schema_version"] == N_MIGRATIONS
    backup = Path(data["backup"])
    assert backup.exists() and backup.name.startswith("pmm.db.bak-")
    code, out, _ = run(capsys, "migrate", "--db", str(db))
    assert code == 0 and "up to date" in out
    assert run(capsys, "verify", "--db", str(db))[0] == 0


def test_migrate_needs_an_existing_database(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "migrate", "--db", str(db))
    assert code == 2
    assert "no database at" in err
    assert not db.exists()


# -- stats, verify ---------------------------------------------------------------------


def test_stats(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "stats", "--db", str(filled))
    assert data["events"] == 6 and data["turns"] == 6
    assert data["by_session"] == {"s1": 4, "s2": 2}
    assert data["by_role"] == {"user": 3, "assistant": 3}
    # summaries are off: nothing is "pending" (nothing will ever digest these turns)
    assert data["coverage"]["digests"] == {"turns": 6, "digested": 0, "pending": 0}
    assert data["coverage"]["embeddings"] == {}
    assert data["bytes_on_disk"] > 0
    code, out, _ = run(capsys, "stats", "--db", str(filled))
    assert code == 0
    assert "summaries off" in out and "pending" not in out
    assert "s1" in out and "assistant" in out


def test_verify_prints_the_head_to_pin(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with EventStore(filled) as store:
        head = store.head()
    assert head is not None
    code, out, _ = run(capsys, "verify", "--db", str(filled))
    assert code == 0
    assert "OK: 6 rows verified" in out and "rows/s" in out
    assert f"head: id 6  hash {head.hash}" in out
    data = run_json(capsys, "verify", "--db", str(filled), "--expect-head", head.hash)
    assert data["ok"] is True and data["rows"] == 6 and data["head"] == head.hash
    assert data["rows_per_second"] >= 0


def test_verify_expect_head_catches_truncation(
    filled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pinned = run_json(capsys, "verify", "--db", str(filled))["head"]
    with raw(filled) as conn:
        conn.execute("DELETE FROM events WHERE id = 6")
    code, out, _ = run(capsys, "verify", "--db", str(filled))
    assert code == 1 and "events were removed from its end" in out  # the recorded head
    code, out, _ = run(capsys, "verify", "--db", str(filled), "--expect-head", pinned)
    assert code == 1
    assert "FAILED" in out and pinned in out
    code, out, _ = run(capsys, "verify", "--db", str(filled), "--expect-head", pinned, "--json")
    assert code == 1
    assert json.loads(out)["ok"] is False


def test_verify_reports_the_first_bad_row(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with raw(filled) as conn:
        conn.execute("UPDATE events SET session_id = 's9' WHERE id = 4")
    code, out, _ = run(capsys, "verify", "--db", str(filled), "--json")
    assert code == 1
    data = json.loads(out)
    assert data["ok"] is False and data["first_bad_id"] == 4
    # the hash covers the session's keyed digest, which no longer matches the stored id
    assert "session is not the one its hash covers" in data["reason"]


# -- tail, show ----------------------------------------------------------------------


def test_tail(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "tail", "-n", "2", "--db", str(filled))
    assert [e["id"] for e in data] == [5, 6]
    data = run_json(capsys, "tail", "--session", "s2", "--db", str(filled))
    assert [e["id"] for e in data] == [3, 4]
    code, out, _ = run(capsys, "tail", "-n", "3", "--db", str(filled))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "ts", "session", "role", "kind", "text"]
    assert lines[2].startswith("4 ") and "Skiing is great fun." in lines[2]
    assert len(lines) == 5
    code, out, _ = run(capsys, "tail", "--session", "nobody", "--db", str(filled))
    assert code == 0 and "no events in session 'nobody'" in out


def test_show(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with EventStore(filled) as store:
        event = store.get(1)
    assert run_json(capsys, "show", "1", "--db", str(filled)) == event.to_dict()
    code, out, _ = run(capsys, "show", "1", "--db", str(filled))
    assert code == 0
    for name in ("content_sha256", "prev_hash", "hash_version", "digest_method", "keywords"):
        assert f"\n{name}:" in out
    assert event.hash in out
    assert out.rstrip().endswith("Hi, my name is Zed and I live in Oslo")


def test_show_missing_event_exits_2(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show", "42", "--db", str(filled))
    assert code == 2
    assert out == ""
    assert err.startswith("pmm: error: no event with id 42")


# -- export, import ------------------------------------------------------------------


def rich_log(db: Path) -> None:
    """A legacy log, migrated, then new turns, digests and a redaction: every kind of row."""
    make_legacy_db(db)
    with Mind(str(db), enable_summary=True, summary_mode="deferred", summarizer="heuristic") as m:
        m.remember_turn("Hi, my name is Zed and I live in Oslo", "Hello Zed!", session_id="s1")
        m.remember_turn(LONG_TEXT, "Well done.", session_id="s2")
        m.remember("a note", role="system", session_id="s1", meta={"source": "test", "n": [1]})
        m.dream()
        m.store.redact(8, reason="test")


def test_export_import_round_trip_is_exact(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rich_log(db)
    file = tmp_path / "log.jsonl"
    summary = run_json(capsys, "export", str(file), "--db", str(db))
    with EventStore(db) as store:
        original = list(store.iter_events())
    assert summary["events"] == len(original) == 12
    assert summary["head"] == original[-1].hash
    keys, *lines = file.read_text("utf-8").splitlines()  # the chain's secret comes first
    assert json.loads(keys)["chain_key"] == ""
    assert [json.loads(line) for line in lines] == [e.to_dict() for e in original]
    assert {json.loads(line)["hash_version"] for line in lines} == {0, 3}
    assert any(json.loads(line)["content"] is None for line in lines)  # the redaction
    assert any(json.loads(line)["digest_method"] == "heuristic" for line in lines)

    copy = tmp_path / "copy.db"
    code, out, err = run(capsys, "import", str(file), "--db", str(copy))
    assert code == 0, err
    assert f"imported 12 events into {copy}" in out
    with EventStore(copy) as store:
        assert list(store.iter_events()) == original
        assert store.verify(expect_head=original[-1].hash).ok
    assert export_lines(capsys, copy) == [keys, *lines]  # the same secret came along
    assert run(capsys, "verify", "--db", str(copy))[0] == 0
    # the search index was rebuilt for the imported rows
    # (turns 7 and 9 both hold the query's one word: the learned fusion's length feature
    # may put the longer one first)
    hits = run_json(capsys, "search", "Oslo", "--db", str(copy))
    found = [h["event"]["id"] for h in hits]
    assert found[:1] in ([7], [9]) and {7, 9} <= set(found)


def test_export_to_stdout_and_import_from_stdin(
    filled: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out, err = run(capsys, "export", "-", "--db", str(filled))
    assert code == 0
    assert len(out.splitlines()) == 1 + 6 and "exported 6 events to stdout" in err
    monkeypatch.setattr(sys, "stdin", io.StringIO(out))
    data = run_json(capsys, "import", "-", "--db", str(tmp_path / "copy.db"))
    assert data["events"] == 6 and data["verified"] is True


def test_import_of_a_whole_log_into_a_non_empty_database_fails(
    filled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "log.jsonl"
    assert run(capsys, "export", str(file), "--db", str(filled))[0] == 0
    other = tmp_path / "other.db"
    with Mind(str(other)) as mind:
        mind.remember("already here", role="user")
    before = snapshot(other)
    code, _, err = run(capsys, "import", str(file), "--db", str(other))
    assert code == 2
    assert "has no user" in err and "new, empty database" in err and "Traceback" not in err
    assert snapshot(other) == before


def test_import_of_one_user_into_a_database_of_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    with Mind(str(source)) as mind:
        mind.remember_turn("I paint with watercolours", "nice", session_id="t1", user_id="ann")
        mind.remember_turn("I row on Sundays", "fun", session_id="t2", user_id="ann")
    with Mind(str(target)) as mind:
        mind.remember_turn("I keep bees", "sweet", session_id="t9", user_id="ben")
    file = tmp_path / "ann.jsonl"
    assert run(capsys, "export", str(file), "--db", str(source), "--user", "ann")[0] == 0
    code, out, err = run(capsys, "import", str(file), "--db", str(target))
    assert code == 0, err
    assert "of user 'ann'" in out and "with new ids" in out and "run `pmm embed`" in out
    data = run_json(capsys, "verify", "--db", str(target), "--user", "ann")
    assert data["ok"] is True
    assert data["user_head"] in out
    before = snapshot(target)
    code, _, err = run(capsys, "import", str(file), "--db", str(target))  # she is there now
    assert code == 2 and "already has events" in err and snapshot(target) == before


def test_import_of_a_tampered_file_fails_without_rows(
    filled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "log.jsonl"
    assert run(capsys, "export", str(file), "--db", str(filled))[0] == 0
    lines = file.read_text("utf-8").splitlines()  # a chain key line, then the events
    row = json.loads(lines[3])
    row["content"] = "I like sailing in winter"  # the hash no longer matches the text
    lines[3] = json.dumps(row)
    file.write_text("\n".join(lines) + "\n", "utf-8")

    empty = tmp_path / "empty.db"
    assert run(capsys, "init", "--db", str(empty))[0] == 0
    code, _, err = run(capsys, "import", str(file), "--db", str(empty))
    assert code == 1
    assert "import refused" in err and "event 3" in err
    assert snapshot(empty) == (0, None, 0)

    fresh = tmp_path / "fresh.db"
    assert run(capsys, "import", str(file), "--db", str(fresh))[0] == 1
    assert not fresh.exists()  # a file the import created is not left behind

    # dropping a line breaks the chain too
    file.write_text("\n".join(lines[:1] + lines[2:]) + "\n", "utf-8")
    assert run(capsys, "import", str(file), "--db", str(empty))[0] == 1
    assert snapshot(empty) == (0, None, 0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", "not a JSON object"),
        ("[1, 2]\n", "expected a JSON object"),
        ('{"id": 1}\n', "the field 'ts' is missing"),
    ],
)
def test_import_of_a_malformed_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    file = tmp_path / "bad.jsonl"
    file.write_text(content, "utf-8")
    code, _, err = run(capsys, "import", str(file), "--db", str(tmp_path / "x.db"))
    assert code == 2
    assert f"{file}:1: {message}" in err


def test_import_of_a_missing_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "import", "nope.jsonl", "--db", str(tmp_path / "x.db"))
    assert code == 2
    assert "nope.jsonl" in err and "No such file" in err


# -- dream, embed, search ------------------------------------------------------------


def test_dream_digests_pending_turns(
    filled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PMM_SUMMARIZER", "heuristic")
    data = run_json(capsys, "dream", "--db", str(filled), "--limit", "4")
    assert data["digested"] == 4 and data["pending"] == 2
    code, out, err = run(capsys, "dream", "--db", str(filled))
    assert code == 0
    assert "digested 2 turns" in out and "0 still pending" in out
    assert "digesting" in err  # the progress bar
    with EventStore(filled) as store:
        events = store.events()
    assert all(e.digest_method for e in events)
    assert events[4].digest_method == "heuristic"  # LONG_TEXT: longer than summary_min_chars
    assert events[4].summary and len(events[4].summary) < len(LONG_TEXT)
    stats = run_json(capsys, "stats", "--db", str(filled))
    assert stats["coverage"]["digests"] == {"turns": 6, "digested": 6, "pending": 0}


def test_dream_progress_without_tqdm(
    filled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PMM_SUMMARIZER", "heuristic")
    monkeypatch.setenv("PMM_SUMMARY_BATCH_SIZE", "4")
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    code, out, err = run(capsys, "dream", "--db", str(filled))
    assert code == 0 and "digested 6 turns" in out
    assert err.splitlines() == ["digesting: 4/6 turns", "digesting: 6/6 turns"]


class FakeEmbedder:
    """A deterministic embedder: each word adds to one of 64 dimensions (by CRC-32, not
    ``hash()``, which Python salts per process)."""

    model_name = "test/fake"
    dim = 64

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, zlib.crc32(word.strip(".,!?").encode()) % self.dim] += 1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-9)
        return out


def test_embed_backfills_vectors(
    filled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import pmm.embed

    monkeypatch.setattr(pmm.embed, "build_embedder", lambda settings: FakeEmbedder())
    data = run_json(capsys, "embed", "--db", str(filled), "--limit", "5")
    assert data["embedded"] == 5 and data["vectors"] == 5 and data["missing"] == 1
    code, out, _ = run(capsys, "embed", "--db", str(filled))
    assert code == 0
    assert "embedded 1 turns with test/fake" in out and "0 turns still missing" in out
    stats = run_json(capsys, "stats", "--db", str(filled))
    assert stats["coverage"]["embeddings"] == {"test/fake": {"vectors": 6, "missing": 0}}
    hits = run_json(capsys, "search", "skiing winter", "--mode", "semantic", "--db", str(filled))
    assert hits[0]["event"]["id"] == 3
    assert "dense" in hits[0]["rankers"]
    # vectors of the configured model exist: search without --mode uses them (hybrid)
    monkeypatch.setenv("PMM_EMBEDDING_MODEL", "test/fake")
    hits = run_json(capsys, "search", "skiing winter", "--db", str(filled))
    assert any("dense" in h["rankers"] for h in hits)
    assert any({"turn", "window"} & set(h["rankers"]) for h in hits)
    monkeypatch.setenv("PMM_EMBEDDING_MODEL", "test/other-model")  # no vectors of it
    hits = run_json(capsys, "search", "skiing winter", "--db", str(filled))
    assert all(set(h["rankers"]) <= {"turn", "window"} for h in hits)


def test_search_finds_a_stored_turn(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", "where does Zed live? Oslo", "--db", str(filled))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["#", "id", "session", "role", "found", "by", "text"]
    assert lines[2].startswith("1 ") and ("turn 1st" in lines[2] or "window 1st" in lines[2])
    assert "Hi, my name is Zed and I live in Oslo" in lines[2]
    hits = run_json(capsys, "search", "skiing", "--db", str(filled), "--mode", "keyword")
    assert sorted(h["event"]["id"] for h in hits) == [3, 4]
    assert sorted(h["rankers"]["turn"] for h in hits) == [1, 2]
    assert run_json(capsys, "search", "skiing", "--session", "s1", "--db", str(filled)) == []
    code, out, _ = run(capsys, "search", "zeppelin", "--db", str(filled))
    assert code == 0 and "nothing found" in out
    code, _, err = run(capsys, "search", "   ", "--db", str(filled))
    assert code == 2 and "needs some text" in err


# -- doctor, redact ------------------------------------------------------------------


def test_doctor(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "doctor", "--db", str(db))
    backends = {b["name"]: b for b in data["digest_backends"]}
    assert set(backends) == {"llm", "local", "heuristic"}
    assert backends["heuristic"]["available"] is True
    assert backends["llm"]["available"] is False and "OPENAI_API_KEY" in backends["llm"]["detail"]
    assert data["token_counter"]
    assert data["packages"]["pmm-memory"]
    assert isinstance(data["embeddings"]["available"], bool)
    assert data["db_exists"] is False
    code, out, _ = run(capsys, "doctor", "--db", str(db))
    assert code == 0
    assert "heuristic" in out and "token counter:" in out and "embeddings:" in out
    assert not db.exists()  # doctor only looks


def test_redact(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "redact", "1", "--reason", "user asked", "--db", str(filled))
    assert data["redacted"] == 1 and data["marker"]["id"] == 7
    assert data["marker"]["meta"] == {"target": 1, "reason": "user asked"}
    with EventStore(filled) as store:
        assert store.get(1).content is None
        assert store.verify().ok
    code, _, err = run(capsys, "redact", "1", "--reason", "again", "--db", str(filled))
    assert code == 2 and "no event with id 1 holding text" in err
    code, _, err = run(capsys, "redact", "2", "--reason", " ", "--db", str(filled))
    assert code == 2 and "needs a reason" in err


# -- first-hour fixes: exit codes, --json errors and paths, head prefixes, pipes -----------


def test_bad_db_paths_exit_2_like_pmm_chat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    from pmm.chat.repl import main as chat_main

    folder = tmp_path / "afolder"
    folder.mkdir()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE invoices(id INTEGER)")
    missing = tmp_path / "nope" / "x.db"
    text = tmp_path / "notes.db"
    text.write_text("hello, not a database at all " * 100)
    for path, says in (
        (folder, "is a folder"),
        (other, "another application"),
        (missing, "does not exist"),
        (text, "not a PMM/SQLite database"),
    ):
        for command in ("init", "stats", "verify"):
            if command != "init" and path == missing:
                continue
            code, _, err = run(capsys, command, "--db", str(path))
            assert code == 2, (command, path, err)
            assert says in err
        assert chat_main(["--db", str(path)]) == 2
        capsys.readouterr()


def test_json_errors_are_json_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "init", "--db", str(tmp_path / "nope" / "x.db"), "--json")
    assert code == 2 and "does not exist" in err
    assert json.loads(out) == {"error": json.loads(out)["error"], "exit_code": 2}
    assert "does not exist" in json.loads(out)["error"]
    code, out, _ = run(capsys, "tail", "-n", "zero", "--json")
    assert code == 2 and json.loads(out)["exit_code"] == 2


def test_json_paths_are_absolute(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.chdir(filled.parent)
    name = filled.name
    assert Path(run_json(capsys, "stats", "--db", name)["path"]) == filled.resolve()
    assert Path(run_json(capsys, "verify", "--db", name)["path"]) == filled.resolve()
    exported = run_json(capsys, "export", "out.jsonl", "--db", name)
    assert exported["path"] == str(filled.resolve())
    assert exported["file"] == str((filled.parent / "out.jsonl").resolve())
    imported = run_json(capsys, "import", "out.jsonl", "--db", "copy.db")
    assert imported["path"] == str((filled.parent / "copy.db").resolve())
    assert Path(run_json(capsys, "doctor", "--db", name)["db_path"]).is_absolute()


def test_verify_accepts_a_unique_head_prefix(
    filled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = run_json(capsys, "verify", "--db", str(filled))["head"]
    for pin in (head[:8], head[:20].upper(), head):
        code, out, err = run(capsys, "verify", "--db", str(filled), "--expect-head", pin)
        assert code == 0, (pin, out, err)
    with EventStore(str(filled)) as store:
        older = store.get(2).hash
    code, out, _ = run(capsys, "verify", "--db", str(filled), "--expect-head", older[:10])
    assert code == 0  # an earlier head is still in the chain
    code, out, _ = run(capsys, "verify", "--db", str(filled), "--expect-head", "0" * 64)
    assert code == 1 and "not in the log" in out
    for bad, says in (("c7a8ab8", "too short"), ("xyz12345", "not a hash"), ("a" * 65, "not")):
        code, _, err = run(capsys, "verify", "--db", str(filled), "--expect-head", bad)
        assert code == 2 and says in err, (bad, err)


def test_export_to_a_closed_pipe_is_not_an_error(filled: Path) -> None:
    with Mind(str(filled)) as mind:
        for i in range(300):
            mind.remember(f"line {i} " + "x" * 200, role="user", session_id="s1")
    run_ = subprocess.run(
        f"{sys.executable} {SCRIPT} export - --db {filled} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=filled.parent,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        executable="/bin/bash",
    )
    assert json.loads(run_.stdout)["chain_key"] == ""  # the secret its rows need, first
    assert "Error" not in run_.stderr and "Traceback" not in run_.stderr
    status = subprocess.run(
        f"set -o pipefail; {sys.executable} {SCRIPT} export - --db {filled} | head -1 >/dev/null",
        shell=True,
        cwd=filled.parent,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        executable="/bin/bash",
    )
    assert status.returncode == 0


def test_found_by_reads_as_places() -> None:
    from pmm.text.words import found_by

    assert found_by({"keyword": 1, "semantic": 3}) == "keyword 1st, semantic 3rd"
    assert found_by({"keyword": 12, "semantic": 22}) == "keyword 12th, semantic 22nd"
    assert found_by({}) == "-"
