"""An API key never reaches the database bytes, the log, an exception message or `pmm doctor`,
even when the server echoes it back in an error (as OpenAI does with a rejected key)."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import pytest

from pmm import Mind
from pmm.cli import main
from tests.fake_openai import FakeOpenAI

SECRET = "sk-test-SECRET123"
REPO_ROOT = Path(__file__).resolve().parents[2]


def _file_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


def _log_text(caplog: pytest.LogCaptureFixture) -> str:
    parts = []
    for record in caplog.records:
        parts.append(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            parts.append("".join(traceback.format_exception(record.exc_info[1])))
    return "\n".join(parts)


@pytest.mark.parametrize("summarizer", ["auto", "llm"])
def test_api_key_stays_out_of_db_log_errors_and_doctor(
    tmp_path: Path, monkeypatch, caplog, capsys, summarizer: str
):
    db = tmp_path / "pmm.db"
    with FakeOpenAI(timeout=60) as server:
        for _ in range(20):
            server.reply_status(401, f"Incorrect API key provided: {SECRET}.")
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/v1")
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the local summarizer fails at once
        errors: list[str] = []
        with caplog.at_level(logging.DEBUG):
            try:
                with Mind(
                    str(db),
                    enable_summary=True,
                    summary_mode="inline",
                    summarizer=summarizer,
                    summary_min_chars=10,
                ) as mind:
                    mind.remember_turn(
                        "please summarise this long question " * 20,
                        "and this long answer " * 20,
                        session_id="s",
                    )
                    mind.dream()
            except Exception as exc:  # the key must not be in what the caller sees either
                errors.append("".join(traceback.format_exception(exc)))
            assert main(["--db", str(db), "doctor"]) == 0
            assert main(["--db", str(db), "doctor", "--json"]) == 0
        assert server.requests, "the llm summarizer never called the server"
        assert server.requests[0].headers.get("authorization") == f"Bearer {SECRET}"
    out = capsys.readouterr()
    assert SECRET.encode() not in _file_bytes(db)
    assert SECRET not in _log_text(caplog)
    assert SECRET not in "\n".join(errors)
    assert SECRET not in out.out + out.err


def test_env_file_is_git_ignored():
    ignored = (REPO_ROOT / ".gitignore").read_text().splitlines()
    assert ".env" in [line.strip() for line in ignored]


def test_redact_secrets_covers_environment_values_and_key_shapes(monkeypatch):
    from pmm.models.redact import redact_secrets

    monkeypatch.setenv("ANTHROPIC_API_KEY", "plain-secret-value-42")
    text = redact_secrets("got plain-secret-value-42 and sk-proj-abcdefgh12345 here")
    assert text == "got [redacted] and [redacted] here"
    assert redact_secrets("sk-short and a task-list") == "sk-short and a task-list"
