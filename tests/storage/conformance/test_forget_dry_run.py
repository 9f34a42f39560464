"""forget(dry_run=True): the published suite (:mod:`pmm.testing.conformance.forget_dry_run`)
on PMM's backends, and `pmm forget --dry-run` on a PostgreSQL URL."""

from __future__ import annotations

import json

import pytest

from pmm.cli import main
from pmm.testing.conformance.forget_dry_run import *  # noqa: F403


def test_cli_dry_run_on_postgres(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from pmm.storage import open_store

    with open_store(pg_url) as store:
        store.append("prompt", "the quokkaberry jar", session_id="ana", role="user")
        head = store.head()
    assert main(["forget", "--match", "quokkaberry", "--dry-run", "--json", "--db", pg_url]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["erased"] == [1] and data["events"][0]["text"] == "the quokkaberry jar"
    with open_store(pg_url) as store:
        assert store.head() == head and store.get(1).content == "the quokkaberry jar"
