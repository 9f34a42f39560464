"""The rebased import's pure part (pmm.events.rebase): which meta fields name events, how
they are renumbered, and what is refused."""

from __future__ import annotations

import pytest

from pmm.dream.consolidation import AUDIT_KIND, SUMMARY_KIND, summary_key
from pmm.dream.contradictions import MARKER_KIND
from pmm.errors import InvalidInputError
from pmm.events.chain import check_new_event, seal
from pmm.events.hashing import utc_now
from pmm.events.rebase import (
    ID_REFERENCES,
    IMPORTED_KIND,
    rebased,
    rebuilt_edges,
    remap_meta,
    single_user,
    verify_export,
)
from pmm.records import Event, NewEvent
from pmm.retention.erasure import REDACTION_KIND, redaction_entries


def _event(id_: int, kind: str, meta: dict[str, object], session: str | None = "s") -> Event:
    return Event(id_, "2026-01-01T00:00:00.000000Z", kind, session, "system", "x", "0" * 64,
                 meta, None, "0" * 64, 3, user_id="ann")  # fmt: skip


def test_the_kinds_that_name_events_are_the_ones_pmm_writes() -> None:
    assert {REDACTION_KIND, SUMMARY_KIND, AUDIT_KIND, MARKER_KIND} == set(ID_REFERENCES)
    [one, many] = redaction_entries({"s": [4], "t": [5, 6]}, "why")
    assert set(one.meta or {}) - {"reason"} <= set(ID_REFERENCES[REDACTION_KIND])
    assert set(many.meta or {}) - {"reason"} <= set(ID_REFERENCES[REDACTION_KIND])


def test_references_are_renumbered_by_kind_only() -> None:
    ids = {4: 104, 5: 105, 6: 106, 7: 107}
    assert remap_meta(_event(8, REDACTION_KIND, {"target": 4, "reason": "r"}), ids) == {
        "target": 104,
        "reason": "r",
    }
    assert remap_meta(_event(8, REDACTION_KIND, {"targets": [5, 6]}), ids) == {
        "targets": [105, 106]
    }
    summary = {"key": summary_key([4, 5, 6]), "covers_from": 4, "covers_upto": 6,
               "turns": 3, "supersedes": None}  # fmt: skip
    new = remap_meta(_event(8, SUMMARY_KIND, summary), ids)
    assert new == {**summary, "key": summary_key([104, 105, 106]), "covers_from": 104,
                   "covers_upto": 106}  # fmt: skip
    # a key of an earlier version, "session:first-last:count": the new chain drops the session
    old = remap_meta(_event(8, SUMMARY_KIND, {**summary, "key": "s:4-6:3"}), ids)
    assert old["key"] == summary_key([104, 105, 106])
    audit = {"summary_id": 7, "covered_ids": [4, 5], "supersedes": 6, "method": "h"}
    assert remap_meta(_event(9, AUDIT_KIND, audit), ids) == {
        "summary_id": 107, "covered_ids": [104, 105], "supersedes": 106, "method": "h"
    }  # fmt: skip
    # a turn's meta is the caller's: the same names are left alone there
    assert remap_meta(_event(9, "prompt", {"target": 4, "older": 5}), ids) == {
        "target": 4,
        "older": 5,
    }


def test_a_reference_the_file_does_not_hold_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="names event 3, which the file does not hold"):
        remap_meta(_event(9, MARKER_KIND, {"older": 3, "newer": 4}), {4: 10})
    with pytest.raises(InvalidInputError, match="should be a list of ids"):
        remap_meta(_event(9, REDACTION_KIND, {"targets": 4}), {4: 10})
    with pytest.raises(InvalidInputError, match="names event True"):
        remap_meta(_event(9, REDACTION_KIND, {"target": True}), {1: 10})


def test_one_user_alone() -> None:
    with pytest.raises(InvalidInputError, match="no events"):
        single_user([])
    both = [
        _event(1, "prompt", {}),
        Event(**{**_event(2, "prompt", {}).to_dict(), "user_id": "bo"}),
    ]
    with pytest.raises(InvalidInputError, match="2 users"):
        single_user(both)
    assert single_user(both[:1]) == "ann"


def test_legacy_rows_become_current_rows_of_a_new_chain() -> None:
    checked = [check_new_event(NewEvent("prompt", f"turn {n}", "s", "user", None, None, "ann"),
                               1 << 20) for n in range(3)]  # fmt: skip
    legacy = seal(checked, last_id=0, prev_hash=None, ts=utc_now())
    assert {e.hash_version for e in legacy} == {2}
    report = verify_export(legacy, [])
    planned = rebased(legacy, [50, 51, 52, 53], report)
    assert [c.entry.kind for c in planned] == ["prompt"] * 3 + [IMPORTED_KIND]
    assert planned[-1].entry.meta == {
        "imported": {"head": legacy[-1].hash, "head_id": 3, "events": 3}
    }
    assert [c.entry.ts for c in planned[:3]] == [e.ts for e in legacy]
    with pytest.raises(ValueError, match="4 ids needed"):
        rebased(legacy, [50, 51, 52], report)


def test_edges_come_back_from_the_renumbered_meta() -> None:
    events = [
        _event(10, AUDIT_KIND, {"summary_id": 9, "covered_ids": [3, 4], "supersedes": 2}),
        _event(11, MARKER_KIND, {"older": 3, "newer": 4, "method": "slot"}),
        _event(12, MARKER_KIND, {"older": 5, "newer": 6, "method": "llm"}),
    ]
    assert rebuilt_edges(events) == [
        (9, 3, "SUMMARIZES"), (9, 4, "SUMMARIZES"), (9, 2, "SUPERSEDES"),
        (4, 3, "SUPERSEDES_SLOT"), (6, 5, "SUPERSEDES"),
    ]  # fmt: skip
