"""The interface every embedding backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


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
