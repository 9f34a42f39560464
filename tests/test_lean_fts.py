"""Lean full-text indexes (issue 11, migration 0011): the turn index keeps no positions
(detail=column), the window index holds each window's distinct terms; queries never use
phrases; files written before migrate and search as before."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from pmm import Mind
from pmm.stemmer import fts_tokens, query_tokens
from pmm.storage.sqlite import schema
from pmm.store import EventStore
from pmm.window_keys import WINDOW_TERM_CAP, WindowRow, window_bodies, window_body, window_texts

TURNS = [
    ("prompt", "I don't like e-mail; call O'Brien about the 3.5 GHz router"),
    ("response", "Noted: O'Brien, not e-mail. The router runs at 3.5 GHz."),
    ("prompt", "Мы поедем в Łódź и в 東京 в мае, नमस्ते"),
    ("response", "Łódź in May, then 東京. Have a good trip!"),
    ("prompt", "the tomato tomato tomato garden, y'all"),
    ("response", "a garden with one tomato"),
]
QUERIES = ["y'all", "don't", "O'Brien", "e-mail", "3.5", "Łódź", "лодзь Мы", "東京", "नमस्ते"]
QUERIES += ["tomatoes"]


def fill(store: EventStore) -> None:
    for i, (kind, text) in enumerate(TURNS):
        session = "a" if i < 4 else "b"
        store.append(kind, text, session_id=session, role="user" if kind == "prompt" else "ai")


def searches(store: EventStore) -> dict[tuple[str, str, str | None], list[int]]:
    found = {}
    for key in ("turn", "content", "window"):
        for query in QUERIES:
            for session in (None, "a", "b"):
                hits = store.search_text(query, key=key, session_id=session, sync=False)
                found[key, query, session] = [i for i, _ in hits]
    return found


def fts5_tokens(conn: sqlite3.Connection, texts: list[str]) -> list[int]:
    """How many tokens FTS5 (unicode61, as PMM's tables) splits each text into."""
    conn.execute("CREATE VIRTUAL TABLE temp.probe USING fts5(a, tokenize='unicode61')")
    conn.execute("CREATE VIRTUAL TABLE temp.probe_v USING fts5vocab(temp, probe, 'instance')")
    conn.executemany("INSERT INTO probe(rowid, a) VALUES (?, ?)", enumerate(texts))
    counts = dict(conn.execute("SELECT doc, count(*) FROM probe_v GROUP BY doc").fetchall())
    return [counts.get(i, 0) for i in range(len(texts))]


def test_query_tokens_are_the_tokens_fts5_splits_a_word_into() -> None:
    """Every character Python calls a letter or digit, between two letters: PMM's split
    and FTS5's agree (a word FTS5 splits further would become a phrase query, which the
    turn index refuses)."""
    chars = [chr(c) for c in range(0x30, 0x30000) if not 0xD800 <= c < 0xE000 and chr(c).isalnum()]
    words = ["x" + c + "x" for c in chars]
    conn = sqlite3.connect(":memory:")
    counts = fts5_tokens(conn, words)
    differ = [
        (c, n) for c, w, n in zip(chars, words, counts, strict=True) if len(query_tokens(w)) != n
    ]
    assert differ == []
    assert len(query_tokens("x\u19b0x")) == 2  # one of the letters unicode61 splits on


def test_bm25_counts_occurrences_on_external_content_not_on_contentless_detail_column() -> None:
    """Why the turn index may drop positions and the window index may not: with
    detail=column FTS5 re-reads an external-content row's text to count a term's
    occurrences (bm25 as with detail=full), but a contentless row has no text to read and
    every row scores 0."""
    docs = [("apple x x x",), ("apple apple apple x",), ("x x",), ("zz",), ("zz",)]
    scores = {}
    for name, options in [
        ("full", ""),
        ("column", ", content='src', content_rowid='id', detail=column"),
        ("contentless_column", ", content='', detail=column"),
    ]:
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE src(id INTEGER PRIMARY KEY, a TEXT)")
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(a{options})")
        for i, (text,) in enumerate(docs, 1):
            conn.execute("INSERT INTO src(id, a) VALUES (?, ?)", (i, text))
            conn.execute("INSERT INTO t(rowid, a) VALUES (?, ?)", (i, text))
        rows = conn.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH 'apple' ORDER BY rowid")
        scores[name] = [round(s, 6) for _, s in rows]
    assert scores["column"] == scores["full"] and scores["full"][1] < scores["full"][0] < 0
    assert scores["contentless_column"] == [0.0, 0.0]


def test_window_bodies_hold_each_term_at_most_twice_and_no_stopwords() -> None:
    body = window_body("The tomatoes, the Tomato and TOMATO-sauce; Łódź, what about it? Łódź")
    counts = Counter(fts_tokens(body))
    assert counts == {"tomato": WINDOW_TERM_CAP, "sauc": 1, "łodz": 2}
    assert window_body("e-mail") == "e mail" and window_body("don't") == "don t"


def test_window_bodies_read_each_row_once_and_equal_window_body() -> None:
    texts = ["the tomato", "Tomatoes again; tomato!", "", "a garden", "tomato garden tomato"]
    rows = [WindowRow(i, "prompt" if i % 2 else "response", t) for i, t in enumerate(texts, 1)]
    rows.insert(3, WindowRow(9, "clear", None))
    targets = {1, 2, 3, 4, 5}
    counted: dict[int, dict[str, tuple[str, int]]] = {}
    bodies = window_bodies(rows, 1, targets, counted)
    expected = {i: window_body(t) for i, t in window_texts(rows, 1, targets).items()}
    assert bodies == expected and set(bodies) == targets
    # "again" is a stopword; the window of the empty turn 3 is turn 2 (the clear marker
    # ends the segment); each row with text was read once
    assert bodies[2] == "tomato tomato" and bodies[3] == "tomatoes tomatoes"
    assert bodies[4] == "garden garden tomato tomato" and set(counted) == {1, 2, 4, 5}


def test_words_fts5_splits_are_found_in_every_key(tmp_path: Path) -> None:
    with EventStore(tmp_path / "pmm.db") as store:
        fill(store)
        store.sync_search_index()
        found = searches(store)
        sql = store._read("SELECT sql FROM sqlite_master WHERE name = 'events_fts'")[0][0]
    assert "detail = column" in sql
    assert found["turn", "don't", None] == [1]
    assert set(found["turn", "O'Brien", "a"]) == {1, 2} and found["turn", "O'Brien", "b"] == []
    assert set(found["content", "e-mail", None]) == {1, 2}
    assert set(found["turn", "3.5", "a"]) == {1, 2}
    assert set(found["turn", "Łódź", None]) == {3, 4} and set(found["turn", "東京", "a"]) == {3, 4}
    assert found["turn", "नमस्ते", None] == [3] and found["turn", "лодзь Мы", None] == [3]
    assert found["turn", "tomatoes", None][0] == 5  # three occurrences outrank one
    assert set(found["window", "tomatoes", "b"]) == {5, 6} and found["window", "3.5", "b"] == []
    # "all" is a stopword the window index leaves out: "y'all" is searched there as "y"
    assert found["turn", "y'all", None] == [5] and set(found["window", "y'all", None]) == {5, 6}


def test_a_query_token_that_folds_to_nothing_is_left_out(tmp_path: Path) -> None:
    """U+037A and the half-width sound marks are word characters that fold to no term:
    a query holding one finds what its other words find, never an internal error."""
    with Mind(str(tmp_path / "pmm.db")) as mind:
        mind.remember("the cat sat on the mat", role="user", session_id="s")
        for query in ("x'\u037a cat", "\uff9e cat", "\u037a"):
            for session in ("s", None):
                hits = mind.recall(query, 3, session_id=session, mode="keyword")
                assert [h.event.text for h in hits] == (
                    ["the cat sat on the mat"] * ("cat" in query)
                )


def test_a_file_of_the_previous_schema_migrates_and_searches_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    every = schema.load_migrations()
    # 0012 (window_state.body_format) too: today's window code needs its column
    older = [m for m in every if m.version <= 10 or m.version == 12]
    monkeypatch.setattr(schema, "load_migrations", lambda: older)
    old_path = tmp_path / "old.db"
    with EventStore(old_path) as old:
        fill(old)
        old.sync_search_index()
        before = searches(old)
    monkeypatch.undo()
    with EventStore(old_path) as store:
        # 0011, and whatever came after 0012 (those migrations are not this test's)
        assert [m.version for m in store.applied_migrations] == [
            11,
            *(m.version for m in every if m.version > 12),
        ]
        assert store.search_index_upto() == 0  # rebuilt lazily, on the next search
        store.sync_search_index()
        after = searches(store)
        turn_scores = store.search_text("tomatoes", key="turn")
        assert store.verify().ok
        for table in ("events_fts", "events_window_fts"):
            store._conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    with EventStore(tmp_path / "new.db") as fresh:
        fill(fresh)
        assert fresh.search_text("tomatoes", key="turn") == turn_scores
    assert after["turn", "tomatoes", None] == before["turn", "tomatoes", None]
    for (key, query, session), ids in before.items():
        if key == "window":  # a term counts once per window now: the same rows, maybe reordered
            assert set(after[key, query, session]) == set(ids), (key, query, session)
        else:  # bm25 as before
            assert after[key, query, session] == ids, (key, query, session)


def test_another_window_body_format_rebuilds_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release that makes window bodies another way (here: keeping stopwords) must not
    delete contentless rows by bodies they were not indexed with (which corrupts FTS5 or
    leaves stale terms): the file records the format, and another one rebuilds the index."""
    import pmm.window_keys as window_keys
    from pmm.storage.sqlite import windows

    path = tmp_path / "pmm.db"
    with Mind(str(path)) as mind:
        for i in range(3):
            mind.remember(f"my cat and the tuna {i}", role="user", session_id="s")
        assert mind.store.search_text("cat", key="window")
        assert mind.store.search_text("the", key="window") == []  # a stopword: left out
    monkeypatch.setattr(window_keys, "WINDOW_SKIP", frozenset())
    monkeypatch.setattr(windows, "WINDOW_BODY_FORMAT", "stopwords-kept", raising=False)
    with Mind(str(path)) as mind:
        mind.remember("dogs are fine too", role="user", session_id="s")  # rewrites windows
        assert len(mind.store.search_text("the", key="window")) == 4  # 4: through 2 and 3
        assert len(mind.store.search_text("cat", key="window")) == 4
        conn = mind.store._conn
        conn.execute("INSERT INTO events_window_fts(events_window_fts) VALUES ('integrity-check')")
        fmt = conn.execute("SELECT body_format FROM window_state").fetchone()[0]
        assert fmt == "stopwords-kept"


def test_stopwords_leave_the_window_key_as_words_not_as_stems(tmp_path: Path) -> None:
    """ "please", "says", "does" are stopwords, "pleased", "saying", "doe" are not, though
    they stem alike: the window index and the session ranker keep the content words."""
    text = "I was so pleased with the AR demo, John Doe was saying hi"
    assert window_body(text).split() == ["pleased", "ar", "demo", "john", "doe", "saying", "hi"]
    with Mind(str(tmp_path / "pmm.db")) as mind:
        mind.remember(text, role="user", session_id="s")
        mind.remember("ok", role="assistant", session_id="s")
        for word in ("pleased", "saying", "doe", "ar"):
            everywhere = mind.store.search_text(word, key="window")
            assert len(everywhere) == 2, word  # the turn and its neighbour
            ranker = mind._contexts.recaller().session_ranker
            assert ranker is not None
            assert {i for i, _ in ranker.search(word, session_id="s", key="window")} == {
                i for i, _ in everywhere
            }, word
