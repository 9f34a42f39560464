"""Fixtures for the embedding tests: a store in a temporary file, and a small deterministic
embedder (hashed bag of words) for tests about storage and search rather than meaning."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pmm.storage.sqlite import EventStore
from pmm.testing.doubles import WordHashEmbedder


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with EventStore(tmp_path / "pmm.db") as s:
        yield s


@pytest.fixture
def make_embedder() -> Callable[..., WordHashEmbedder]:
    return WordHashEmbedder
