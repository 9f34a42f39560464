"""The published log suite (:mod:`pmm.testing.conformance.log`) on SQLite, PostgreSQL and
PostgreSQL with pgvector, and what only PMM's own two backends can do: copy a log from
one to the other (``import_events``, ``copy_log``, ``pmm migrate-to``)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from pg_helpers import raw_execute

from pmm.errors import IntegrityError, InvalidInputError
from pmm.storage import is_postgres_url, open_store
from pmm.storage.base import EventLog
from pmm.testing.conformance.log import *  # noqa: F403
from pmm.testing.conformance.log import _chat


def test_a_log_copies_verbatim_to_the_other_backend(
    log: EventLog, log_target: str, tmp_path: Path, pg_url: str
) -> None:
    _chat(log)
    log.set_digests([(1, "Alice moved to Lisbon.", ["lisbon"], "heuristic")])
    other_target = str(tmp_path / "copy.db") if is_postgres_url(log_target) else pg_url
    with open_store(other_target) as other:
        report = other.import_events(log.iter_events(), keys=log.chain_keys())
        assert report.ok and report.rows == 4 and report.head == log.get(4).hash
        assert report.root == log.verify().root  # the chains' secrets and heads came along
        assert [e.to_dict() for e in other.iter_events()] == [
            e.to_dict() for e in log.iter_events()
        ]
        other.append("prompt", "and it goes on", session_id="alice", role="user")
        assert other.verify().ok
        with pytest.raises(InvalidInputError, match="new, empty database"):
            other.import_events(log.iter_events(), keys=log.chain_keys())  # not one user's
        assert other.count() == 5


def test_a_broken_chain_is_not_imported(
    log: EventLog, log_target: str, tmp_path: Path, pg_url: str
) -> None:
    _chat(log)
    raw_execute(log_target, "UPDATE events SET kind = 'event' WHERE id = 2")
    other_target = str(tmp_path / "copy.db") if is_postgres_url(log_target) else pg_url
    with open_store(other_target) as other:
        with pytest.raises(IntegrityError, match="does not verify at event 2"):
            other.import_events(log.iter_events(), keys=log.chain_keys())
        assert other.count() == 0


def test_copy_log_there_and_back_keeps_every_hash_and_vector(tmp_path: Path, pg_url: str) -> None:
    from pmm.storage.copy import copy_log

    source = str(tmp_path / "source.db")
    with open_store(source) as log:
        _chat(log)
        log.put_embeddings("m", 1, [(1, struct.pack("f", 0.5))])
        original = [e.to_dict() for e in log.iter_events()]
    report = copy_log(source, pg_url)
    assert report.ok and report.rows == 4
    back = str(tmp_path / "back.db")
    assert copy_log(pg_url, back).ok
    with open_store(back) as log:
        assert [e.to_dict() for e in log.iter_events()] == original
        assert log.embeddings("m") == [(1, struct.pack("f", 0.5))]


def test_copy_log_refuses_a_tampered_source(tmp_path: Path, pg_url: str) -> None:
    from pmm.storage.copy import copy_log

    source = str(tmp_path / "source.db")
    with open_store(source) as log:
        _chat(log)
    raw_execute(source, "UPDATE events SET content = 'edited' WHERE id = 2")
    with pytest.raises(IntegrityError, match="does not verify at event 2"):
        copy_log(source, pg_url)
    with open_store(pg_url) as target:
        assert target.count() == 0


def test_pmm_migrate_to_and_back_on_the_command_line(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from pmm.cli import main

    source = str(tmp_path / "source.db")
    with open_store(source) as log:
        _chat(log)
        head = log.get(4).hash
    assert main(["migrate-to", pg_url, "--db", source, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verify"]["ok"] and out["verify"]["head"] == head
    assert main(["verify", "--db", pg_url]) == 0
    assert head in capsys.readouterr().out
    back = str(tmp_path / "back.db")
    assert main(["migrate-to", back, "--from", pg_url]) == 0
    assert "copied 4 events" in capsys.readouterr().out
    assert main(["migrate-to", back, "--from", pg_url]) == 2  # not empty: an input error
    assert main(["init", "--db", pg_url]) == 2  # a usage error: PostgreSQL needs no init
    assert "set up when PMM first connects" in capsys.readouterr().err
