"""The rows behind :class:`pmm.embed.index.VectorIndex`: unit vectors, their sign bits and
their event ids, in arrays that grow by doubling and shrink in place.

    rows = VectorRows(dim=384)
    rows.add([(7, vector_bytes), (9, other_bytes)])   # ids ascending, above every id held
    rows.rows_of(np.array([9]))                       # -> array([1])
    keep = rows.remove(np.array([1]))                 # boolean mask over the rows before
    rows.matrix[: rows.n]                             # normalised float32, one row per id

Only the arithmetic of holding rows lives here; which rows to hold (following the store,
models, redactions) is the index's business.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from pmm.embed.scoring import (
    BoolArray,
    FloatArray,
    IdArray,
    nearest_by_bits,
    sign_bits,
    similarities,
)

_CHUNK = 4096


class VectorRows:
    """``n`` vectors of ``dim`` float32 values with ascending event ids (not thread-safe:
    the index holds its lock around every call)."""

    def __init__(self, dim: int, capacity: int = 1) -> None:
        self.dim = dim
        self.matrix: FloatArray = np.zeros((max(capacity, 1), dim), dtype=np.float32)
        self.bits: npt.NDArray[np.uint64] = sign_bits(self.matrix).T.copy()
        """Sign bits, one row per 64-bit word and one column per vector (see scoring.hamming)."""
        self.ids: IdArray = np.zeros(max(capacity, 1), dtype=np.int64)
        self.n = 0
        self.id_sum = 0
        """Sum of the ids held: the index compares it with the store's fingerprint."""

    @property
    def held(self) -> IdArray:
        """The ids of the rows held (a view)."""
        return self.ids[: self.n]

    def nbytes(self) -> int:
        """Bytes of vectors and sign bits held."""
        return int(self.n * (self.dim * 4 + self.bits.shape[0] * 8))

    def add(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Append ``(event_id, float32 bytes)`` rows, each ``dim * 4`` bytes, ids ascending
        and above every id held; each vector is stored normalised (a zero vector as is)."""
        if not rows:
            return
        need = self.n + len(rows)
        if need > len(self.ids):
            self._grow(max(need, 2 * len(self.ids), 1024))
        for offset in range(0, len(rows), _CHUNK):
            chunk = rows[offset : offset + _CHUNK]
            block = np.frombuffer(b"".join(b for _, b in chunk), dtype=np.float32)
            block = block.reshape(len(chunk), self.dim)
            norms = np.linalg.norm(block, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            lo = self.n + offset
            self.matrix[lo : lo + len(chunk)] = block / norms
            self.bits[:, lo : lo + len(chunk)] = sign_bits(block).T
            self.ids[lo : lo + len(chunk)] = [i for i, _ in chunk]
        self.n = need
        self.id_sum += sum(i for i, _ in rows)

    def _grow(self, capacity: int) -> None:
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[: self.n] = self.matrix[: self.n]
        bits = np.zeros((self.bits.shape[0], capacity), dtype=np.uint64)
        bits[:, : self.n] = self.bits[:, : self.n]
        ids = np.zeros(capacity, dtype=np.int64)
        ids[: self.n] = self.ids[: self.n]
        self.matrix, self.bits, self.ids = matrix, bits, ids

    def rows_of(self, event_ids: IdArray) -> IdArray:
        """Row numbers of those ``event_ids`` that have a vector here."""
        held = self.held
        if not event_ids.size or not self.n:
            return np.zeros(0, dtype=np.int64)
        pos = np.searchsorted(held, event_ids)
        pos = np.minimum(pos, self.n - 1)
        return np.unique(pos[held[pos] == event_ids]).astype(np.int64)

    def remove(self, rows: IdArray) -> BoolArray:
        """Drop ``rows`` (row numbers), keeping the others in order; returns the mask of
        the rows kept, over the rows held before."""
        keep = np.ones(self.n, dtype=np.bool_)
        keep[rows] = False
        kept = int(keep.sum())
        held = self.held
        self.id_sum -= int(held[rows].sum())
        self.matrix[:kept] = self.matrix[: self.n][keep]
        self.bits[:, :kept] = self.bits[:, : self.n][:, keep]
        self.ids[:kept] = held[keep]
        self.n = kept
        return keep

    def search(
        self,
        query: FloatArray,
        k: int,
        *,
        candidates: IdArray | None,
        kind_mask: BoolArray | None,
        excluded: IdArray,
        quantized_min: int,
        keep: int,
        pool: ThreadPoolExecutor | None,
    ) -> list[tuple[int, float]]:
        """The ``k`` rows nearest the unit vector ``query``: ``(event_id, cosine)``, best
        first (ties: the lower id), among ``candidates`` (event ids; None: every row) where
        ``kind_mask`` (over the rows held; None: every row) is True, ``excluded`` event ids
        left out. ``quantized_min`` rows or more are shortlisted by sign bits first
        (``keep`` of them, :func:`~pmm.embed.scoring.nearest_by_bits`), then scored exactly.
        """
        held = self.held
        dropped = self.rows_of(excluded)
        rows: IdArray | None = None
        if candidates is not None:
            rows = self.rows_of(candidates)
            if kind_mask is not None:
                rows = rows[kind_mask[rows]]
            if dropped.size:
                rows = np.setdiff1d(rows, dropped)
            if not rows.size:
                return []
            if rows.size >= quantized_min:
                rows = rows[nearest_by_bits(self.bits[:, rows], query, keep, None)]
            scores = similarities(np.take(self.matrix, rows, axis=0), query, pool)
        elif self.n >= quantized_min:
            usable = None if kind_mask is None else kind_mask.copy()
            if dropped.size:
                usable = np.ones(self.n, dtype=np.bool_) if usable is None else usable
                usable[dropped] = False
            rows = nearest_by_bits(self.bits[:, : self.n], query, keep, usable)
            if not rows.size:
                return []
            scores = similarities(np.take(self.matrix, rows, axis=0), query, pool)
        else:
            scores = similarities(self.matrix[: self.n], query, pool)
            if kind_mask is not None:
                scores[~kind_mask] = -np.inf
            if dropped.size:
                scores[dropped] = -np.inf
        count = min(k, scores.shape[0])
        if count < scores.shape[0]:
            top = np.argpartition(-scores, count - 1)[:count]
        else:
            top = np.arange(scores.shape[0])
        top = top[np.isfinite(scores[top])]
        event_ids = held[top if rows is None else rows[top]]
        order = np.lexsort((event_ids, -scores[top]))
        return [(int(event_ids[i]), float(scores[top][i])) for i in order.tolist()]
