"""Fixtures for the embedding tests: a store in a temporary file, and a small deterministic
embedder (hashed bag of words) for tests about storage and search rather than meaning."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pmm.storage.sqlite import EventStore
from pmm.text.words import words


class WordHashEmbedder:
    """Each word maps to a fixed random direction; a text is the normalised sum of its
    words' directions. Texts that share words are close; deterministic across runs."""

    def __init__(self, model_name: str = "test/word-hash", dim: int = 32) -> None:
        self.model_name = model_name
        self.dim = dim
        self.calls: list[int] = []

    def _word(self, word: str) -> npt.NDArray[np.float32]:
        seed = zlib.crc32(f"{self.model_name}:{word}".encode())
        return np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in words(text.lower()):
                out[row] += self._word(word)
            if not out[row].any():
                out[row, 0] = 1.0
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with EventStore(tmp_path / "pmm.db") as s:
        yield s


@pytest.fixture
def make_embedder() -> Callable[..., WordHashEmbedder]:
    return WordHashEmbedder
