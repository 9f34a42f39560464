"""The learned fusion (pmm/recall/rerank.py): its features, its ranking, and recall through it in
a real Mind (issue 22: a user's own question, even asked twice, no longer outranks the fact
it asks about)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmm import Mind
from pmm.recall.recaller import Recaller
from pmm.recall.rerank import (
    FEATURES,
    LEARNED_COEFFICIENTS,
    RANKED,
    candidate_features,
    is_question_turn,
    query_dates,
    query_names,
    query_terms,
    rerank,
    turn_terms,
)


def test_names_and_questions() -> None:
    assert query_names("When did Caroline go to the LGBTQ support group?") == {
        "caroline",
        "lgbtq",
    }
    assert query_names("What is Jon's favorite style of dance?") == {"jon"}
    assert query_names("Would Melanie's kids like it?") == {"melanie"}
    assert query_names("where do I live?") == frozenset()
    assert is_question_turn("Ann: What's my dog's name?")
    assert is_question_turn("Cool! Who took it? [shares a photo of a dog]")
    assert not is_question_turn("Ann: I have a dog named Bolt.")
    assert not is_question_turn("Is it? No, it was Bolt.")


def test_features_of_known_candidates() -> None:
    rankings = {"turn": [7, 3], "window": [3, 9], "dense": [9]}
    texts = {7: "Ann: What's my dog's name?", 3: "Bob: Ann has a dog named Bolt.", 9: "Bob: ok"}
    sessions = {7: "s1", 3: "s1", 9: "s2"}
    ids, rows = candidate_features(
        query_names("Is Ann's dog Bolt?"), rankings, texts, sessions, temporal=True, coverage=0.25
    )
    assert ids == [7, 3, 9]
    f = {i: dict(zip(FEATURES, row, strict=True)) for i, row in zip(ids, rows, strict=True)}
    assert f[7]["turn_rr60"] == pytest.approx(60 / 61) and f[7]["window_rr60"] == 0.0
    assert f[3]["turn_rr5"] == pytest.approx(5 / 7) and f[3]["window_rr5"] == pytest.approx(5 / 6)
    assert f[9]["dense_rr60"] == pytest.approx(60 / 61)
    assert f[9]["lowcov_dense"] == pytest.approx(0.75 * 60 / 61)
    assert f[3]["temporal_window"] == pytest.approx(60 / 61)
    assert (f[7]["question_turn"], f[3]["question_turn"]) == (1.0, 0.0)
    # "Ann" and "Bolt" are named; turn 9 names neither
    assert (f[3]["names_match"], f[9]["names_match"], f[9]["names_miss"]) == (1.0, 0.0, 1.0)
    # session s1 holds the turn and window mass of 7 and 3, s2 only 9's window rank
    s1 = 1 / 61 + 1 / 62 + 1 / 61
    assert f[3]["session_share"] == 1.0
    assert f[9]["session_share"] == pytest.approx((1 / 62) / s1)


def test_a_question_is_answered_when_a_told_turn_holds_its_query_words() -> None:
    """The measured (not shipped) lever of bench/locomo.py --cv (learned: ranks + question)."""
    texts = {1: "What's my dog's name?", 2: "Is your cat ok?", 3: "I have a dog named Bolt.",
             4: "What is the dog's name and age?"}  # fmt: skip
    rankings = {"turn": [1, 2, 3, 4]}
    terms = query_terms("dog name")
    assert terms == {"dog", "name"}
    ids, rows = candidate_features(frozenset(), rankings, texts, {}, temporal=False,
                                   coverage=1.0, query_term_set=terms)  # fmt: skip
    answered = {
        i: row[FEATURES.index("question_answered")] for i, row in zip(ids, rows, strict=True)
    }
    # 1 holds "dog" and "name", as 3 does ("named"); 2 holds no query word; 3 tells
    assert answered == {1: 1.0, 2: 0.0, 3: 0.0, 4: 1.0}
    _, unread = candidate_features(frozenset(), rankings, texts, {}, temporal=False, coverage=1.0)
    assert all(row[FEATURES.index("question_answered")] == 0.0 for row in unread)


def test_rerank_orders_by_the_coefficients() -> None:
    rankings = {"turn": [7, 3]}
    texts = {7: "What's my dog's name?", 3: "I have a dog named Bolt."}
    plain = rerank("dog", rankings, texts, {}, temporal=False, coverage=1.0,
                   coefficients={"turn_rr60": 1.0})  # fmt: skip
    assert [i for i, _ in plain] == [7, 3]
    demoted = rerank("dog", rankings, texts, {}, temporal=False, coverage=1.0,
                     coefficients={"turn_rr60": 1.0, "question_turn": -0.5})  # fmt: skip
    assert [i for i, _ in demoted] == [3, 7]


LOG = [
    ("user", "I live in Zürich."), ("assistant", "Noted."),
    ("user", "I have a dog named Bolt."), ("assistant", "Noted."),
    ("user", "I work as a nurse."), ("assistant", "Noted."),
    ("user", "What's my dog's name?"), ("assistant", "I'm offline."),
]  # fmt: skip


@pytest.mark.skipif(not LEARNED_COEFFICIENTS.get("keyword"), reason="no learned keyword fusion")
@pytest.mark.parametrize(
    ("session", "old_first"), [("u", "What's my dog's name?"), (None, "I have a dog named Bolt.")]
)
def test_a_question_no_longer_outranks_the_fact(
    tmp_path: Path, session: str | None, old_first: str
) -> None:
    """Issue 22: ``pmm search dog`` listed "What's my dog's name?" above "I have a dog
    named Bolt."; keyword recall's learned fusion demotes a turn that only asks."""
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        for role, text in LOG:
            mind.remember(text, role=role, session_id="u")
        found = [h.event.content for h in mind.recall("dog", k=3, session_id=session)]
        assert found[0] == "I have a dog named Bolt."
        # the weighted RRF (recall before the learned fusion) put the question first in
        # the session (its in-memory ranker), the fact first across sessions
        old = Recaller(mind.store, learned=False).recall("dog", k=3, session_id=session)
        assert old[0].event.content == old_first


