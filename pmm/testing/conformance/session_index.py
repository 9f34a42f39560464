"""The in-memory session ranker on every backend: it reads only through the EventLog
protocol, follows appends and redactions, and agrees with the backend's own
session-scoped search on which turns hold the words."""

from __future__ import annotations

from pmm.recall.session_index import SessionRanker
from pmm.storage.base import EventLog
from pmm.testing.fixtures import *  # noqa: F403


def test_session_ranker_follows_the_log_on_every_backend(log: EventLog) -> None:
    ranker = SessionRanker(log, radius=1)

    def found(query: str, key: str = "window") -> set[int]:
        return {i for i, _ in ranker.search(query, session_id="s", key=key, limit=20)}

    a = log.append("prompt", "I signed up for a class!", session_id="s", role="user").id
    b = log.append("response", "Pottery? Nice", session_id="s", role="assistant").id
    log.append("prompt", "pottery elsewhere", session_id="t", role="user")
    assert found("pottery") == {a, b}
    assert found("pottery", key="turn") == {b}
    log.sync_search_index()
    backend = {
        i
        for i, _ in log.search_text(
            "pottery", session_id="s", key="turn", kinds=("prompt", "response")
        )
    }
    assert backend == found("pottery", key="turn")
    log.redact(b, reason="test")
    assert found("pottery") == set()
    c = log.append("prompt", "pottery again, promise", session_id="s", role="user").id
    assert found("pottery") == {c}


def test_user_ranker_follows_the_log_on_every_backend(log: EventLog) -> None:
    from pmm.recall.user_index import UserRanker
    from pmm.records import NewEvent

    ranker = UserRanker(log, radius=1)

    def found(query: str, user: str = "ana", key: str = "window") -> set[int]:
        return {i for i, _ in ranker.search(query, user_id=user, key=key, limit=20)}

    def turn(text: str, session: str, user: str | None) -> int:
        return log.append_many([NewEvent("prompt", text, session, "user", None, None, user)])[0].id

    a = turn("I signed up for a pottery class", "ana/1", "ana")
    b = turn("pottery wheel booked", "ana/2", "ana")
    turn("pottery of bob", "bob/1", "bob")
    turn("pottery of nobody", "x", None)
    assert found("pottery") == found("pottery", key="turn") == {a, b}
    assert found("pottery", user="bob") != found("pottery")
    log.sync_search_index()
    backend = {
        i
        for i, _ in log.search_text(
            "pottery", user_id="ana", key="turn", kinds=("prompt", "response")
        )
    }
    assert backend == found("pottery", key="turn")
    log.redact(b, reason="test")
    assert found("pottery") == {a}
    c = turn("pottery again, promise", "ana/3", "ana")
    assert found("pottery") == {a, c}
