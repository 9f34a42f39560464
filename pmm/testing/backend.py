"""The backend under test, as the suite's one root fixture (``pmm_backend``) gives it.

    Backend("sqlite", new_target=lambda: str(tmp_path / f"{next(n)}.db"))
    Backend("mine", new_target=..., open=MyStore, sql=run_sql)

``new_target`` names a fresh, empty store each call (a file path, a URL: whatever the
backend's opener takes); ``open(target, **options)`` opens it, with the options PMM passes
(``window_radius``, ``max_content_bytes``, ``timeout``, ``synchronous``; a backend ignores
those it has no use for). Without ``open``, :func:`pmm.storage.open_store` opens the
target, as for PMM's own backends. ``sql`` runs one statement on the store's tables
behind PMM's back (``sql(target, statement, params)``, ``?`` placeholders), for the tests
that tamper with the rows; a backend without PMM's SQL tables leaves it out and those
tests are skipped, saying so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest

import pmm.storage
from pmm.storage import EventLog


class SqlRunner(Protocol):
    """``sql(target, statement, params)``: one statement on a store's tables, its rows."""

    def __call__(
        self, target: str, sql: str, params: tuple[Any, ...] = (), /
    ) -> list[tuple[Any, ...]]: ...


@dataclass
class Backend:
    """Where fresh stores of one backend live and how PMM opens them."""

    name: str
    new_target: Callable[[], str]
    open: Callable[..., EventLog] | None = None
    sql: SqlRunner | None = None
    issued: set[str] = field(default_factory=set, repr=False)

    def fresh(self) -> str:
        """A fresh, empty store's target, recorded so that PMM opens it with ``open``."""
        target = str(self.new_target())
        self.issued.add(target)
        return target

    def connect(self, target: str, **options: Any) -> EventLog:
        """The store at ``target``, opened the way PMM opens this backend's stores."""
        if self.open is None:
            return pmm.storage.open_store(target, **options)
        return self.open(target, **options)


def route_targets(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make PMM open the targets ``backend`` issued with its own opener, for one test.

    PMM opens a log by target through :func:`pmm.storage.open_store`, which knows SQLite
    paths and PostgreSQL URLs only: ``Mind(target)``, ``PMMStore(target)`` and the command
    line would open a SQLite file where the backend under test should be. This swaps
    ``open_store``, in ``pmm.storage`` and in every loaded PMM module that imported it,
    for one that sends the issued targets to ``backend.open`` and any other target on to
    the original. Nothing to do for a backend that ``open_store`` opens itself.
    """
    if backend.open is None:
        return
    # A module first imported during an earlier routed test kept that test's router (the
    # monkeypatch undoes only what it set): it is swapped like the original.
    original = getattr(pmm.storage.open_store, "__wrapped__", pmm.storage.open_store)

    def open_store(target: str | os.PathLike[str], **options: Any) -> EventLog:
        if str(target) in backend.issued:
            return backend.connect(str(target), **options)
        return original(target, **options)

    open_store.__wrapped__ = original  # type: ignore[attr-defined]
    for name, module in list(sys.modules.items()):
        found = getattr(module, "open_store", None)
        if (name == "pmm" or name.startswith("pmm.")) and (
            found is original or getattr(found, "__wrapped__", None) is original
        ):
            monkeypatch.setattr(module, "open_store", open_store)
