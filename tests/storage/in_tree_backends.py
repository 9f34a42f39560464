"""PMM's own backends as the published suite's root fixture wants them (a
:class:`pmm.testing.Backend`): a SQLite file per call, or a new database per call in the
session's throwaway PostgreSQL cluster (``pg_cluster``) or in the one with pgvector
(``pgvector_cluster``); see tests/storage/conftest.py."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pg_cluster import PostgresCluster

from pmm.testing import Backend
from pmm.testing.sql import run_sql

NAMES = ("sqlite", "postgres", "pgvector")
_counter = itertools.count()


def new_database(cluster: PostgresCluster) -> str:
    """A URL of a new, empty database in ``cluster``."""
    import psycopg

    name = f"pmm_test_{next(_counter)}"
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return cluster.url.rsplit("/", 1)[0] + "/" + name


def in_tree_backend(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The backend ``name`` (one of :data:`NAMES`); the cluster starts on first use."""
    if name == "sqlite":
        return Backend(name, lambda: str(tmp_path / f"pmm{next(_counter)}.db"), sql=run_sql)
    cluster: PostgresCluster = request.getfixturevalue(
        "pgvector_cluster" if name == "pgvector" else "pg_cluster"
    )
    return Backend(name, lambda: new_database(cluster), sql=run_sql)
