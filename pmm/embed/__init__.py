"""Embeddings for semantic recall: text in, float32 vectors out, batched; no database access.

    from pmm.embed import build_embedder
    embedder = build_embedder(settings)          # loads the model once per process
    vectors = embedder.embed(["I moved to Lisbon"])   # np.ndarray (n, dim), float32, unit norm
"""

from __future__ import annotations

from .base import Embedder

__all__ = ["Embedder"]
