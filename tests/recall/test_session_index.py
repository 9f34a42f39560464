"""SessionRanker: in-memory BM25 of one session's turns, checked against the FTS5 path it
stands in for (tokens, top ten, recall of answer turns) and kept in step with the log."""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from pmm.recall.recaller import Recaller
from pmm.recall.session_index import SessionRanker
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore
from pmm.text.stemmer import fts_tokens, stem
from pmm.text.words import search_terms

DATA = Path(__file__).resolve().parents[2] / "bench" / "data"
TURNS = ("prompt", "response")


def chat(conversations: int) -> dict[str, Any]:
    data = json.loads((DATA / "chat_dataset.json").read_text(encoding="utf-8"))
    keep = {c["id"] for c in data["conversations"][:conversations]}
    return {
        "conversations": [c for c in data["conversations"] if c["id"] in keep],
        "questions": [q for q in data["questions"] if q["conversation"] in keep],
    }


def ingest(store: EventStore, data: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """turn id -> (event id, session id)."""
    where: dict[str, tuple[int, str]] = {}
    for conversation in data["conversations"]:
        for session in conversation["sessions"]:
            for turn in session["turns"]:
                role = "user" if turn["role"] == "user" else "assistant"
                event = store.append(
                    "prompt" if role == "user" else "response",
                    turn["text"],
                    session_id=session["id"],
                    role=role,
                    ts=turn.get("date") or session.get("date"),
                )
                where[turn["id"]] = (event.id, session["id"])
    return where


def test_tokens_are_the_ones_fts5_indexes() -> None:
    """The same tokens as SQLite's 'porter unicode61 remove_diacritics 2', read back from
    FTS5 itself (fts5vocab), on every turn of both datasets and some awkward words."""
    texts = [
        t["text"]
        for name in ("chat_dataset.json", "recall_dataset.json")
        for c in json.loads((DATA / name).read_text(encoding="utf-8"))["conversations"]
        for s in c["sessions"]
        for t in s["turns"]
    ]
    texts.append("Łódź São Paulo naïve café don't dog's e-mail foo_bar 3.14 generalization")
    conn = sqlite3.connect(":memory:")  # the reference: SQLite's own tokenizer
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(b, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    conn.executemany("INSERT INTO f(rowid, b) VALUES (?, ?)", enumerate(texts))
    expected: dict[int, list[str]] = defaultdict(list)
    for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        expected[doc].append(term)
    mismatched = [i for i, text in enumerate(texts) if fts_tokens(text) != expected[i]]
    assert mismatched == []
    assert [stem(w) for w in ("relational", "hopping", "generously", "ponies", "a")] == [
        "relat", "hop", "gener", "poni", "a",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def chats(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[EventStore, dict[str, Any], dict[str, tuple[int, str]]]:
    data = chat(3)
    store = EventStore(tmp_path_factory.mktemp("chats") / "chats.db")
    where = ingest(store, data)
    store.sync_search_index()
    return store, data, where


def test_top_ten_agree_with_fts5_and_recall_does_not_drop(
    chats: tuple[EventStore, dict[str, Any], dict[str, tuple[int, str]]],
) -> None:
    """On three chats (1,500+ turns, 50+ sessions), each question asked within the session
    of its first answer turn: the ranker's top ten mostly agree with FTS5's for both keys,
    and it finds as many answer turns."""
    store, data, where = chats
    ranker = SessionRanker(store)
    overlap: dict[str, list[float]] = defaultdict(list)
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    for question in data["questions"]:
        session = where[question["answer_ids"][0]][1]
        answers = {where[a][0] for a in question["answer_ids"] if where[a][1] == session}
        for key in ("turn", "window"):
            fts = [
                i
                for i, _ in store.search_text(
                    question["question"], limit=10, session_id=session, kinds=TURNS, key=key
                )
            ]
            mine = [
                i
                for i, _ in ranker.search(
                    question["question"], session_id=session, key=key, kinds=TURNS, limit=10
                )
            ]
            if fts:
                overlap[key].append(len(set(fts) & set(mine)) / len(fts))
            found[key, "fts"].append(len(answers & set(fts)) / len(answers))
            found[key, "mine"].append(len(answers & set(mine)) / len(answers))
    mean = {k: sum(v) / len(v) for k, v in overlap.items()}
    recall = {k: sum(v) / len(v) for k, v in found.items()}
    print("top-10 overlap", mean, "R@10", recall)
    assert len(data["questions"]) > 300
    assert mean["turn"] >= 0.95 and mean["window"] >= 0.975
    for key in ("turn", "window"):
        assert recall[key, "mine"] >= recall[key, "fts"] - 0.01


def test_window_key_scores_as_fts5_does_over_one_session(tmp_path: Path) -> None:
    """With the whole log in one session (so that the session's document frequencies are
    the index's), the window key's documents are the ones FTS5 holds (term by term, read
    back with fts5vocab) and its scores are bm25()'s: the same ids, scores within 1e-5
    (FTS5 also scores words in half the windows or more, at an idf of 1e-6)."""
    import random

    rng = random.Random(5)
    data = chat(1)
    path = tmp_path / "one.db"
    with EventStore(path) as store:
        for session in [s for c in data["conversations"] for s in c["sessions"]][:8]:
            for turn in session["turns"]:
                kind = "prompt" if turn["role"] == "user" else "response"
                store.append(kind, turn["text"], session_id="s", ts=session.get("date"))
                if rng.random() < 0.1:
                    store.append("response", rng.choice(SPLIT_WORDS), session_id="s")
            store.append("clear", "history cleared", session_id="s")
        store.sync_search_index()
        ranker = SessionRanker(store)
        ranker.search("warm up", session_id="s")
        windows = ranker._sessions["s"].windows
        conn = sqlite3.connect(path)
        conn.execute(
            "CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, events_window_fts, instance)"
        )
        held: dict[int, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
        for term, doc, column in conn.execute("SELECT term, doc, col FROM temp.v"):
            if column != "tags":
                held[doc][term, column] += 1
        conn.close()
        assert windows.docs.keys() == held.keys()
        for event_id, doc in windows.docs.items():
            mine = {
                (t, name): n
                for name, c in zip(("body", "dates"), doc.columns, strict=True)
                for t, n in c.counts.items()
            }
            assert mine == held[event_id]
        queries = [q["question"] for q in data["questions"]]
        queries += ["o'clock ma'am", "five o'clock e-mail", "what is it", "don't"]
        compared = 0
        for query in queries:
            if len(search_terms(query)) > 6:
                continue  # the index picks its six words in query order, the ranker its rarest
            weight = rng.choice((1.0, 3.0))
            fts = store.search_text(
                query, session_id="s", key="window", limit=1000, date_weight=weight
            )
            mine = ranker.search(
                query, session_id="s", key="window", limit=1000, date_weight=weight
            )
            scores = dict(mine)
            assert scores.keys() <= dict(fts).keys(), query
            for event_id, score in fts:
                assert abs(scores.get(event_id, 0.0) - score) < 1e-5, (query, event_id)
            compared += len(mine)
        assert compared > 1000


def ids(ranker: SessionRanker, query: str, key: str = "window", session: str = "s") -> list[int]:
    return [i for i, _ in ranker.search(query, session_id=session, key=key, limit=20)]


def test_windows_follow_appends_redactions_and_clear_markers(tmp_path: Path) -> None:
    with EventStore(tmp_path / "live.db") as store:
        ranker = SessionRanker(store, radius=1)
        a = store.append("prompt", "I signed up for a class!", session_id="s", role="user")
        assert ids(ranker, "pottery") == []
        # the next turn reaches back into a's window, without a rebuild
        b = store.append("response", "Pottery? Nice", session_id="s", role="assistant")
        assert set(ids(ranker, "pottery")) == {a.id, b.id}
        assert ids(ranker, "pottery", key="turn") == [b.id]
        assert ranker.builds == 1
        # a clear marker is a wall: c's window does not reach b
        store.append("clear", "history cleared", session_id="s", role="system")
        c = store.append("prompt", "Anyway, the weather", session_id="s", role="user")
        assert c.id not in ids(ranker, "pottery")
        assert ids(ranker, "weather") == [c.id]
        # other sessions and other kinds are not searched
        store.append("prompt", "pottery pottery", session_id="t", role="user")
        assert set(ids(ranker, "pottery")) == {a.id, b.id}
        # a redaction drops the word from every window that held it
        store.redact(b.id, reason="test")
        assert ids(ranker, "pottery") == []
        assert ranker.builds == 2
        # query syntax is plain words
        for query in ('"pottery', "AND OR NOT", "class*", "-(", "NEAR(a b)"):
            ranker.search(query, session_id="s")


def test_forget_and_compaction_drop_erased_words(tmp_path: Path) -> None:
    with EventStore(tmp_path / "erase.db") as store:
        ranker = SessionRanker(store)
        a = store.append("prompt", "my secret is zanzibar", session_id="s", role="user")
        store.append("response", "noted", session_id="s", role="assistant")
        assert ids(ranker, "zanzibar", key="turn") == [a.id]
        store.forget(event_ids=[a.id], reason="asked")
        assert ids(ranker, "zanzibar", key="turn") == []
        assert ids(ranker, "zanzibar") == []
        old = store.append("prompt", "old talk about quokkas", session_id="s", role="user")
        assert ids(ranker, "quokkas", key="turn") == [old.id]
        store.set_digests([(old.id, "talked about an animal", ["animal"], "heuristic")])
        store.compact(older_than="0s")
        assert ids(ranker, "quokkas", key="turn") == []
        assert ids(ranker, "animal", key="turn") == [old.id]


def test_sessions_are_bounded_and_recall_uses_the_ranker(tmp_path: Path) -> None:
    with EventStore(tmp_path / "many.db") as store:
        for n in range(5):
            store.append("prompt", f"topic number{n} kayak", session_id=f"s{n}", role="user")
        ranker = SessionRanker(store, max_sessions=2)
        for n in range(5):
            assert len(ids(ranker, "kayak", session=f"s{n}")) == 1
        assert len(ranker._sessions) == 2
        recaller = Recaller(store)
        assert recaller.session_ranker is not None
        hits = recaller.recall("kayak", k=3, session_id="s3", mode="keyword")
        assert [h.event.session_id for h in hits] == ["s3"]
        assert recaller.session_ranker.builds == 1
        plain = Recaller(store, session_ranker=False)
        assert plain.session_ranker is None
        assert [
            h.event.id for h in plain.recall("kayak", k=3, session_id="s3", mode="keyword")
        ] == [h.event.id for h in hits]


def test_incremental_windows_equal_a_fresh_build(tmp_path: Path) -> None:
    """After every append (turns and clear markers in a random order), the windows kept up
    to date incrementally hold exactly the terms of windows built from scratch."""
    import random

    rng = random.Random(4)
    words = "apple boat cider dune ember fjord grove harbor island jetty kelp".split()
    with EventStore(tmp_path / "inc.db") as store:
        live = SessionRanker(store, radius=2)
        for step in range(60):
            if rng.random() < 0.1:
                store.append("clear", "history cleared", session_id="s", role="system")
            else:
                kind = rng.choice(TURNS)
                text = " ".join(rng.sample(words, 3))
                store.append(kind, text, session_id="s", role="user")
            live.search("apple", session_id="s")
            if step % 10 == 9:
                fresh = SessionRanker(store, radius=2)
                fresh.search("apple", session_id="s")
                mine, theirs = live._sessions["s"].windows, fresh._sessions["s"].windows
                assert mine.docs.keys() == theirs.docs.keys()
                for event_id, doc in theirs.docs.items():
                    assert [(c.counts, c.size) for c in mine.docs[event_id].columns] == [
                        (c.counts, c.size) for c in doc.columns
                    ]
                assert mine.postings == theirs.postings
        assert live.builds == 1


def test_postings_hold_each_documents_weighted_counts(tmp_path: Path) -> None:
    """The scoring pass reads a token's weighted count and a document's length from the
    postings, not the document: after a build and after appends that rewrite windows, they
    equal what each document's columns give with the key's usual weights."""
    with EventStore(tmp_path / "post.db") as store:
        ingest(store, chat(2))
        ranker = SessionRanker(store)
        sessions = sorted({e.session_id for e in store.events(kinds=TURNS)})[:3]

        def check() -> None:
            for session_id in sessions:
                ranker.search("pottery class", session_id=session_id)
                held = ranker._sessions[session_id]
                for index in (held.turns, held.windows):
                    expected: dict[str, dict[int, float]] = defaultdict(dict)
                    for event_id, doc in index.docs.items():
                        assert index.lengths[event_id] == doc.length
                        for column in doc.columns:
                            for token in column.counts:
                                expected[token][event_id] = doc.hits(token, index.weights)
                    assert index.postings == expected
                    assert index.lengths.keys() == index.docs.keys()

        check()
        for session_id in sessions:
            store.append(
                "prompt", "Pottery class moved to Friday, bring clay", session_id=session_id
            )
            store.append(
                "response", "Friday pottery works: clay, clay, clay", session_id=session_id
            )
        check()
        assert ranker.builds == len(sessions)


def reference_bm25(
    docs: dict[int, list[tuple[float, list[str]]]], query: str, limit: int, *, window: bool
) -> list[tuple[int, float]]:
    """FTS5's BM25 written out plainly, with nothing of the ranker's bookkeeping: ``docs``
    maps an id to its ``(weight, tokens)`` columns; the query's words are read as each
    key's index is queried (the AND of the word's terms - on the window key less
    stopwords, pmm.text.window_keys.window_query_terms - each term scored with its own
    document frequency, as FTS5's bm25() does) and picked as the ranker picks
    them (the session's rarest; those in half the documents or more only when no other
    word is left)."""
    from pmm.storage.terms import pick_terms
    from pmm.text.window_keys import window_query_terms
    from pmm.text.words import search_terms

    def occurrences(tokens: list[str], phrase: tuple[str, ...]) -> int:
        n = len(phrase)
        return sum(1 for i in range(len(tokens) - n + 1) if tuple(tokens[i : i + n]) == phrase)

    def freq(doc: int, phrase: tuple[str, ...]) -> float:
        return sum(weight * occurrences(tokens, phrase) for weight, tokens in docs[doc])

    def holds(doc: int, phrase: tuple[str, ...]) -> bool:  # every term, anywhere
        return all(any(t in tokens for _, tokens in docs[doc]) for t in phrase)

    n = len(docs)
    read = window_query_terms if window else fts_tokens
    phrases = {w: tuple(read(w)) for w in search_terms(query) if read(w)}
    holding = {w: [d for d in docs if holds(d, p)] for w, p in phrases.items()}
    df = {w: len(ids) for w, ids in holding.items()}
    present = sorted(holding, key=lambda w: (df[w] == 0, df[w]))
    terms = pick_terms(present, n, df.__getitem__)
    used = [w for w in terms.words if df[w]]
    if not used or n == 0:
        return []
    if terms.common:
        return [(i, 0.0) for i in sorted(holding[used[0]], reverse=True)[:limit]]
    avgdl = sum(1 + sum(len(t) for _, t in cols) for cols in docs.values()) / n
    scores: dict[int, float] = defaultdict(float)
    for word in [w for w in used if 2 * df[w] < n] or used:
        phrase = phrases[word]
        parts = [(df[word], phrase)]
        if len(phrase) > 1:
            parts = [(sum(holds(d, (t,)) for d in docs), (t,)) for t in phrase]
        for count, part in parts:
            idf = max(math.log((n - count + 0.5) / (count + 0.5)), 1e-6)
            for doc in holding[word]:
                f = freq(doc, part)
                length = 1 + sum(len(t) for _, t in docs[doc])
                if f:
                    scores[doc] += idf * f * 2.2 / (f + 1.2 * (1 - 0.75 + 0.75 * length / avgdl))
    ranked = sorted(scores.items(), key=lambda p: (p[1], p[0]), reverse=True)
    return ranked[:limit]


SPLIT_WORDS = (
    "Ma'am, the e-mail comes at five o'clock",
    "The clock in the hall is slow, I am sure",
    "O is my favourite letter, ma'am",
    "Five o'clock it is",
)


def test_scores_equal_an_independent_bm25(tmp_path: Path) -> None:
    """Both keys, ids and scores, against the formula written out over documents built
    from the log's text (window bodies as the full-text index holds them, by
    pmm.text.window_keys.window_bodies; tokens by fts_tokens), on chats
    appended turn by turn with clear markers, searched as they grow (the incremental path)
    and once more by a fresh ranker (a full build); plain words and words FTS5 splits."""
    import random

    from pmm.text.window_keys import WindowRow, date_words, window_bodies

    rng = random.Random(11)
    data = chat(2)
    sessions = [s for c in data["conversations"] for s in c["sessions"]][:12]
    with EventStore(tmp_path / "ref.db") as store:
        live = SessionRanker(store)
        checked = split = 0

        def check(ranker: SessionRanker, session_id: str, query: str, weight: float) -> None:
            nonlocal checked, split
            rows = store.events(session_id=session_id, kinds=(*TURNS, "clear"))
            turns = [e for e in rows if e.kind in TURNS]
            texts = window_bodies(
                [WindowRow(e.id, e.kind, e.content) for e in rows], 2, {e.id for e in turns}
            )
            turn_docs = {e.id: [(1.0, fts_tokens(e.content or ""))] for e in turns}
            window_docs = {
                e.id: [(1.0, fts_tokens(texts[e.id])), (weight, fts_tokens(date_words(e.ts[:10])))]
                for e in turns
            }
            searches = [("turn", turn_docs, query), ("window", window_docs, query)]
            searches.append(("window", window_docs, "o'clock ma'am"))  # ANDs of terms
            for key, docs, words in searches:
                mine = ranker.search(
                    words, session_id=session_id, key=key, limit=15, date_weight=weight
                )
                theirs = reference_bm25(docs, words, 15, window=key == "window")
                assert [i for i, _ in mine] == [i for i, _ in theirs], (key, words)
                assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], rel=1e-12)
                checked += len(mine)
                split += words.startswith("o'clock") and bool(mine)

        for session in sessions:
            words = " ".join(t["text"] for t in session["turns"]).split()
            for n, turn in enumerate(session["turns"]):
                role = "user" if turn["role"] == "user" else "assistant"
                store.append(
                    "prompt" if role == "user" else "response",
                    turn["text"],
                    session_id=session["id"],
                    role=role,
                    ts=turn.get("date") or session.get("date"),
                )
                if rng.random() < 0.05:
                    store.append("clear", "history cleared", session_id=session["id"])
                if rng.random() < 0.2:  # words FTS5 splits; their terms apart, too
                    text = rng.choice(SPLIT_WORDS)
                    store.append("response", text, session_id=session["id"])
                if n % 4 == 3:
                    query = " ".join(rng.sample(words, min(4, len(words))))
                    query += " o'clock ma'am e-mail"
                    check(live, session["id"], query, rng.choice((1.0, 3.0)))
        fresh = SessionRanker(store)
        for question in data["questions"][:40]:
            check(fresh, rng.choice(sessions)["id"], question["question"], 1.0)
        assert checked > 500 and split > 20


def test_writes_bring_the_index_up_to_date_and_other_processes_are_seen(tmp_path: Path) -> None:
    """A Mind's own appends reach its session ranker at the write (a read then finds
    nothing new to index); turns another process appends are read at the next search."""
    import subprocess
    import sys

    from pmm import Mind

    path = tmp_path / "mind.db"
    with Mind(str(path), max_tokens=60) as mind:
        for n in range(20):
            mind.remember_turn(f"filler talk number {n} about weather", "ok", session_id="s")
        first = mind.remember("the kayak trip is in June", role="user", session_id="s")
        mind.context("s", "kayak")  # builds the recaller and reads the session
        ranker = mind._get_recaller().session_ranker
        assert ranker is not None and ranker.builds == 1
        user, _ = mind.remember_turn("my kayak is red", "noted", session_id="s")
        held = ranker._sessions["s"]
        assert held.max_id == user.id + 1  # indexed by the write, before any search
        assert ranker.search("kayak", session_id="s", key="turn") == ranker.search(
            "kayak", session_id="s", key="turn"
        )
        assert {i for i, _ in ranker.search("kayak", session_id="s", key="turn")} == {
            first.id,
            user.id,
        }
        script = (
            "import sys; from pmm.storage.sqlite import EventStore\n"
            "with EventStore(sys.argv[1]) as s:\n"
            "    print(s.append('prompt', 'another kayak, a blue one', session_id='s',"
            " role='user').id)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
        )
        other = int(done.stdout)
        assert held.max_id < other
        # the next write does not follow the last id seen: the session reads the log
        mind.remember_turn("and a green paddle", "ok", session_id="s")
        assert ranker._sessions["s"].max_id == other + 2
        found = {i for i, _ in ranker.search("kayak", session_id="s", key="turn")}
        assert found == {first.id, user.id, other}
        for n in range(5):  # taken as given, as a fresh build reads them
            mind.remember_turn(f"kayak lesson {n}", "fun", session_id="s")
        fresh = SessionRanker(store := mind.store)
        fresh.search("kayak", session_id="s")
        mine, theirs = ranker._sessions["s"], fresh._sessions["s"]
        assert mine.max_id == theirs.max_id == store.last_id()
        for key in ("turns", "windows"):
            assert getattr(mine, key).postings == getattr(theirs, key).postings
            assert getattr(mine, key).lengths == getattr(theirs, key).lengths
        # another connection appends between this process's append and its upkeep call
        ours = mind.store.append_many([NewEvent("prompt", "kayak club", "s", "user")])
        with EventStore(path) as elsewhere:
            theirs_id = elsewhere.append("prompt", "kayak race", session_id="s").id
        ranker.appended(ours)
        found = {i for i, _ in ranker.search("kayak", session_id="s", key="turn")}
        assert {ours[0].id, theirs_id} <= found
        assert ranker.builds == 1
