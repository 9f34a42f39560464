"""The published chain suite (:mod:`pmm.testing.conformance.chains`) on SQLite and
PostgreSQL (the chains are the same SQL on the pgvector build: not run a third time)."""

from __future__ import annotations

from pathlib import Path

import pytest
from in_tree_backends import in_tree_backend

from pmm.testing import Backend
from pmm.testing.conformance.chains import *  # noqa: F403


@pytest.fixture(params=["sqlite", "postgres"])
def pmm_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return in_tree_backend(str(request.param), request, tmp_path)
