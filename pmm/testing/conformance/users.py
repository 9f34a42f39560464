"""Users on either backend (issue 20): one user per session under the append lock, the
chained assignment of an old session, and verify catching a row moved to another user."""

from __future__ import annotations

import pytest

from pmm import Mind
from pmm.errors import InvalidInputError
from pmm.testing.backend import SqlRunner
from pmm.testing.fixtures import *  # noqa: F403


def _move_row(sql: SqlRunner, target: str, event_id: int, user: str) -> None:
    """Tamper: give one row another user, behind PMM's back."""
    sql(target, "UPDATE events SET user_id = ? WHERE id = ?", (user, event_id))


def test_sessions_users_and_assignment_alike(log_target: str, raw_sql: SqlRunner) -> None:
    with Mind(log_target) as mind:
        mind.remember_turn("I live in Lisbon", "ok", session_id="a1", user_id="alice")
        mind.remember_turn("I live in Oslo", "ok", session_id="b1", user_id="bob")
        mind.remember_turn("an old chat about Porto", "ok", session_id="old")
        with pytest.raises(InvalidInputError, match="belongs to another user"):
            mind.remember("x", role="user", session_id="a1", user_id="bob")
        with pytest.raises(InvalidInputError, match="written without a user"):
            mind.remember("x", role="user", session_id="old", user_id="bob")
        marker = mind.clear("a1")
        assert marker.user_id == "alice" and marker.hash_version == 3
        event = mind.assign_user("old", "bob")
        assert (event.kind, event.user_id) == ("user_assigned", "bob")
        with pytest.raises(InvalidInputError, match="already belongs"):
            mind.assign_user("old", "bob")
        for key in ("turn", "window"):
            assert mind.store.search_text("Porto", key=key, user_id="bob"), key
            assert not mind.store.search_text("Porto", key=key, user_id="alice"), key
            assert not mind.store.search_text("Lisbon", key=key, user_id="bob"), key
        assert {e.user_id for e in mind.store.events(session_id="old")} == {"bob"}
        assert mind.store.count(user_id="bob") == 5
        assert mind.verify().ok
    _move_row(raw_sql, log_target, 1, "bob")
    with Mind(log_target) as mind:
        report = mind.verify()
        assert not report.ok and report.first_bad_id == 1


def test_an_assigned_row_moved_again_does_not_verify(log_target: str, raw_sql: SqlRunner) -> None:
    with Mind(log_target) as mind:
        mind.remember_turn("an old chat", "ok", session_id="old")
        mind.assign_user("old", "bob")
        assert mind.verify().ok
    _move_row(raw_sql, log_target, 2, "carol")
    with Mind(log_target) as mind:
        report = mind.verify()
        assert not report.ok and report.first_bad_id == 2 and "user" in str(report.reason)
