"""Session ranks (pmm/recall/session_rank.py): BM25 over whole sessions checked by hand,
the cache kept in step with a real SQLite log (appends, redaction, forget), the features
lifting an answer in a real Mind, and one user's recall never reading another's session."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from pmm import Mind
from pmm.recall.recaller import Recaller
from pmm.recall.rerank import FEATURES, LEARNED_COEFFICIENTS, query_terms, turn_terms
from pmm.recall.session_rank import (
    SessionRanks,
    SessionTerms,
    session_rankers,
    stemmed_order,
    stemmed_scores,
    vector_order,
)
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore


def test_bm25_over_three_sessions_by_hand() -> None:
    sessions = {
        "s1": SessionTerms.of(["I adopted a puppy."]),
        "s2": SessionTerms.of(["Puppies chew.", "My puppy chews shoes; puppy food is pricey."]),
        "s3": SessionTerms.of(["We went hiking in Norway."]),
    }
    # distinct words, stemmed: each word once however often said ("puppy" twice: once)
    assert (sessions["s1"].counts, sessions["s1"].length) == ({"adopt": 1, "puppi": 1}, 2)
    assert sessions["s2"].counts == {"puppi": 2, "chew": 2, "shoe": 1, "food": 1, "pricei": 1}
    assert sessions["s2"].length == 7
    assert sessions["s3"].length == 3  # went, hike, norway
    avg = (2 + 7 + 3) / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # "puppi": in 2 of 3 sessions

    def bm25(tf: int, length: int) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))

    scores = stemmed_scores(sessions, {"puppi"})
    assert scores == pytest.approx({"s1": bm25(1, 2), "s2": bm25(2, 7), "s3": 0.0})
    # 1.257 * idf against 1.135 * idf: the short session wins; s3 is unranked
    assert stemmed_order(sessions, {"puppi"}) == ["s1", "s2"]
    # the rarer word weighs more: s3 (Norway, 1 of 3 sessions) first
    assert query_terms("a puppy in Norway?") == {"puppi", "norwai"}
    assert stemmed_order(sessions, query_terms("a puppy in Norway?")) == ["s3", "s1", "s2"]
    assert stemmed_order({}, {"puppi"}) == []


def test_stemmed_scores_do_not_depend_on_the_order_of_the_terms() -> None:
    # three terms whose BM25 parts sum to 0.8027455999448108 in one order and
    # ...109 in another: over a frozenset the order followed PYTHONHASHSEED
    sessions = {
        "s0": SessionTerms.of(["fox emu owl yak"]),
        "s1": SessionTerms.of(["owl dog yak fox emu cat"]),
        "s2": SessionTerms.of(["emu cat fox owl dog"]),
    }
    scores = {
        tuple(stemmed_scores(sessions, list(order)).values())
        for order in itertools.permutations(["owl", "yak", "fox"])
    }
    assert len(scores) == 1


def test_vector_order_is_the_cosine_to_the_mean_turn_vector() -> None:
    sums = {"a": np.array([2.0, 0.0]), "b": np.array([1.0, 1.0]), "none": np.zeros(2)}
    assert vector_order(sums, np.array([0.1, 1.0])) == ["b", "a"]
    assert vector_order(sums, np.array([1.0, 0.0])) == ["a", "b"]
    assert session_rankers(LEARNED_COEFFICIENTS["hybrid"]) == ("stemmed", "dense")
    assert session_rankers(LEARNED_COEFFICIENTS["keyword"]) == ("stemmed",)


def _store(tmp_path: Path) -> EventStore:
    store = EventStore(str(tmp_path / "log.db"))
    store.append_many([
        NewEvent("prompt", "I adopted a puppy named Biscuit.", "s1", "user"),
        NewEvent("response", "Lovely! Puppies need walks.", "s1", "assistant"),
        NewEvent("prompt", "We went hiking in Norway.", "s2", "user"),
        NewEvent("response", "Norway has great trails.", "s2", "assistant"),
    ])  # fmt: skip
    return store


def test_the_cache_follows_appends(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        ranks = SessionRanks(store)
        assert ranks.ranks("my puppy?", ["s1", "s2"]) == {"stemmed": {"s1": 1}}
        assert ranks.reads == 2
        # another connection appends: read at the next ranking, without rereading sessions
        with EventStore(str(tmp_path / "log.db")) as other:
            other.append("prompt", "Norway had a puppy café!", session_id="s2", role="user")
            other.append("prompt", "A zebra crossing.", session_id="s3", role="user")
            other.append("response", "Fjords and ferries.", session_id="s2", role="assistant")
        found = ranks.ranks("puppy in Norway", ["s1", "s2"])
        assert found["stemmed"] == {"s2": 1, "s1": 2}
        assert ranks.reads == 2 and "s3" not in ranks.held
        assert ranks.held["s2"].counts["puppi"] == 1
        assert ranks.held["s2"].counts["fjord"] == ranks.held["s2"].counts["ferri"] == 1
        assert ranks.ranks("zebra", ["s3", "s1"]) == {"stemmed": {"s3": 1}}
        assert ranks.reads == 3


@pytest.mark.parametrize("erase", ["redact", "forget"])
def test_erased_words_leave_the_cache(tmp_path: Path, erase: str) -> None:
    with _store(tmp_path) as store:
        secret = store.append("prompt", "My passport number is XQ77Z.", session_id="s2",
                              role="user")  # fmt: skip
        ranks = SessionRanks(store)
        assert ranks.ranks("passport XQ77Z", ["s1", "s2"]) == {"stemmed": {"s2": 1}}
        # the turn's terms for the term share and length features are held with it
        assert ranks.turns({secret.id: "s2"}) == {secret.id: turn_terms(secret.text)}
        assert "passport" in ranks.turns({secret.id: "s2"})[secret.id][1]
        if erase == "redact":
            store.redact(secret.id, reason="test")
        else:
            store.forget(event_ids=[secret.id], reason="test")
        assert ranks.ranks("passport XQ77Z", ["s1", "s2"]) == {"stemmed": {}}
        held = ranks.held
        assert all("passport" not in t.words and "xq77z" not in t.words for t in held.values())
        # erased: its terms left with it (the row is read again with no text)
        assert ranks.turns({secret.id: "s2"}) in ({}, {secret.id: turn_terms("")})
        assert ranks.ranks("Norway", ["s1", "s2"]) == {"stemmed": {"s2": 1}}


PUPPY_SESSION = [
    ("user", "We finally adopted a puppy from the shelter!"),
    ("assistant", "Congratulations! Puppies are wonderful."),
    ("user", "The puppy sleeps all day."),
    ("assistant", "That is normal at first."),
    ("user", "My kids argued for hours about it."),
    ("assistant", "Families often do."),
    ("user", "In the end his name is Biscuit."),
    ("assistant", "Lovely choice."),
]
OTHER_SESSIONS = [
    [("user", f"I forgot the name of that {thing}."), ("assistant", f"Was it {name}?")]
    for thing, name in [
        ("film", "Vertigo"), ("café", "Brew"), ("song", "Yesterday"), ("street", "Elm"),
        ("book", "Dune"), ("hotel", "Ritz"), ("teacher", "Mr Lee"), ("band", "Queen"),
        ("game", "Chess"), ("river", "Nile"), ("bakery", "Crumbs"), ("boat", "Seabird"),
    ]
]  # fmt: skip


def test_the_session_features_lift_the_answer(tmp_path: Path) -> None:
    """The answer ("his name is Biscuit") holds one of the question's words, as a dozen
    turns of other sessions do; its session is the one about the puppy, which the session
    features rank first: the answer rises above those turns."""
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        for n, turns in enumerate([*OTHER_SESSIONS[:6], PUPPY_SESSION, *OTHER_SESSIONS[6:]]):
            for role, text in turns:
                mind.remember(text, role=role, session_id=f"s{n}")
        query = "What name did we give the puppy?"
        answer = next(e.id for e in mind.store.events() if e.content == PUPPY_SESSION[6][1])
        with_sessions = [h.event.id for h in mind.recall(query, k=10, mode="keyword")]
        coefficients = {
            f: w for f, w in LEARNED_COEFFICIENTS["keyword"].items() if "session_stemmed" not in f
        }
        without = Recaller(mind.store)
        without.learned = {"keyword": coefficients}
        without_sessions = [h.event.id for h in without.recall(query, k=10, mode="keyword")]
        assert answer in with_sessions and answer in without_sessions
        assert with_sessions.index(answer) < without_sessions.index(answer)
        ranked = mind._get_recaller().session_ranks.ranks(query, [f"s{n}" for n in range(13)])
        assert ranked["stemmed"]["s6"] == 1


def test_one_users_sessions_never_rank_for_another(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        mind.remember("I adopted a puppy.", role="user", session_id="a1", user_id="alice")
        mind.remember("Nice, a puppy!", role="assistant", session_id="a1", user_id="alice")
        mind.remember("I went hiking.", role="user", session_id="a2", user_id="alice")
        # bob's thread holds every word of the question, many times
        for _ in range(3):
            mind.remember("Which puppy did Alice adopt? Alice adopted a puppy named Rex.",
                          role="user", session_id="b1", user_id="bob")  # fmt: skip
        hits = mind.recall("Which puppy did Alice adopt?", k=10, user_id="alice")
        assert hits and all(h.event.user_id == "alice" for h in hits)
        recaller = mind._get_recaller()
        assert set(recaller.session_ranks.held) <= {"a1", "a2"}
        assert "session_stemmed_rr5" in FEATURES


def test_dense_session_ranks_follow_the_vectors(tmp_path: Path) -> None:
    """The cosine of the query to each session's mean turn vector, from the vector index's
    rows (checked by hand from the embedder), cached until the vectors change."""
    from mind_helpers import HashEmbedder

    embedder = HashEmbedder()
    with Mind(str(tmp_path / "m.db"), enable_embeddings=True, embedder=embedder) as mind:
        mind.remember("puppy biscuit walks", role="user", session_id="a")
        mind.remember("boat river sail", role="user", session_id="b")
        mind.remember("boat puppy", role="user", session_id="b")
        mind.dream()
        recaller = mind._get_recaller()
        assert recaller.recall("puppy", k=5)  # the dense ranker loads the index

        def by_hand(query: str) -> list[str]:
            q = embedder.embed([query])[0]
            cos = {}
            for session in ("a", "b"):
                texts = [e.text for e in mind.store.events(session_id=session)]
                mean = embedder.embed(texts).sum(axis=0)
                cos[session] = float(mean @ q / np.linalg.norm(mean))
            return sorted(cos, key=lambda s: -cos[s])

        def ranked(query: str) -> list[str]:
            found = recaller.session_ranks.ranks(
                query, ["a", "b"], vector=embedder.embed([query])[0], index=recaller.index
            )
            return sorted(found["dense"], key=found["dense"].__getitem__)

        assert ranked("puppy biscuit") == by_hand("puppy biscuit") == ["a", "b"]
        assert ranked("boat river") == by_hand("boat river") == ["b", "a"]
        # b says "puppy biscuit" three more times: once embedded, its mean moves
        for _ in range(3):
            mind.remember("puppy biscuit", role="user", session_id="b")
        mind.dream()
        assert recaller.recall("puppy", k=5)
        assert ranked("puppy biscuit") == by_hand("puppy biscuit") == ["b", "a"]
