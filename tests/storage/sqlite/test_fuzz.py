"""Fuzzed inputs to forget, compact and parse_age: a clear PMMError or a result, never an
internal traceback, and the chain always verifies afterwards."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmm.errors import PMMError
from pmm.retention.compaction import parse_age
from pmm.storage.sqlite import EventStore
from pmm.storage.sqlite.compaction import compact
from pmm.storage.sqlite.erasure import forget

ANYTHING = st.one_of(
    st.none(),
    st.text(),
    st.binary(max_size=20),
    st.integers(),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=5),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def _store(folder: str) -> EventStore:
    store = EventStore(Path(folder) / "pmm.db")
    for i, text in enumerate(['a \u00e9 \U0001f600 quote " star *', "SELECT 1; --", "x" * 500]):
        store.append("prompt", text, session_id=f"s{i % 2}", role="user")
    store.set_digests([(1, "summary one", ["one"], "test")])
    store.sync_search_index()
    return store


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ids=ANYTHING, session=ANYTHING, match=ANYTHING, reason=ANYTHING)
def test_forget_takes_any_input_without_a_traceback(
    ids: Any, session: Any, match: Any, reason: Any
) -> None:
    with tempfile.TemporaryDirectory() as folder, _store(folder) as store:
        try:
            report = forget(store, event_ids=ids, session_id=session, match=match, reason=reason)
        except PMMError:
            assert store.count() == 3  # nothing was written
        else:
            assert report.erased and store.count() == 3 + len(report.markers)
        assert store.verify().ok


@settings(max_examples=60, deadline=None)
@given(age=ANYTHING, session=ANYTHING)
def test_compact_takes_any_input_without_a_traceback(age: Any, session: Any) -> None:
    with tempfile.TemporaryDirectory() as folder, _store(folder) as store:
        try:
            compact(store, older_than=age, session_id=session)
        except PMMError:
            assert store.count() == 3
        assert store.verify().ok


@given(st.text(max_size=12))
def test_parse_age_of_any_text(text: str) -> None:
    try:
        age = parse_age(text)
    except PMMError as exc:
        assert "an age is" in str(exc)
    else:
        assert age.total_seconds() >= 0 and text.strip()[-1] in "smhdw"
