"""Deterministic stand-ins the suite gives PMM where a model would be: two embedders.

    Mind(target, enable_embeddings=True, embedder=WordHashEmbedder())

Both map a text to the normalised sum of its words' fixed random directions (seeded by
the word's CRC-32), so texts that share words are close, on every run and machine.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pmm.text.words import words


class WordHashEmbedder:
    """Each word (PMM's own word split) maps to a fixed random direction; a text without
    a word gets the first axis."""

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


class HashEmbedder:
    """A bag of whitespace-split words (CRC-32 of each word seeds its direction)."""

    model_name = "test/hash"
    dim = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                seed = zlib.crc32(word.encode())
                out[row] += np.random.default_rng(seed).standard_normal(self.dim)
            out[row, 0] += 1e-3
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out
