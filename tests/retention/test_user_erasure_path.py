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


def test_rebuilding_from_exports_drops_thread_ids_of_old_summary_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The privacy guide's way out for files whose summary keys hold thread ids (written
    before the key dropped them): a user's export imported into a database that already
    holds an event is renumbered, its summary keys rewritten without the thread id."""
    import pmm.dream.consolidation as consolidation
    from pmm.cli.entry import main

    thread = "alice.liddell@example.org-thread-7f3a9c2e"
    current = consolidation.summary_key
    monkeypatch.setattr(consolidation, "summary_key", lambda c: f"{thread}:{current(c)}")
    old, new, export = tmp_path / "old.db", tmp_path / "new.db", tmp_path / "alice.jsonl"
    options = {"enable_summary": True, "summarizer": "heuristic", "summary_mode": "inline"}
    with Mind(old, session_summary_min_turns=2, dream_on_close=False, **options) as mind:
        for i in range(4):
            mind.remember_turn(f"I grow kumquats, batch {i}", "ok", session_id=thread, user_id="al")
        mind.dream()
        [summary] = mind.store.events(kinds=("summary",))
        assert summary.meta["key"].startswith(thread + ":")  # as earlier versions wrote it
    monkeypatch.undo()
    assert main(["export", str(export), "--user", "al", "--db", str(old)]) == 0
    with Mind(new) as mind:  # the guide's snippet
        mind.remember("log rebuilt from per-user exports", role="system", session_id="admin")
    assert main(["import", str(export), "--db", str(new)]) == 0
    capsys.readouterr()
    with Mind(new) as mind:
        [summary] = mind.store.events(kinds=("summary",))
        assert thread not in summary.meta["key"] and summary.meta["key"].count(":") == 1
        assert mind.verify().ok
        mind.forget(user_id="al", reason="account deleted")
    held = b"".join(p.read_bytes() for p in tmp_path.glob("new.db*"))
    assert thread.encode() not in held
