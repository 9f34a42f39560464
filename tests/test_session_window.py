"""The recent window kept between context calls (summaries off) equals the window read
afresh from the log, through appends, clear markers, redactions, compactions and appends
by another connection, at any budget."""

from __future__ import annotations

import random
from pathlib import Path

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
            recent = contexts._sessions[session].recent
            reused += recent is not None and len(recent.turns) > 0
        assert reused > 100
