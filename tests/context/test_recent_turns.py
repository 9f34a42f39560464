"""pmm.context.recent_turns: the recent window kept between context calls (summaries off) equals
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


def test_a_restored_log_drops_what_was_kept_and_erasure_reaches_it(tmp_path: Path) -> None:
    """Another process restores an older backup, then writes and erases a turn: this
    process shows the restored log, never the rows it kept from the replaced one, and
    never the erased text (the redaction marker's id is below the newest id it saw)."""
    from pmm.storage.sqlite.backup import backup, restore

    path, saved = tmp_path / "a.db", tmp_path / "b.db"
    with Mind(str(path)) as mind:
        for i in range(3):
            mind.remember(f"turn {i}", role="user", session_id="s")
        backup(str(path), str(saved))
        for i in range(3):
            mind.remember(f"SECRET {i}", role="user", session_id="s")
        assert len(mind.context("s").history) == 6
        restore(str(saved), str(path))
        assert [t.text for t in mind.context("s").history] == ["turn 0", "turn 1", "turn 2"]
        with Mind(str(path)) as other:
            other.remember("my card number is 4111-1111", role="user", session_id="t")
            assert [t.text for t in mind.context("t").history] == ["my card number is 4111-1111"]
            other.forget(match="4111", reason="user asked")
        assert mind.context("t").history == []
        assert mind.recall("4111 card", 3, session_id="t") == []
        mind.remember("after restore", role="user", session_id="s")
        assert mind.context("s").history[-1].text == "after restore"


def test_an_append_read_before_its_notice_is_kept_once(tmp_path: Path) -> None:
    """Thread B commits between thread A's look at the log and A's read of the new rows;
    B's notice (``appended``) arrives after A read the row: it is kept once."""
    from pmm.records import NewEvent

    with Mind(str(tmp_path / "a.db")) as mind:
        for i in range(3):
            mind.remember(f"turn {i}", role="user", session_id="s")
        assert len(mind.context("s").history) == 3
        store, late = mind.store, []
        turn_rows = store.turn_rows

        def interleaved(**kwargs: Any) -> Any:
            if not late:  # thread B's commit lands here
                late.extend(store.append_many([NewEvent("prompt", "B's turn", "s", "user")]))
            return turn_rows(**kwargs)

        store.append("response", "A reply", session_id="s", role="assistant")
        store.turn_rows = interleaved  # type: ignore[method-assign]
        assert [t.text for t in mind.context("s").history][-2:] == ["A reply", "B's turn"]
        store.turn_rows = turn_rows  # type: ignore[method-assign]
        mind._contexts.appended(late)  # B's notice, after A read its row
        assert [t.text for t in mind.context("s").history][-3:] == [
            "turn 2", "A reply", "B's turn"
        ]  # fmt: skip


def test_the_session_ranker_keeps_an_append_read_before_its_notice_once(
    tmp_path: Path,
) -> None:
    """As above, for the session ranker: a search reads thread B's row between its commit
    and its notice; the notice adds nothing twice."""
    from pmm.records import NewEvent

    with Mind(str(tmp_path / "a.db")) as mind:
        for i in range(3):
            mind.remember(f"turn {i} about llamas", role="user", session_id="s")
        ranker = mind._contexts.recaller().session_ranker
        assert ranker is not None
        ranker.search("llamas", session_id="s", key="window")
        store, late = mind.store, []
        events = store.events

        def interleaved(**kwargs: Any) -> Any:
            if not late:  # thread B's commit lands here
                late.extend(store.append_many([NewEvent("prompt", "B llamas llamas", "s", "user")]))
            return events(**kwargs)

        store.append("response", "A reply", session_id="s", role="assistant")
        store.events = interleaved  # type: ignore[method-assign]
        ranker.search("llamas", session_id="s", key="window")
        store.events = events  # type: ignore[method-assign]
        mind._contexts.appended(late)  # B's notice, after the search read its row
        ours = ranker.search("llamas", session_id="s", key="window")
        with Mind(str(tmp_path / "a.db")) as fresh:  # a ranker built from the log alone
            again = fresh._contexts.recaller().session_ranker
            assert again is not None
            assert ours == again.search("llamas", session_id="s", key="window")
