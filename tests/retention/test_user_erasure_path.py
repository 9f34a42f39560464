"""Every route that erases (part of) a user goes through one resolution
(:func:`pmm.context.users.user_erasure`), which keeps to her events whichever selector
comes with the user (the bytes left after ``pmm forget --user``: tests/storage/
test_erase_user_bytes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmm import Mind
from pmm.errors import InvalidInputError


def _fill(mind: Mind) -> None:
    for thread in ("a1", "a2"):
        mind.remember_turn(f"alice in {thread}", "ok", session_id=thread, user_id="alice")
    mind.remember_turn("bob's plans", "ok", session_id="b1", user_id="bob")


def test_session_ids_with_a_user_keep_to_her_sessions(tmp_path: Path) -> None:
    with Mind(tmp_path / "pmm.db") as mind:
        _fill(mind)
        with pytest.raises(InvalidInputError, match="another user"):
            mind.forget(user_id="alice", session_ids=["b1"], reason="not hers")
        assert mind.store.count(user_id="bob") == 2
        assert all(e.content is not None for e in mind.store.events())  # nothing erased
        report = mind.forget(user_id="alice", session_ids=["a1"], reason="one thread")
        assert {e.session_id for e in mind.store.get_many(report.erased).values()} == {"a1"}
        assert [e.content for e in mind.store.events(session_id="a2")] == ["alice in a2", "ok"]
        assert mind.store.chain_keys("alice")  # part of her: her ids and chain stay
