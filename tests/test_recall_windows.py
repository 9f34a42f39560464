"""Window and date keys: each turn is also found through its neighbouring turns of the same
session (never across sessions or clear markers) and through its conversation date."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from pmm.errors import InvalidInputError
from pmm.records import NewEvent
from pmm.storage.sqlite import schema
from pmm.store import EventStore
from pmm.window_keys import WindowRow, date_words, normalize_ts, reached_turns, window_texts


def window_hits(store: EventStore, query: str, **kw: object) -> list[int]:
    """The ids whose window key matches, in id order."""
    return sorted(i for i, _ in store.search_text(query, key="window", limit=50, **kw))  # type: ignore[arg-type]


def turn(
    store: EventStore, text: str, session: str = "s1", role: str = "user", **kw: object
) -> int:
    kind = "prompt" if role == "user" else "response"
    return store.append(kind, text, session_id=session, role=role, **kw).id  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> EventStore:
    with EventStore(tmp_path / "pmm.db", window_radius=2) as s:
        yield s  # type: ignore[misc]


def test_window_never_crosses_sessions_or_clear_markers(store: EventStore) -> None:
    a = turn(store, "my sister lives in Porto", session="s1")
    other = turn(store, "zebra crossing", session="s2")
    b = turn(store, "lovely city", session="s1", role="assistant")
    store.append("clear", "history cleared", session_id="s1", role="system")
    after = turn(store, "quantum physics homework", session="s1")
    assert window_hits(store, "Porto") == [a, b]
    assert window_hits(store, "zebra") == [other]
    assert window_hits(store, "quantum") == [after]
    assert window_hits(store, "Porto", session_id="s2") == []


def test_window_grows_as_turns_are_appended(store: EventStore) -> None:
    a = turn(store, "I booked the flights")
    assert window_hits(store, "Lisbon") == []
    b = turn(store, "Where to?", role="assistant")
    assert window_hits(store, "Lisbon") == []
    c = turn(store, "Lisbon, in March")  # two turns after a: a's window changes
    assert window_hits(store, "Lisbon") == [a, b, c]
    ids = [
        store.append_many([NewEvent("prompt", f"later {n}", "s1", "user")])[0].id for n in range(3)
    ]
    assert window_hits(store, "Lisbon") == [a, b, c, ids[0], ids[1]]


def test_dates_from_ts_are_hashed_and_searchable(store: EventStore) -> None:
    when = datetime(2024, 1, 14, 18, 30, tzinfo=UTC)
    a = store.append("prompt", "we went skating", session_id="s1", role="user", ts=when)
    assert a.ts == "2024-01-14T18:30:00.000000Z" == store.get(a.id).ts
    b = store.append(
        "prompt", "picnic", session_id="s2", role="user", ts="2023-06-03T09:00:00+02:00"
    )
    assert b.ts == "2023-06-03T07:00:00.000000Z"
    naive = store.append("prompt", "x", session_id="s3", role="user", ts=datetime(2022, 5, 1))
    assert naive.ts == "2022-05-01T00:00:00.000000Z"
    assert store.verify().ok
    assert window_hits(store, "January") == [a.id]
    assert window_hits(store, "2023 June") == [b.id]
    assert store.search_text("Sunday skating", key="window")[0][0] == a.id
    with pytest.raises(InvalidInputError, match="ISO-8601"):
        store.append("prompt", "y", session_id="s1", role="user", ts="last tuesday")
    with pytest.raises(InvalidInputError, match="datetime"):
        store.append("prompt", "y", session_id="s1", role="user", ts=12345)  # type: ignore[arg-type]
    assert store.count() == 3


def test_window_radius_change_rebuilds_the_keys(tmp_path: Path) -> None:
    path = tmp_path / "pmm.db"
    with EventStore(path, window_radius=0) as s:
        ids = [turn(s, t) for t in ("alpha", "beta", "gamma")]
        assert window_hits(s, "beta") == [ids[1]]
    with EventStore(path, window_radius=1) as s:
        assert window_hits(s, "beta") == ids
    with pytest.raises(InvalidInputError, match="window_radius"):
        EventStore(path, window_radius=-1)


def test_fts_syntax_in_window_search_is_plain_words(store: EventStore) -> None:
    a = turn(store, "rent went up, says the landlord")
    for query in ('"rent', "rent AND", "NEAR(rent", "landlord*", "-rent", "body:rent", "(rent"):
        assert a in window_hits(store, query)
    with pytest.raises(InvalidInputError, match="key"):
        store.search_text("rent", key="nope")


def test_an_existing_file_gets_window_keys_for_its_old_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    every = schema.load_migrations()
    monkeypatch.setattr(schema, "load_migrations", lambda: [m for m in every if m.version <= 5])
    with EventStore(path) as old:
        ids = [turn(old, t) for t in ("I planted tomatoes", "how are they doing?", "great")]
    with sqlite3.connect(path) as conn:
        assert not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'events_window_fts'"
        ).fetchone()
    monkeypatch.undo()
    with EventStore(path) as new:
        # meta-key indexes, window keys, binary digests, compression, contentless
        # windows, lean full-text indexes
        applied = [m.version for m in new.applied_migrations]
        assert applied[:7] == [6, 7, 8, 9, 10, 11, 12]  # and any later ones
        assert applied == list(range(6, 6 + len(applied)))
        assert window_hits(new, "tomatoes") == ids
        assert new.verify().ok


def test_pure_window_helpers() -> None:
    rows = [WindowRow(1, "prompt", "a"), WindowRow(2, "response", None),
            WindowRow(3, "event", "tool"), WindowRow(4, "response", "b")]  # fmt: skip
    assert window_texts(rows, 1, {1, 2, 4}) == {1: "a", 4: "b"}  # erased text is left out
    assert date_words("2024-02-29T23:59:00Z") == "2024 February 29 Thursday"
    tz = timezone(timedelta(hours=-5))
    assert normalize_ts(datetime(2024, 1, 1, 22, tzinfo=tz)) == "2024-01-02T03:00:00.000000Z"


def test_reached_turns_stay_within_the_radius_and_the_clear_marker() -> None:
    kinds = ["prompt", "response", "event", "prompt", "response", "prompt", "clear", "prompt"]
    rows = [WindowRow(i, kind, f"t{i}") for i, kind in enumerate(kinds, start=1)]
    assert reached_turns(rows, 1, {4}) == {2, 4, 5}  # the tool event 3 is no turn
    assert reached_turns(rows, 2, {6}) == {4, 5, 6}  # the clear marker 7 ends the window
    assert reached_turns(rows, 2, {8}) == {8}
    assert reached_turns(rows, 0, {1, 8}) == {1, 8}
    assert reached_turns(rows, 2, {3, 7}) == set()  # a marker or a tool event reaches none
