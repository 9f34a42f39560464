"""Repeats do not reinforce (issue 22): a turn that says another's words again is the same
utterance. Its window key leaves out the copies of itself, recall ranks and shows one copy
(the most recent), and the context shows no memory that repeats a shown turn."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pmm import Mind
from pmm.context.assembly import Turn, assemble
from pmm.context.tokens import get_token_counter
from pmm.recall.recaller import Recaller
from pmm.storage.sqlite import EventStore
from pmm.text.window_keys import WindowRow, window_members, window_texts
from pmm.text.words import repeat_key

ASKED_TWICE = [
    ("user", "I live in Zürich."), ("assistant", "Noted."),
    ("user", "I have a dog named Bolt."), ("assistant", "Noted."),
    ("user", "I work as a nurse."), ("assistant", "Noted."),
    ("user", "What's my dog's name?"), ("assistant", "I'm offline."),
    ("user", "What's my dog's name?"), ("assistant", "I'm offline."),
]  # fmt: skip
QUESTION, FACT = "What's my dog's name?", "I have a dog named Bolt."


def test_repeat_key_is_the_set_of_words_case_folded() -> None:
    assert (
        repeat_key(QUESTION)
        == repeat_key("what's my DOG’S name")
        == repeat_key("name? my dog's, What's")
    )
    assert repeat_key(QUESTION) == frozenset({"what's", "my", "dog's", "name"})
    assert repeat_key("I have a dog") != repeat_key("Do you have a dog?")
    assert repeat_key("What's my cat's name?") != repeat_key(QUESTION)
    assert repeat_key("🐶") == repeat_key("") == repeat_key(None) == frozenset()
    # only the first 16,384 characters are read, as a window reads them
    assert repeat_key("a " * 9000 + "tail") == repeat_key("a " * 9000)


def test_a_window_leaves_out_the_copies_of_its_own_turn() -> None:
    rows = [WindowRow(i, "prompt" if i % 2 else "response", t) for i, (_, t) in
            enumerate(ASKED_TWICE, start=1)]  # fmt: skip
    texts = window_texts(rows, 2, {7, 8, 9})
    # each copy's window holds the question once: the other copy is the same utterance
    assert texts[7] == "I work as a nurse. Noted. What's my dog's name? I'm offline."
    # 7 repeats 9 itself and goes; 10 says what 8 says, but neither repeats 9: both stay
    assert [r.id for r in window_members(rows, 2, {9})[9]] == [8, 9, 10]
    # a turn between the copies is no copy of either: its window holds both
    assert texts[8] == "Noted. What's my dog's name? I'm offline. What's my dog's name?"
    # a turn with no word is never taken for a repeat
    emoji = [
        WindowRow(1, "prompt", "🐶"),
        WindowRow(2, "prompt", "🐶"),
        WindowRow(3, "prompt", "ok"),
    ]
    assert window_texts(emoji, 1, {1, 2}) == {1: "🐶 🐶", 2: "🐶 🐶 ok"}


def _window_counts(db: Path, term: str) -> dict[int, int]:
    """How often the SQLite window index (contentless FTS5) holds ``term`` in each row,
    read from the index itself (fts5vocab)."""
    conn = sqlite3.connect(db)
    try:
        conn.execute(
            "CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, events_window_fts, instance)"
        )
        found = conn.execute(
            "SELECT doc, count(*) FROM temp.vocab WHERE term = ? AND col = 'body' GROUP BY doc",
            (term,),
        ).fetchall()
    finally:
        conn.close()
    return dict(found)


def test_the_sqlite_window_index_counts_a_question_asked_twice_once(tmp_path: Path) -> None:
    with EventStore(tmp_path / "pmm.db", window_radius=2) as store:
        ids = [
            store.append("prompt" if role == "user" else "response", text, session_id="u",
                         role=role).id
            for role, text in ASKED_TWICE
        ]  # fmt: skip
        store.search_text("dog", key="window", limit=5)  # brings the index in step
    q1, q2 = ids[6], ids[8]
    counts = _window_counts(tmp_path / "pmm.db", "dog")
    # appended one by one (the incremental path): each copy holds "dog" once; the
    # answer between them holds both copies (capped at two)
    assert counts[q1] == counts[q2] == 1
    assert counts[ids[7]] == 2
    # an index built under the rules before this one (another body format, as a file
    # written by an older PMM holds) is rebuilt from the log, to the same rows
    conn = sqlite3.connect(tmp_path / "pmm.db")
    with conn:
        conn.execute("UPDATE window_state SET body_format = 'rules-3'")
    conn.close()
    with EventStore(tmp_path / "pmm.db", window_radius=2) as store:
        assert store.search_text("dog", key="window", limit=5)
    assert _window_counts(tmp_path / "pmm.db", "dog") == counts


def _asked_twice(mind: Mind, user_id: str | None = None) -> None:
    for role, text in ASKED_TWICE:
        mind.remember(text, role=role, session_id=f"s-{user_id}", user_id=user_id)


def test_recall_shows_one_utterance_once_and_the_fact_first(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        _asked_twice(mind)
        newest = max(e.id for e in mind.history("s-None") if e.content == QUESTION)
        for session in (None, "s-None"):  # the store's index, the in-memory ranker
            hits = mind.recall("dog", k=5, session_id=session)
            found = [h.event.content for h in hits]
            assert found[0] == FACT, (session, found)
            assert found.count(QUESTION) == 1
            assert next(h.event.id for h in hits if h.event.content == QUESTION) == newest
            assert len({h.event.content for h in hits}) == len(hits)  # "Noted." once too
        # the weighted RRF shows one copy too
        plain = Recaller(mind.store, learned=False).recall("dog", k=5)
        assert [h.event.content for h in plain].count(QUESTION) == 1


def test_another_users_copy_is_another_utterance(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        _asked_twice(mind, "alice")
        _asked_twice(mind, "bob")
        for user in ("alice", "bob"):
            hits = mind.recall("dog", k=5, user_id=user)
            assert {h.event.user_id for h in hits} == {user}
            assert [h.event.content for h in hits].count(QUESTION) == 1
        # unscoped, each user's question is shown: one utterance per user
        hits = mind.recall("dog", k=10)
        asked = [h.event.user_id for h in hits if h.event.content == QUESTION]
        assert sorted(asked) == ["alice", "bob"]


def test_the_context_shows_no_memory_that_repeats_a_shown_turn() -> None:
    history = [Turn("user", QUESTION, 9)]
    memories = [Turn("user", "what's my dog's NAME", 7), Turn("user", FACT, 3)]
    ctx = assemble(session_id="s", history=history, budget=500, counter=get_token_counter(),
                   memories=memories)  # fmt: skip
    assert [m.event_id for m in ctx.memories] == [3]
    assert ctx.text().count("dog's name") == 1


def test_the_same_words_from_another_speaker_are_another_utterance(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        for role, text in [("user", "Bolt is my dog."), ("assistant", "Bolt is my dog."),
                           ("user", "Bolt is my dog!")]:  # fmt: skip
            mind.remember(text, role=role, session_id="s")
        hits = mind.recall("Bolt", k=5)
        # the user's two copies are one (the newest); the assistant's words are its own
        assert sorted((h.event.role, h.event.id) for h in hits) == [("assistant", 2), ("user", 3)]
