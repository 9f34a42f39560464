"""A PostgreSQL password never shows: ``pmm doctor``, ``pmm stats``, ``pmm verify``,
``repr(Mind(url))`` and connection errors print the URL with ``***`` in its place (and
``pmm stats`` prints the URL, not a file path made of it)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from pmm import Mind
from pmm.cli import main
from pmm.errors import DatabaseError
from pmm.models.redact import mask_url, redact_secrets


@pytest.fixture
def password() -> str:
    return f"pw-{secrets.token_hex(10)}"


@pytest.fixture
def url(pg_url: str, password: str) -> str:
    """``pg_url`` with a password (the test cluster trusts 127.0.0.1: any password works)."""
    scheme, rest = pg_url.split("://", 1)
    user, host = rest.split("@", 1)
    with Mind(f"{scheme}://{user}:{password}@{host}") as mind:
        mind.remember_turn("I moved to Lisbon", "Noted.", session_id="s")
    return f"{scheme}://{user}:{password}@{host}"


def _masked(url: str, password: str) -> str:
    return url.replace(f":{password}@", ":***@")


def test_mask_url_hides_the_password_wherever_the_url_holds_it() -> None:
    assert mask_url("postgresql://app:s3cr3t-pw@db:5432/pmm") == "postgresql://app:***@db:5432/pmm"
    assert (
        mask_url("postgresql://app@db/pmm?sslmode=require&password=s3cr3t-q")
        == "postgresql://app@db/pmm?sslmode=require&password=***"
    )
    assert mask_url("postgresql://app@db/pmm") == "postgresql://app@db/pmm"
    assert mask_url("/var/lib/pmm/pmm.db") == "/var/lib/pmm/pmm.db"
    # once masked, a driver's message that quotes the password is redacted too
    assert redact_secrets("auth failed: s3cr3t-pw, s3cr3t-q") == (
        "auth failed: [redacted], [redacted]"
    )


def test_repr_of_a_mind_on_a_url_hides_the_password(url: str, password: str) -> None:
    with Mind(url) as mind:
        assert password not in repr(mind)
        assert repr(mind) == f"Mind({_masked(url, password)!r})"


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_doctor_hides_the_password(
    url: str, password: str, json_flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", url, "doctor", *json_flag]) == 0
    out, err = capsys.readouterr()
    assert password not in out + err
    assert _masked(url, password) in out
    if json_flag:
        found = json.loads(out)
        assert found["db_path"] == _masked(url, password)
        assert found["settings"]["db_path"] == _masked(url, password)


def test_stats_shows_the_url_without_its_password_not_a_file_path(
    url: str, password: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", url, "stats", "--json"]) == 0
    out, err = capsys.readouterr()
    assert password not in out + err
    assert json.loads(out)["path"] == _masked(url, password)
    assert main(["--db", url, "stats"]) == 0
    out, err = capsys.readouterr()
    assert password not in out + err
    assert f"database: {_masked(url, password)}\n" in out
    assert str(Path.cwd()) not in out  # no longer "database: /cwd/postgresql:/pmm:***@..."


def test_verify_hides_the_password(
    url: str, password: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", url, "verify", "--json"]) == 0
    out, err = capsys.readouterr()
    assert password not in out + err
    assert json.loads(out)["path"] == _masked(url, password)


@pytest.mark.parametrize("where", ["userinfo", "query"])
def test_a_failed_connection_names_the_url_without_its_password(password: str, where: str) -> None:
    pytest.importorskip("psycopg")
    from pmm.storage.postgres import PostgresEventStore

    if where == "userinfo":
        url = f"postgresql://pmm:{password}@127.0.0.1:1/nowhere?connect_timeout=1"
        shown = "pmm:***@127.0.0.1:1"
    else:  # libpq takes the password as a parameter too
        url = f"postgresql://pmm@127.0.0.1:1/nowhere?connect_timeout=1&password={password}"
        shown = "password=***"
    with pytest.raises(DatabaseError) as caught:
        PostgresEventStore(url, timeout=2.0)
    assert password not in str(caught.value)
    assert shown in str(caught.value)


def test_the_chat_banner_hides_the_password(
    url: str, password: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from pmm.chat.repl import main as chat

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # Ctrl-D at once
    chat(["--db", url])
    out, err = capsys.readouterr()
    assert password not in out + err
    assert f"memory in {_masked(url, password)}" in out


def test_the_settings_repr_masks_the_password() -> None:
    from pmm.settings import Settings

    settings = Settings.load(env={}, db_path="postgresql://pmm:s3cret-pw@127.0.0.1:5432/pmm")
    assert "s3cret-pw" not in repr(settings) and "postgresql://pmm:***@" in repr(settings)
    assert "max_tokens=" in repr(settings)
