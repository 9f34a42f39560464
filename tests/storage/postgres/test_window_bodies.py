"""Window keys on PostgreSQL are built from capped bodies, as on SQLite (issue 22): a huge
turn puts only its first characters into its own and its neighbours' windows, so the keys
that each later append rewrites stay small whatever one message held; the turn's own key
still holds all of it. A database whose keys were built by other body rules rebuilds them
when it is opened (migrations/0007)."""

from __future__ import annotations

import random
import string

import psycopg

from pmm.storage.postgres import PostgresEventStore
from pmm.text.window_keys import WINDOW_BODY_FORMAT, WINDOW_TURN_CHARS


def _window_lexemes(url: str) -> dict[int, int]:
    """Each window row's number of lexemes."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT event_id, length(search) FROM event_windows").fetchall()
    return {int(i): int(n) for i, n in rows}


def _window_ids(store: PostgresEventStore, query: str) -> list[int]:
    return sorted(i for i, _ in store.search_text(query, key="window", limit=50))


def _unique_words(count: int, seed: int) -> list[str]:
    """Words that no stemmer folds together, so that the term cap cannot shrink them."""
    rng = random.Random(seed)
    return ["".join(rng.choices(string.ascii_lowercase, k=9)) for _ in range(count)]


def test_a_huge_turn_puts_only_its_first_characters_into_window_keys(pg_url: str) -> None:
    words = _unique_words(40_000, seed=22)  # 400,000 characters, every word different
    huge_text = "tool output: " + " ".join(words)
    with PostgresEventStore(pg_url) as store:
        before = store.append("prompt", "show me the sales table", session_id="t", role="user").id
        huge = store.append("response", huge_text, session_id="t", role="assistant").id
        after = [
            store.append("prompt", f"thanks, and the {w} figures?", session_id="t", role="user").id
            for w in ("march", "april", "may")
        ]
        lexemes = _window_lexemes(pg_url)
        # one capped turn's words at most, beside the short turns' (10 characters a word)
        bound = WINDOW_TURN_CHARS // 10 + 50
        assert max(lexemes.values()) <= bound
        assert lexemes[huge] > WINDOW_TURN_CHARS // 20  # its first characters are there
        # its first words are in every neighbour's window, its last ones only in its own key
        assert _window_ids(store, words[0]) == [before, huge, *after[:2]]
        assert _window_ids(store, words[-1]) == []
        assert [i for i, _ in store.search_text(words[-1], key="turn")] == [huge]
        assert _window_ids(store, "april") == [huge, *after]
        assert store.verify().ok


def test_keys_built_by_other_body_rules_are_rebuilt_on_open(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as store:
        ids = [
            store.append("prompt", text, session_id="s", role="user").id
            for text in ("we planted tomatoes", "the tomatoes are red", "lunch soon")
        ]
    # As a database migrated to 0007 looks: keys from the old rules, no body format.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE event_windows SET search = to_tsvector('english', 'stale')")
        conn.execute("UPDATE window_state SET body_format = ''")
    with PostgresEventStore(pg_url) as store:
        assert _window_ids(store, "stale") == []
        assert _window_ids(store, "tomatoes") == ids
        with psycopg.connect(pg_url) as conn:
            state = conn.execute("SELECT radius, body_format FROM window_state").fetchone()
        assert state == (store.window_radius, WINDOW_BODY_FORMAT)


def test_a_question_asked_twice_holds_its_words_once_in_each_copys_window(pg_url: str) -> None:
    """Repeats do not reinforce, as on SQLite (pmm.text.window_keys.window_members): a copy of
    a turn is left out of its window, appended one by one and rebuilt alike."""
    texts = ["I have a dog named Bolt.", "Noted.", "What's my dog's name?", "I'm offline.",
             "what's my DOG'S name", "I'm offline."]  # fmt: skip

    def dogs(url: str) -> dict[int, int]:  # positions of the lexeme 'dog' in each window
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT event_id, search::text FROM event_windows").fetchall()
        found = {}
        for event_id, vector in rows:
            lexeme = next((p for p in vector.split() if p.startswith("'dog':")), "")
            found[int(event_id)] = len(lexeme.split(":")[1].split(",")) if lexeme else 0
        return found

    with PostgresEventStore(pg_url) as store:
        ids = [
            store.append("prompt" if n % 2 == 0 else "response", text, session_id="r",
                         role="user" if n % 2 == 0 else "assistant").id
            for n, text in enumerate(texts)
        ]  # fmt: skip
        appended = dogs(pg_url)
    first, second = ids[2], ids[4]
    assert appended[first] == 2  # the fact and the question, not its copy
    assert appended[second] == 1  # the question alone (the fact is 4 turns back)
    assert appended[ids[3]] == 2  # between the copies: both (capped at two)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE window_state SET body_format = 'rules-3'")
    with PostgresEventStore(pg_url) as store:
        assert _window_ids(store, "bolt") == ids[:3]
    assert dogs(pg_url) == appended
