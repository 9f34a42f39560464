"""`pmm init` on a PostgreSQL URL is a usage error (exit 2, as the help defines it), and
`pmm export --help` says that the file starts with chain secrets (issue 36)."""

from __future__ import annotations

import pytest

from pmm.cli import main


def test_init_on_a_url_exits_2_and_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    # port 1: nothing listens there; the command must refuse before connecting
    assert main(["init", "--db", "postgresql://pmm@127.0.0.1:1/pmm"]) == 2
    err = capsys.readouterr().err
    assert "PostgreSQL" in err and "first connects" in err and "Traceback" not in err


def test_init_json_reports_the_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--json", "--db", "postgresql://pmm@127.0.0.1:1/pmm"]) == 2


def test_export_help_names_the_chain_secret(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "chain_key" in text and "secret" in text and "--user" in text