@pytest.mark.parametrize("session", ["u", None])
def test_a_question_asked_twice_no_longer_leads(tmp_path: Path, session: str | None) -> None:
    """Issue 22: asked twice, the question's two turns filled each other's window key and
    took two ranks, and the fact came third. Repeats do not reinforce now
    (tests/recall/test_repeats.py): the fact leads and the question is shown once."""
    with Mind(str(tmp_path / "m.db"), enable_embeddings=False) as mind:
        for role, text in [*LOG, *LOG[-2:]]:
            mind.remember(text, role=role, session_id="u")
        found = [h.event.content for h in mind.recall("dog", k=3, session_id=session)]
        assert found[0] == "I have a dog named Bolt."
        assert found.count("What's my dog's name?") == 1


def _rerank_by_rows(
    query: str,
    rankings: dict[str, list[int]],
    texts: dict[int, str],
    sessions: dict[int, str],
    dates: dict[int, str],
    temporal: bool,
    coverage: float,
    coefficients: dict[str, float],
    session_ranks: dict[str, dict[str, int]] | None = None,
) -> list[tuple[int, float]]:
    """The learned fusion as it was written before its fast path: every feature row of
    candidate_features, scored by the coefficients in the order of FEATURES."""
    ids, rows = candidate_features(
        query_names(query), rankings, texts, sessions, temporal=temporal, coverage=coverage,
        dates=dates, query_date_set=query_dates(query), query_term_set=query_terms(query),
        session_ranks=session_ranks,
    )  # fmt: skip
    weights = [float(coefficients.get(f, 0.0)) for f in FEATURES]
    scored = [
        (sum(w * x for w, x in zip(weights, row, strict=True)), -max(row[:3]), -i, i)
        for i, row in zip(ids, rows, strict=True)
    ]
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    return [(i, s) for s, _, _, i in scored]


