"""VectorIndex: exact cosine search over a cached matrix that follows the store."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pmm.embed.index import VectorIndex
from pmm.errors import InvalidInputError
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

MODEL = "test/unit"
DIM = 8


def unit(*hot: float) -> npt.NDArray[np.float32]:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(hot)] = hot
    return v / np.linalg.norm(v)


def add(
    store: EventStore,
    vectors: Sequence[npt.NDArray[np.float32]],
    *,
    kind: str = "prompt",
    session: str = "s1",
    model: str = MODEL,
) -> list[int]:
    events = store.append_many(
        [NewEvent(kind, f"text {i}", session, "user") for i in range(len(vectors))]
    )
    store.put_embeddings(
        model,
        DIM,
        [(e.id, v.astype(np.float32).tobytes()) for e, v in zip(events, vectors, strict=True)],
    )
    return [e.id for e in events]


def test_exact_search_matches_brute_force(store: EventStore) -> None:
    rng = np.random.default_rng(7)
    data = rng.standard_normal((300, DIM)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    ids = add(store, list(data))
    index = VectorIndex(store, MODEL, DIM)
    for query in rng.standard_normal((5, DIM)).astype(np.float32):
        found = index.search(query, 10)
        expected = np.argsort(-(data @ (query / np.linalg.norm(query))))[:10]
        assert [i for i, _ in found] == [ids[j] for j in expected]
        scores = [s for _, s in found]
        assert scores == sorted(scores, reverse=True)
        assert -1.0 - 1e-5 <= scores[-1] <= scores[0] <= 1.0 + 1e-5


def test_new_vectors_are_picked_up_incrementally(store: EventStore) -> None:
    [a] = add(store, [unit(1, 0)])
    index = VectorIndex(store, MODEL, DIM)
    assert [i for i, _ in index.search(unit(0, 1), 5)] == [a]
    [b] = add(store, [unit(0, 1)])
    found = index.search(unit(0, 1), 5)
    assert [i for i, _ in found] == [b, a]
    assert found[0][1] == pytest.approx(1.0, abs=1e-6)
    assert index.reloads == 1 and len(index) == 2


def test_vectors_written_by_another_connection_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with EventStore(path) as reader, EventStore(path) as writer:
        [a] = add(writer, [unit(1, 0)])
        index = VectorIndex(reader, MODEL, DIM)
        assert [i for i, _ in index.search(unit(1, 0), 3)] == [a]
        [b] = add(writer, [unit(0, 0, 1)])
        assert [i for i, _ in index.search(unit(0, 0, 1), 1)] == [b]
        writer.redact(b, reason="test")
        assert [i for i, _ in index.search(unit(0, 0, 1), 3)] == [a]


def test_unchanged_store_is_not_read_again(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    [a, _] = add(store, [unit(1, 0), unit(0, 1)])
    index = VectorIndex(store, MODEL, DIM)
    index.search(unit(1, 0), 1, kinds=("prompt",))  # loads the vectors and the kind mask

    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the store was read although nothing changed")

    for name in ("embeddings", "embedding_stats", "last_id", "event_ids"):
        monkeypatch.setattr(store, name, must_not_run)
    for _ in range(3):
        assert [i for i, _ in index.search(unit(1, 0), 1, kinds=("prompt",))] == [a]


def test_filters_by_session_kinds_ids_and_exclusions(store: EventStore) -> None:
    [p1, p2] = add(store, [unit(1, 0), unit(1, 0.1)], session="alice")
    [r1] = add(store, [unit(1, 0.2)], kind="response", session="alice")
    [b1] = add(store, [unit(1, 0.05)], session="bob")
    [n1] = add(store, [unit(1, 0)], kind="event", session="bob")
    index = VectorIndex(store, MODEL, DIM)
    q = unit(1, 0)

    def ids(**kw: object) -> list[int]:
        return [i for i, _ in index.search(q, 10, **kw)]  # type: ignore[arg-type]

    assert set(ids()) == {p1, p2, r1, b1, n1}
    assert ids(session_id="alice") == [p1, p2, r1]
    assert ids(session_id="bob", kinds=("prompt",)) == [b1]
    assert ids(kinds=("prompt", "response")) == [p1, b1, p2, r1]
    assert ids(kinds="event") == [n1]
    assert ids(allowed_ids=[r1, b1, 999]) == [b1, r1]
    assert ids(allowed_ids=[r1, b1], session_id="alice") == [r1]
    assert ids(kinds=("prompt",), exclude_ids=[p1]) == [b1, p2]
    assert ids(session_id="alice", exclude_ids=[p1, p2]) == [r1]
    assert ids(session_id="nobody") == []
    assert ids(allowed_ids=[]) == []
    # the kind masks follow appended rows
    [p3] = add(store, [unit(1, 0.01)], session="carol")
    assert ids(kinds=("prompt", "response"))[:2] == [p1, p3]


def test_redacted_events_drop_out_without_a_reload(store: EventStore) -> None:
    [a, b, c] = add(store, [unit(1, 0), unit(1, 0.1), unit(1, 0.2)])
    index = VectorIndex(store, MODEL, DIM)
    assert len(index.search(unit(1, 0), 5, kinds=("prompt",))) == 3
    store.redact(a, reason="user asked")
    found = index.search(unit(1, 0), 5, kinds=("prompt",))
    assert [i for i, _ in found] == [b, c]
    assert index.reloads == 1
    assert a not in index.ids.tolist()


def test_deleted_and_out_of_order_vectors_trigger_a_reload(store: EventStore) -> None:
    events = store.append_many([NewEvent("prompt", f"t{i}", "s", "user") for i in range(3)])
    first, second, third = (e.id for e in events)
    store.put_embeddings(MODEL, DIM, [(third, unit(0, 1).tobytes())])
    index = VectorIndex(store, MODEL, DIM)
    assert [i for i, _ in index.search(unit(1, 0), 5)] == [third]
    # an older event embedded after a newer one: not above the newest id the index holds
    store.put_embeddings(MODEL, DIM, [(first, unit(1, 0).tobytes())])
    assert [i for i, _ in index.search(unit(1, 0), 5)] == [first, third]
    assert index.reloads == 2
    store.delete_embeddings(MODEL)
    assert index.search(unit(1, 0), 5) == []
    assert len(index) == 0
    store.put_embeddings(MODEL, DIM, [(second, unit(1, 0).tobytes())])
    assert [i for i, _ in index.search(unit(1, 0), 5)] == [second]


def test_other_models_and_wrong_sizes_are_left_out(
    store: EventStore, caplog: pytest.LogCaptureFixture
) -> None:
    [a] = add(store, [unit(1, 0)])
    add(store, [unit(1, 0)], model="test/other")
    [bad] = store.append_many([NewEvent("prompt", "bad", "s", "user")])
    store.put_embeddings(MODEL, 4, [(bad.id, np.ones(4, dtype=np.float32).tobytes())])
    index = VectorIndex(store, MODEL, DIM)
    with caplog.at_level(logging.WARNING, logger="pmm.embed.index"):
        found = index.search(unit(1, 0), 10)
    assert [i for i, _ in found] == [a]
    assert "left out of semantic search" in caplog.text
    assert index.stats()["wrong_size"] == 1
    # the wrong-size vector is counted as held: no reload on every search
    [c] = add(store, [unit(0, 1)])
    assert [i for i, _ in index.search(unit(0, 1), 1)] == [c]
    assert index.reloads == 1


def test_invalid_queries_are_refused(store: EventStore) -> None:
    add(store, [unit(1, 0)])
    index = VectorIndex(store, MODEL, DIM)
    with pytest.raises(InvalidInputError, match="dimensions"):
        index.search(np.ones(DIM + 1, dtype=np.float32), 3)
    with pytest.raises(InvalidInputError, match="non-zero"):
        index.search(np.zeros(DIM, dtype=np.float32), 3)
    assert index.search(unit(1, 0), 0) == []
    with pytest.raises(InvalidInputError, match="dim"):
        VectorIndex(store, MODEL, 0)


def test_empty_store_and_growth_past_capacity(store: EventStore) -> None:
    index = VectorIndex(store, MODEL, DIM)
    assert index.search(unit(1, 0), 3) == []
    rng = np.random.default_rng(3)
    for _ in range(3):
        add(store, list(rng.standard_normal((700, DIM)).astype(np.float32)))
        index.search(unit(1, 0), 3)
    assert len(index) == 2100
    assert index.reloads == 1
    assert index.ids.tolist() == list(range(1, 2101))


def test_big_indexes_are_scored_in_slices_with_the_same_result(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pmm.embed.scoring as scoring

    monkeypatch.setattr(scoring, "PARALLEL_MIN", 64)
    monkeypatch.setattr(scoring, "WORKERS", 3)
    rng = np.random.default_rng(11)
    data = rng.standard_normal((1000, DIM)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    ids = add(store, list(data))
    index = VectorIndex(store, MODEL, DIM)
    query = unit(1, 2, 3)
    found = index.search(query, 1000)
    assert index._pool is not None
    expected = data @ query
    assert [i for i, _ in found[:20]] == [ids[j] for j in np.argsort(-expected)[:20]]
    got = dict(found)
    np.testing.assert_allclose([got[i] for i in ids], expected, atol=1e-6)


# -- the two-pass search of big matrices: sign bits first, then exact float32 ------------


def test_sign_bits_count_the_dimensions_whose_sign_differs() -> None:
    from pmm.embed.scoring import hamming, sign_bits

    rng = np.random.default_rng(3)
    for dim in (8, 64, 100, 384):
        data = rng.standard_normal((50, dim)).astype(np.float32)
        query = rng.standard_normal(dim).astype(np.float32)
        bits = sign_bits(data)
        assert bits.dtype == np.uint64 and bits.shape == (50, -(-dim // 64))
        expected = ((data > 0) != (query > 0)).sum(axis=1)
        found = hamming(np.ascontiguousarray(bits.T), sign_bits(query[None])[0])
        assert found.tolist() == expected.tolist()


def test_two_pass_search_filters_like_the_exact_one(store: EventStore) -> None:
    """With a shortlist as big as the index, the two passes return the exact answer for
    every filter: the bit pass must respect kinds, sessions and exclusions."""
    rng = np.random.default_rng(5)
    data = rng.standard_normal((400, DIM)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    add(store, list(data[:150]), session="alice")
    add(store, list(data[150:250]), kind="response", session="bob")
    add(store, list(data[250:]), kind="event", session="bob")
    exact = VectorIndex(store, MODEL, DIM)
    two_pass = VectorIndex(store, MODEL, DIM, quantized_min=0, shortlist_min=400)
    excluded = list(range(1, 400, 3))
    for query in rng.standard_normal((4, DIM)).astype(np.float32):
        for kw in (
            {},
            {"kinds": ("prompt", "response")},
            {"kinds": "event", "exclude_ids": excluded},
            {"session_id": "bob", "kinds": ("response",)},
            {"allowed_ids": range(100, 300), "exclude_ids": excluded},
        ):
            assert two_pass.search(query, 25, **kw) == exact.search(query, 25, **kw)
    # the bits follow redactions and appends like the matrix does
    store.redact(3, reason="test")
    add(store, list(data[:20]), session="carol")
    for query in rng.standard_normal((3, DIM)).astype(np.float32):
        assert two_pass.search(query, 30) == exact.search(query, 30)
        assert 3 not in dict(two_pass.search(query, 500))


def test_two_pass_scores_are_exact_and_the_shortlist_is_used(store: EventStore) -> None:
    """A short shortlist: every score returned is the exact cosine of its event, and the
    shortlist finds most of the exact top 10 on correlated vectors."""
    dim = 64
    rng = np.random.default_rng(9)
    centres = rng.standard_normal((20, dim)).astype(np.float32)
    data = centres[rng.integers(0, 20, 3000)] + 0.6 * rng.standard_normal((3000, dim))
    data = (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)
    events = store.append_many([NewEvent("prompt", f"t{i}", "s", "user") for i in range(3000)])
    ids = [e.id for e in events]
    store.put_embeddings("m64", dim, [(i, v.tobytes()) for i, v in zip(ids, data, strict=True)])
    index = VectorIndex(store, "m64", dim, quantized_min=1000, shortlist_min=300)
    overlaps = []
    for query in data[rng.integers(0, 3000, 20)] + 0.3 * rng.standard_normal((20, dim)):
        query = (query / np.linalg.norm(query)).astype(np.float32)
        found = index.search(query, 10)
        exact = data @ query
        got = dict(found)
        np.testing.assert_allclose(
            [got[i] for i in got], [exact[i - ids[0]] for i in got], atol=1e-6
        )
        best = {ids[j] for j in np.argsort(-exact)[:10]}
        overlaps.append(len(best & set(got)) / 10)
    assert np.mean(overlaps) >= 0.9
    assert len(index.search(data[0], 2000)) == 2000  # 80 per k: the shortlist grows with k
    assert (
        len(VectorIndex(store, "m64", dim, quantized_min=0, shortlist_min=300).search(data[0], 3))
        == 3
    )


def test_a_searcher_reads_the_store_once_and_searches_as_search_does(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """searcher() reads what its scope needs now; the search it returns reads no store
    (another thread runs it in recall) and answers as search() did at that moment."""
    rng = np.random.default_rng(11)
    data = rng.standard_normal((400, DIM)).astype(np.float32)
    first = add(store, list(data[:200]), session="s1")
    add(store, list(data[200:300]), kind="response", session="s2")
    add(store, list(data[300:]), session="s2")
    queries = rng.standard_normal((4, DIM)).astype(np.float32)
    for quantized_min in (0, 10**9):  # sign bits first / exact only
        index = VectorIndex(store, MODEL, DIM, quantized_min=quantized_min, shortlist_min=50)
        for scope in ({}, {"session_id": "s2"}, {"kinds": ("prompt",)},
                      {"session_id": "s2", "kinds": ("response",)}):  # fmt: skip
            search = index.searcher(**scope)  # type: ignore[arg-type]
            with monkeypatch.context() as patched:
                patched.setattr(EventStore, "_read", _no_read)
                got = [search(q, 7, first[:3]) for q in queries]
            want = [index.search(q, 7, exclude_ids=first[:3], **scope) for q in queries]  # type: ignore[arg-type]
            assert got == want and all(len(found) == 7 for found in got)
            assert not {i for found in got for i, _ in found} & set(first[:3])
    with pytest.raises(InvalidInputError):
        index.searcher()(np.zeros(DIM), 3, ())
    assert index.searcher()(queries[0], 0, ()) == []


def _no_read(*args: object, **kwargs: object) -> None:
    raise AssertionError("the search read the store")
