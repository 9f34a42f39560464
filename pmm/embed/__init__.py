"""Embeddings for semantic recall: text in, float32 vectors out, batched; no database access.

    from pmm.embed import build_embedder
    embedder = build_embedder(settings)          # the model loads on first use, once per process
    vectors = embedder.embed(["I moved to Lisbon"])   # np.ndarray (n, dim), float32, unit norm

``pmm.embed.index`` holds the in-memory vector search and ``pmm.embed.backfill`` embeds
what has no vector yet. Importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pmm.embed.base import Embedder

if TYPE_CHECKING:
    from pmm.settings import Settings

__all__ = ["Embedder", "build_embedder"]


def build_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings`` ask for: sentence-transformers with
    ``PMM_EMBEDDING_MODEL`` on ``PMM_DEVICE``, queries through ``PMM_QUERY_ENCODER``. It
    is built whether or not ``enable_embeddings`` is on (the caller decides that); the
    model itself loads on first use. Raises :class:`~pmm.errors.MissingDependencyError`
    when sentence-transformers is not installed."""
    from pmm.embed.sentence import SentenceEmbedder

    return SentenceEmbedder(
        settings.embedding_model, device=settings.device, query_encoder=settings.query_encoder
    )
