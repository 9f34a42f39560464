"""Vectors on PostgreSQL: pgvector is used when the server has it and PMM's exact search
otherwise. The test cluster answers for itself: where ``vector`` is not among its available
extensions (as on this project's machines), the detection and the fallback are tested; where
it is, the HNSW path is tested end to end."""

from __future__ import annotations

import json
import logging
import struct

import numpy as np
import psycopg
import pytest

from pmm.cli import main
from pmm.storage.postgres import PostgresEventStore, vectors


def _server_has_pgvector(url: str) -> bool:
    with psycopg.connect(url) as conn:
        found = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        return found.fetchone() is not None


def _vec(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _fill(store: PostgresEventStore) -> list[int]:
    ids = [store.append("prompt", f"turn {n}", session_id=f"s{n % 2}", role="user").id
           for n in range(4)]  # fmt: skip
    store.put_embeddings(
        "m", 3,
        [(ids[0], _vec(1, 0, 0)), (ids[1], _vec(0.9, 0.1, 0)), (ids[2], _vec(0, 1, 0)),
         (ids[3], _vec(0, 0, 1))],
    )  # fmt: skip
    return ids


def test_the_detection_matches_the_server_and_warns_once(
    pg_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    available = _server_has_pgvector(pg_url)
    monkeypatch.setattr(vectors, "_warned", False)
    with (
        caplog.at_level(logging.WARNING, logger=vectors.__name__),
        PostgresEventStore(pg_url) as first,
        PostgresEventStore(pg_url) as second,
    ):
        assert first.vector_backend == second.vector_backend
        backend, detail = first.vector_backend, first.vector_detail
        assert first.stats()["vector_search"] == detail
    warnings = [r for r in caplog.records if "pgvector is not available" in r.getMessage()]
    if available:
        assert backend == "pgvector" and detail.startswith("pgvector ") and not warnings
    else:
        assert backend == "bytea" and "not available" in detail
        assert "vector" in detail  # the server's own reason, e.g. no control file
        assert len(warnings) == 1  # two stores, one warning


def test_vector_search_on_either_path(pg_url: str) -> None:
    with PostgresEventStore(pg_url) as store:
        ids = _fill(store)
        query = struct.unpack("<3f", _vec(1, 0.05, 0))
        found = store.search_vectors("m", np.array(query, dtype=np.float32), 2)
        if store.vector_backend == "bytea":
            assert found is None  # recall searches store.embeddings() exactly instead
            assert [i for i, _ in store.embeddings("m")] == ids
            return
        assert found is not None and [i for i, _ in found] == [ids[0], ids[1]]
        assert found[0][1] == pytest.approx(1 / np.linalg.norm(query), rel=1e-5)
        scoped = store.search_vectors(
            "m", np.array(query, dtype=np.float32), 5, session_id="s1", exclude_ids=[ids[1]]
        )
        assert scoped is not None and [i for i, _ in scoped] == [ids[3]]


def test_doctor_reports_the_vector_search_in_use(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with PostgresEventStore(pg_url) as store:
        expected = f"{store.vector_backend}: {store.vector_detail}"
    assert main(["doctor", "--db", pg_url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["vector_search"] == expected and data["db_exists"]
    assert main(["doctor", "--db", pg_url]) == 0
    assert f"vector search: {expected}" in capsys.readouterr().out
