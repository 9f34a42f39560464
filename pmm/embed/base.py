"""The interface every embedding backend implements, and :func:`embed_texts`, the one way
PMM calls it (a backend's failure comes back redacted)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from pmm.errors import BackendError, PMMError
from pmm.models.redact import error_text


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dim`` dimensions.

    ``model_name`` identifies the model in the ``embeddings`` table, so vectors of two
    models are never mixed in one search. Both may be plain attributes or properties (a
    backend may load its model on first use of ``dim``).

        vectors = embedder.embed(["I moved to Lisbon", "Where do I live?"])
        vectors.shape == (2, embedder.dim)   # float32, each row of norm 1
    """

    @property
    def model_name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """``embedder.embed(texts)`` as an array; a failure of a backend that is not PMM's own
    becomes :class:`~pmm.errors.BackendError` whose message is redacted
    (:func:`pmm.models.redact.error_text`: an embedding service may echo its API key) and
    whose cause is dropped, so neither a log line nor a traceback shows the key."""
    try:
        return np.asarray(embedder.embed(texts), dtype=np.float32)
    except PMMError:
        raise
    except Exception as exc:
        detail = error_text(exc, embedder)
    raise BackendError(f"the embedder {embedder.model_name!r} failed: {detail}") from None
