"""Fixtures shared by the recall tests that watch which thread searches the vectors."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt
import pytest

from pmm.embed.index import VectorIndex


@pytest.fixture
def searching_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that search the in-memory vectors, as they do."""
    threads: list[str] = []
    unit = VectorIndex._unit  # the first step of every search

    def noted(self: VectorIndex, query_vec: npt.ArrayLike) -> npt.NDArray[np.float32]:
        threads.append(threading.current_thread().name)
        return unit(self, query_vec)

    monkeypatch.setattr(VectorIndex, "_unit", noted)
    return threads