TURNS = [
    "Caroline: I went to the LGBTQ support group yesterday.", "Melanie: What's Jon's dog called?",
    "Jon: My dog is called Bolt, he is 3.", "Gina: We went camping in June 2023!",
    "Melanie: Caroline's painting sold on 1 February. [shares a photo of a painting]",
    "Jon: ok", "Caroline: Did you see it? [shares a photo of a beach]",
    "Gina: my cat's name is Pixel and she's old", "Jon: Melanie-Ann's kids are in Zürich.",
]  # fmt: skip
QUERIES = [
    "When did Caroline go to Jon's LGBTQ support group?", "What is the dog's name?",
    "What did Gina find on 1 February, 2023?", "When did Melanie go camping in June?",
    "dog", "Would Melanie-Ann's kids like Zürich?", "May I ask when we met?",
]  # fmt: skip


@given(
    query=st.sampled_from(QUERIES),
    order=st.permutations(range(60)),
    cut=st.tuples(*(st.integers(0, 60) for _ in range(3))),
    temporal=st.booleans(),
    coverage=st.floats(0.0, 1.0),
    mode=st.sampled_from([*LEARNED_COEFFICIENTS, "all"]),
    session_order=st.tuples(*(st.permutations(["s0", "s1", "s2", "s3"]) for _ in range(2))),
    ranked=st.tuples(st.integers(0, 4), st.integers(0, 4)),
)
def test_rerank_scores_as_the_feature_rows_do_to_the_bit(
    query: str,
    order: list[int],
    cut: tuple[int, int, int],
    temporal: bool,
    coverage: float,
    mode: str,
    session_order: tuple[list[str], list[str]],
    ranked: tuple[int, int],
) -> None:
    """The fast path of rerank() computes only the weighted features: its scores and order
    are those of candidate_features' rows, exactly (LoCoMo's figures must not move)."""
    coefficients = (
        {f: (n % 7 - 3) / 3.0 for n, f in enumerate(FEATURES)}  # every feature weighs
        if mode == "all"
        else LEARNED_COEFFICIENTS[mode]
    )
    rankings = {
        ranker: order[n * 7 : n * 7 + c]
        for n, (ranker, c) in enumerate(zip(RANKED, cut, strict=True))
    }
    rankings["digest"] = order[:5]  # not a feature: ignored by both
    texts = {i: TURNS[i % len(TURNS)] for i in range(60)}
    sessions = {i: f"s{i % 4}" for i in range(60)}
    dates = {i: f"2023-{i % 12 + 1:02d}-{i % 28 + 1:02d}T10:00:00" for i in range(0, 60, 2)}
    # each session ranker ranks some of the sessions (the others unranked)
    session_ranks = {
        r: {s: n for n, s in enumerate(o[:c], start=1)}
        for r, o, c in zip(("stemmed", "dense"), session_order, ranked, strict=True)
    }
    # the term share and length read from a cache for some candidates (one of them stale:
    # another text's entry, computed again), from the text for the others
    cached = {i: turn_terms(texts[i]) for i in range(0, 60, 3)}
    cached[3] = turn_terms("an older text of turn 3")
    fast = rerank(query, rankings, texts, sessions, temporal=temporal, coverage=coverage,
                  coefficients=coefficients, dates=dates, session_ranks=session_ranks,
                  cached=cached)  # fmt: skip
    rows = _rerank_by_rows(query, rankings, texts, sessions, dates, temporal, coverage,
                           dict(coefficients), session_ranks)  # fmt: skip
    assert [i for i, _ in fast] == [i for i, _ in rows]
    assert [s for _, s in fast] == [s for _, s in rows]
