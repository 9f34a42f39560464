"""embed_pending and embedding_coverage over a real store file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pmm.embed.backfill import embed_pending, embedding_coverage, text_to_embed
from pmm.errors import InvalidInputError
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

TURNS = ("prompt", "response")


def fill(store: EventStore, n: int = 10) -> list[int]:
    entries = [
        NewEvent(
            "prompt" if i % 2 == 0 else "response",
            f"turn number {i} about topic{i}",
            "s1",
            "user" if i % 2 == 0 else "assistant",
        )
        for i in range(n)
    ]
    entries.append(NewEvent("event", "a tool ran", "s1", "tool"))
    return [e.id for e in store.append_many(entries)]


def test_embeds_every_pending_turn_once(
    store: EventStore, make_embedder: Callable[..., Any]
) -> None:
    ids = fill(store, 10)
    embedder = make_embedder()
    assert embed_pending(store, embedder, kinds=TURNS, batch_size=4) == 10
    assert embedder.calls == [4, 4, 2]
    stored = dict(store.embeddings(embedder.model_name))
    assert sorted(stored) == ids[:10]  # the 'event' kind is not embedded
    expected = embedder.embed([f"turn number {i} about topic{i}" for i in range(10)])
    for row, event_id in enumerate(ids[:10]):
        np.testing.assert_allclose(np.frombuffer(stored[event_id], dtype=np.float32), expected[row])
    assert embed_pending(store, embedder, kinds=TURNS) == 0


def test_summary_is_embedded_when_there_is_one(
    store: EventStore, make_embedder: Callable[..., Any]
) -> None:
    [a, b] = store.append_many(
        [
            NewEvent("prompt", "Long rambling turn that mentions Lisbon", "s", "user"),
            NewEvent("prompt", "No digest for this one", "s", "user"),
        ]
    )
    store.set_digests([(a.id, "User moved to Lisbon.", ["Lisbon"], "heuristic")])
    assert text_to_embed(store.get(a.id)) == "User moved to Lisbon."
    assert text_to_embed(store.get(b.id)) == "No digest for this one"
    embedder = make_embedder()
    embed_pending(store, embedder, kinds=TURNS)
    stored = dict(store.embeddings(embedder.model_name))
    want = embedder.embed(["User moved to Lisbon.", "No digest for this one"])
    np.testing.assert_allclose(np.frombuffer(stored[a.id], dtype=np.float32), want[0])
    np.testing.assert_allclose(np.frombuffer(stored[b.id], dtype=np.float32), want[1])


def test_limit_and_progress(store: EventStore, make_embedder: Callable[..., Any]) -> None:
    fill(store, 10)
    embedder = make_embedder()
    seen: list[tuple[int, int]] = []
    assert (
        embed_pending(
            store,
            embedder,
            kinds=TURNS,
            batch_size=3,
            limit=7,
            progress=lambda d, t: seen.append((d, t)),
        )
        == 7
    )
    assert seen == [(3, 7), (6, 7), (7, 7)]
    assert embed_pending(store, embedder, kinds=TURNS, limit=0) == 0
    assert embedding_coverage(store, embedder.model_name)["missing"] == 3


def test_redacted_events_are_not_embedded(
    store: EventStore, make_embedder: Callable[..., Any]
) -> None:
    ids = fill(store, 4)
    store.redact(ids[1], reason="test")
    embedder = make_embedder()
    assert embed_pending(store, embedder, kinds=TURNS) == 3
    assert ids[1] not in dict(store.embeddings(embedder.model_name))


def test_model_change_reembeds_and_coverage_reports_both(
    store: EventStore, make_embedder: Callable[..., Any]
) -> None:
    fill(store, 6)
    old = make_embedder("test/old", 16)
    new = make_embedder("test/new", 24)
    assert embed_pending(store, old, kinds=TURNS) == 6
    before = embedding_coverage(store, new.model_name)
    assert before == {
        "model": "test/new",
        "kinds": ["prompt", "response"],
        "vectors": 0,
        "missing": 6,
        "other_models": {"test/old": 6},
        "ignored": 6,
    }
    assert embed_pending(store, new, kinds=TURNS) == 6
    after = embedding_coverage(store, new.model_name)
    assert (after["vectors"], after["missing"], after["other_models"]) == (6, 0, {"test/old": 6})
    assert {len(v) for _, v in store.embeddings("test/new")} == {24 * 4}
    assert embedding_coverage(store, old.model_name)["other_models"] == {"test/new": 6}
    store.delete_embeddings("test/old")
    assert embedding_coverage(store, new.model_name)["ignored"] == 0


def test_bad_arguments_are_refused(store: EventStore, make_embedder: Callable[..., Any]) -> None:
    embedder = make_embedder()
    with pytest.raises(InvalidInputError, match="batch_size"):
        embed_pending(store, embedder, kinds=TURNS, batch_size=0)
    with pytest.raises(InvalidInputError, match="kinds"):
        embed_pending(store, embedder, kinds=())
    with pytest.raises(InvalidInputError, match="limit"):
        embed_pending(store, embedder, kinds=TURNS, limit=-1)
    assert embed_pending(store, embedder, kinds="prompt") == 0
