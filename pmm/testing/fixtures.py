"""The fixtures every conformance module builds on, all from the root fixture
``pmm_backend`` (a :class:`pmm.testing.Backend`) that the host test suite defines.

    log_target   a fresh, empty store's target; Mind, PMMStore and the CLI open it with
                 the backend's own opener
    log          that store, open (closed after the test)
    new_log      a callable making another fresh store's target per call
    raw_sql      the backend's ``sql`` (statements on its tables behind PMM's back);
                 a test that asks for it is skipped when the backend gives none
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from pmm.storage import EventLog
from pmm.testing.backend import Backend, SqlRunner, route_targets

__all__ = ["log", "log_target", "new_log", "raw_sql"]


@pytest.fixture
def new_log(pmm_backend: Backend, monkeypatch: pytest.MonkeyPatch) -> Callable[[], str]:
    """Makes a fresh, empty store per call (one per hypothesis example) and returns its
    target."""
    route_targets(pmm_backend, monkeypatch)
    return pmm_backend.fresh


@pytest.fixture
def log_target(new_log: Callable[[], str]) -> str:
    """Where a fresh, empty log of the backend under test lives."""
    return new_log()


@pytest.fixture
def log(pmm_backend: Backend, log_target: str) -> Iterator[EventLog]:
    """The fresh store at ``log_target``, opened by the backend; closed after the test."""
    store = pmm_backend.connect(log_target)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def raw_sql(pmm_backend: Backend) -> SqlRunner:
    """The backend's ``sql``; the test is skipped, saying why, when it has none."""
    if pmm_backend.sql is None:
        pytest.skip(
            f"backend {pmm_backend.name!r} gives no SQL access to its tables (Backend.sql):"
            " this test tampers with the rows behind PMM's back"
        )
    return pmm_backend.sql
