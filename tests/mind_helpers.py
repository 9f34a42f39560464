"""Digesters used by the Mind tests (importable by the subprocesses those tests start)."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pmm.digest import Digest


class RecordingDigester:
    """Summarises a turn as ``S(<first 20 chars>)`` and records every batch it got."""

    name = "recording"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.batches: list[list[str]] = []
        self.lock = threading.Lock()

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        with self.lock:
            self.batches.append(list(texts))
        if self.delay:
            time.sleep(self.delay)
        return [
            Digest(f"S({t[:20]})", [t.split()[0]] if t.split() else [], "recording") for t in texts
        ]


class BrokenDigester:
    """Fails every time, like a backend whose server is down and nothing to fall back to."""

    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        self.calls += 1
        raise RuntimeError("summarizer is down")


class HashEmbedder:
    """A deterministic bag-of-words embedder (CRC-32 of each word seeds its direction)."""

    model_name = "test/hash"
    dim = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                seed = zlib.crc32(word.encode())
                out[row] += np.random.default_rng(seed).standard_normal(self.dim)
            out[row, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)
