"""pmm.recent_turns: the recent window kept between context calls (summaries off) equals
the window read afresh from the log, through appends, clear markers, redactions,
compactions and appends by another connection, at any budget."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from pmm import Mind
from pmm.storage.sqlite import EventStore

WORDS = "apple boat cider dune ember fjord grove harbor island jetty kelp lagoon".split()


def test_kept_window_equals_a_fresh_read(tmp_path: Path) -> None:
    rng = random.Random(5)
    path = tmp_path / "w.db"
    with Mind(str(path), max_tokens=300) as mind, EventStore(path) as other:
        contexts = mind._contexts
        assert not mind.settings.enable_summary
        reused = 0
        for step in range(300):
            session = rng.choice(("a", "b"))
            roll = rng.random()
            if roll < 0.6:
                text = " ".join(rng.choices(WORDS, k=rng.randint(1, 30)))
                mind.remember_turn(text, text.upper(), session_id=session)
            elif roll < 0.7:  # another connection, as another process would
                other.append("prompt", rng.choice(WORDS), session_id=session, role="user")
            elif roll < 0.75:
                mind.clear(session)
            elif roll < 0.8:
                turns = other.events(session_id=session, kinds=("prompt", "response"))
                turns = [e for e in turns if e.content is not None]
                if turns:
                    other.redact(rng.choice(turns).id, reason="test")
            elif roll < 0.84:  # digested turns lose their text: the summary shows instead
                turns = other.events(session_id=session, kinds=("prompt", "response"))
                turns = [e for e in turns if e.content is not None]
                picked = rng.sample(turns, min(3, len(turns)))
                other.set_digests([(e.id, f"short {e.id}", ["k"], "heuristic") for e in picked])
                assert other.compact(older_than="0s", session_id=session).compacted or not picked
            budget = rng.choice((0, 5, 40, 120, 400, 5000))
            clear_after, _ = contexts.state(session)
            kept = contexts._history_window(session, clear_after, budget)
            fresh = contexts._read_window(session, clear_after, budget)
            assert kept == fresh, step
            kept = contexts._recent._kept.get(session)
            reused += kept is not None and len(kept.turns) > 0
        assert reused > 100


def test_own_appends_are_taken_as_given_and_others_are_read(tmp_path: Path) -> None:
    """After this process's save, a context reads no turns from the log; after another
    connection's append it reads the new ones, and shows them."""
    path = tmp_path / "w.db"
    with Mind(str(path), max_tokens=300) as mind, EventStore(path) as other:
        reads: list[int] = []
        turn_rows = mind.store.turn_rows

        def counted(**kwargs: Any) -> Any:
            reads.append(1)
            return turn_rows(**kwargs)

        mind.store.turn_rows = counted  # type: ignore[method-assign]
        mind.remember_turn("first", "one", session_id="s")
        assert [t.text for t in mind.context("s").history] == ["first", "one"]
        reads.clear()
        mind.remember_turn("second", "two", session_id="s")
        assert [t.text for t in mind.context("s").history] == ["first", "one", "second", "two"]
        assert reads == []
        other.append("prompt", "third, from elsewhere", session_id="s", role="user")
        assert mind.context("s").history[-1].text == "third, from elsewhere"
        assert reads == [1]
