"""Compaction (pmm.retention.compaction, Mind.compact, `pmm compact`): old digested turns lose their
raw text, keep summary, keywords and vectors; the chain verifies; the file shrinks."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pmm import Mind
from pmm.cli import main
from pmm.errors import InvalidInputError
from pmm.retention.compaction import check_compaction, id_ranges, parse_age
from pmm.storage.sqlite.compaction import compact, count_compacted

LONG = (
    "Yesterday I finally went hiking up the ridge behind the village with my sister, "
    "we took the steep northern trail, stopped at the old stone hut for tea and biscuits, "
    "saw two eagles circling above the valley, and came back down just before the storm. "
) * 3
LATER = datetime.now(UTC) + timedelta(days=40)


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def mind(tmp_path: Path) -> Mind:
    m = Mind(
        tmp_path / "pmm.db",
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        raw_turns=2,
    )
    for i in range(30):
        m.remember_turn(
            f"{i}: {LONG} item{i}", f"reply {i}: {LONG}", session_id="a" if i % 2 else "b"
        )
    m.dream()
    return m


def test_id_ranges() -> None:
    assert id_ranges([7, 1, 3, 2]) == [[1, 3], [7, 7]] and id_ranges([]) == []


def test_parse_age() -> None:
    assert parse_age("30d") == timedelta(days=30) and parse_age(" 2w ") == timedelta(weeks=2)
    for bad in ("30", "d", "-1d", "3x", ""):
        with pytest.raises(InvalidInputError):
            parse_age(bad)


def test_compaction_drops_only_old_digested_text(mind: Mind) -> None:
    pending = mind.remember("an undigested turn about eagles " * 10, role="user", session_id="a")
    rows = mind.store.count()
    assert compact(mind.store, older_than="30d").compacted == []  # nothing is that old yet
    plan = compact(mind.store, older_than="30d", dry_run=True, now=LATER)
    assert len(plan.compacted) == 60 and plan.marker is None and count_compacted(mind.store) == 0
    assert mind.store.count() == rows

    report = compact(mind.store, older_than="30d", now=LATER)
    assert report.compacted == plan.compacted and pending.id not in report.compacted
    assert report.bytes_after < 0.6 * report.bytes_before
    assert count_compacted(mind.store) == 60
    assert mind.store.get(pending.id).content is not None
    event = mind.store.get(report.compacted[0])
    assert event.content is None and event.summary and event.keywords
    marker = report.marker
    assert marker is not None and marker.kind == "compaction"
    assert marker.meta["count"] == 60 and marker.meta["ids"][0][0] == event.id
    assert check_compaction(mind.store, marker)
    with mind.store._write() as conn:  # a kept summary edited afterwards is detected
        conn.execute("UPDATE events SET summary = 'forged' WHERE id = ?", (event.id,))
    assert not check_compaction(mind.store, marker)
    with mind.store._write() as conn:
        conn.execute("UPDATE events SET summary = ? WHERE id = ?", (event.summary, event.id))
    assert check_compaction(mind.store, marker)
    verify = mind.verify()
    assert verify.ok and verify.rows == rows + 1
    # The context shows compacted turns by their summary; keyword recall finds them.
    history = mind.context("a").history
    compacted = [t for t in history if t.event_id in report.compacted]
    assert compacted and all(
        t.text and t.text in mind.store.get(t.event_id).summary for t in compacted
    )
    hits = mind.recall("ridge eagles", k=5, session_id="a")
    assert hits and all(h.event.session_id == "a" for h in hits)
    # Running it again finds nothing more to drop and writes nothing.
    again = compact(mind.store, older_than="30d", now=LATER)
    assert again.compacted == [] and again.marker is None and mind.store.count() == rows + 1
    mind.close()


def test_compaction_of_one_session(mind: Mind) -> None:
    report = mind.compact(older_than="0s", session_id="a")
    assert report.compacted and all(mind.store.get(i).session_id == "a" for i in report.compacted)
    assert all(e.content is not None for e in mind.store.events(session_id="b"))
    assert mind.verify().ok
    mind.close()


def test_cli_compact(mind: Mind, capsys: pytest.CaptureFixture[str]) -> None:
    db = mind.settings.db_path
    mind.close()
    assert main(["compact", "--older-than", "0s", "--dry-run", "--db", db]) == 0
    assert "would drop the raw text of 60 digested turns" in capsys.readouterr().out
    assert main(["compact", "--older-than", "0s", "--json", "--db", db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["compacted"]) == 60 and data["compacted_rows_in_log"] == 60
    assert data["verify"]["ok"] and data["bytes_after"] < data["bytes_before"]
    assert main(["compact", "--older-than", "soon", "--db", db]) == 2
    assert main(["verify", "--db", db]) == 0
