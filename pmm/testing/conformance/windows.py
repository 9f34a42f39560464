"""Window and date keys on every backend: each turn is also found through its neighbouring
turns of the same session (never across sessions or clear markers) and through its
conversation date, and the keys follow appends, redactions and a radius change."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pmm.errors import InvalidInputError
from pmm.records import NewEvent
from pmm.storage.base import EventLog
from pmm.testing.backend import Backend
from pmm.testing.fixtures import *  # noqa: F403


def window_hits(store: EventLog, query: str, **kw: object) -> list[int]:
    """The ids whose window key matches, in id order."""
    return sorted(i for i, _ in store.search_text(query, key="window", limit=50, **kw))  # type: ignore[arg-type]


def turn(store: EventLog, text: str, session: str = "s1", role: str = "user", **kw: object) -> int:
    kind = "prompt" if role == "user" else "response"
    return store.append(kind, text, session_id=session, role=role, **kw).id  # type: ignore[arg-type]


def test_window_holds_neighbours_and_the_turn_stays_the_hit(log: EventLog) -> None:
    # A Wednesday: the date key holds the weekday, so "Tuesday" must not be the turns' day.
    wednesday = "2024-05-01T10:00:00Z"
    a = turn(log, "We adopted a rabbit called Nugget", ts=wednesday)
    b = turn(log, "That sounds great! When?", role="assistant", ts=wednesday)
    c = turn(log, "Next Tuesday, after work", ts=wednesday)
    far = [turn(log, f"filler line number {n}", ts=wednesday) for n in range(4)]
    assert window_hits(log, "Nugget") == [a, b, c]  # c is two turns after a
    assert far[0] not in window_hits(log, "Nugget")  # three turns away
    assert set(window_hits(log, "Tuesday")) == {a, b, c, far[0], far[1]}
    assert [i for i, _ in log.search_text("Nugget", key="turn")] == [a]
    # The turn itself ranks above the neighbours that only hold it in their windows.
    assert log.search_text("rabbit Nugget adopted", key="window")[0][0] == a


def test_window_never_crosses_sessions_or_clear_markers(log: EventLog) -> None:
    a = turn(log, "my sister lives in Porto", session="s1")
    other = turn(log, "zebra crossing", session="s2")
    b = turn(log, "lovely city", session="s1", role="assistant")
    log.append("clear", "history cleared", session_id="s1", role="system")
    after = turn(log, "quantum physics homework", session="s1")
    nosession = log.append("prompt", "orphan turn about Porto").id
    assert window_hits(log, "Porto") == [a, b, nosession]
    assert window_hits(log, "zebra") == [other]
    assert window_hits(log, "quantum") == [after]
    assert window_hits(log, "Porto", session_id="s2") == []
    assert window_hits(log, "Porto", session_id="s1") == [a, b]
    assert window_hits(log, "Porto", kinds=["response"]) == [b]


def test_window_grows_as_turns_are_appended(log: EventLog) -> None:
    a = turn(log, "I booked the flights")
    assert window_hits(log, "Lisbon") == []
    b = turn(log, "Where to?", role="assistant")
    assert window_hits(log, "Lisbon") == []
    c = turn(log, "Lisbon, in March")  # two turns after a: a's window changes
    assert window_hits(log, "Lisbon") == [a, b, c]
    ids = [
        e.id
        for e in log.append_many([NewEvent("prompt", f"later {n}", "s1", "user") for n in range(3)])
    ]
    assert window_hits(log, "Lisbon") == [a, b, c, ids[0], ids[1]]


def test_redacted_text_leaves_every_window(log: EventLog) -> None:
    ids = [turn(log, t) for t in ("hello there", "my password is swordfish", "ok noted", "bye")]
    assert window_hits(log, "swordfish") == ids
    log.redact(ids[1], reason="user asked")
    assert window_hits(log, "swordfish") == []
    assert window_hits(log, "noted") == [ids[0], ids[2], ids[3]]  # neighbours still indexed
    assert log.verify().ok


def test_dates_are_searchable_and_weighted(log: EventLog) -> None:
    when = datetime(2024, 1, 14, 18, 30, tzinfo=UTC)
    a = log.append("prompt", "we went skating", session_id="s1", role="user", ts=when)
    b = log.append("prompt", "picnic", session_id="s2", role="user", ts="2023-06-03T09:00:00+02:00")
    assert b.ts == "2023-06-03T07:00:00.000000Z"
    # Same words, one in its text and one in its date: the date weight decides which wins.
    c = log.append(
        "prompt", "a sunday walk", session_id="s3", role="user", ts="2024-05-01T10:00:00Z"
    )
    assert log.verify().ok
    assert window_hits(log, "January") == [a.id]
    assert window_hits(log, "2023 June") == [b.id]
    assert log.search_text("Sunday skating", key="window")[0][0] == a.id
    low = [i for i, _ in log.search_text("Sunday", key="window", date_weight=0.1)]
    high = [i for i, _ in log.search_text("Sunday", key="window", date_weight=3.0)]
    assert set(low) == set(high) == {a.id, c.id}
    assert low[0] == c.id and high[0] == a.id
    assert window_hits(log, "Sunday", date_weight=0.0) == [a.id, c.id]  # still matched


def test_window_radius_change_rebuilds_the_keys(pmm_backend: Backend, log_target: str) -> None:
    with pmm_backend.connect(log_target, window_radius=0) as s:
        ids = [turn(s, t) for t in ("alpha", "beta", "gamma")]
        s.append("clear", "history cleared", session_id="s1", role="system")
        late = turn(s, "delta")
        assert window_hits(s, "beta") == [ids[1]]
    with pmm_backend.connect(log_target, window_radius=1) as s:
        assert window_hits(s, "beta") == ids
        assert window_hits(s, "delta") == [late]
    with pytest.raises(InvalidInputError, match="window_radius"):
        pmm_backend.connect(log_target, window_radius=-1)


def test_fts_syntax_in_window_search_is_plain_words(log: EventLog) -> None:
    a = turn(log, "rent went up, says the landlord")
    for query in (
        '"rent',
        "rent AND",
        "NEAR(rent",
        "landlord*",
        "-rent",
        "body:rent",
        "(rent",
        "rent & !x | y:*",
    ):
        assert a in window_hits(log, query)
    with pytest.raises(InvalidInputError, match="key"):
        log.search_text("rent", key="nope")


def test_turns_without_a_session_have_windows_that_follow_redaction(log: EventLog) -> None:
    ids = [log.append("prompt", t).id for t in ("pelicans at dawn", "secret walrus", "tea")]
    assert window_hits(log, "walrus") == ids and window_hits(log, "pelicans") == ids
    log.redact(ids[1], reason="asked")
    assert window_hits(log, "walrus") == [] and window_hits(log, "pelicans") == [ids[0], ids[2]]
