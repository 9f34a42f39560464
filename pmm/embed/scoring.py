"""The vector arithmetic of :class:`pmm.embed.index.VectorIndex`: sign bits and Hamming
distances for the first pass over a big matrix, and dot products sliced over a few threads.

    bits = sign_bits(matrix).T.copy()                 # one row per 64-bit word
    near = hamming(bits, sign_bits(query[None])[0])   # differing signs per vector
    scores = similarities(matrix, query, pool=None)   # matrix @ query, float32
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


PARALLEL_MIN = 1 << 22
"""Matrices of at least this many floats (about 11,000 vectors of 384) are scored in
several threads."""
WORKERS = max(1, min(4, os.cpu_count() or 1))

QUANTIZED_MIN = 20_000
"""Candidate sets of at least this many vectors are searched by sign bits first (below it
the exact float32 scan costs under 2 ms anyway)."""
SHORTLIST_MIN = 4_000
"""The bit pass keeps at least this many candidates for exact scoring (about 0.6 ms)."""
SHORTLIST_PER_K = 80
"""... and at least this many per result asked for."""


def sign_bits(vectors: FloatArray) -> npt.NDArray[np.uint64]:
    """One bit per dimension (1 where the value is > 0), packed into 64-bit words per row."""
    rows, dim = vectors.shape
    words = -(-dim // 64)
    packed = np.zeros((rows, words * 8), dtype=np.uint8)
    packed[:, : -(-dim // 8)] = np.packbits(vectors > 0, axis=1)
    return packed.view(np.uint64)


def hamming(bits: npt.NDArray[np.uint64], query_bits: npt.NDArray[np.uint64]) -> IdArray:
    """Bits that differ between each column of ``bits`` (one row per 64-bit word, one
    column per vector: word by word over contiguous memory is ten times faster than
    summing short rows) and ``query_bits``."""
    # summed in 16 bits (half the memory traffic of 64) where no count can pass 65,535
    total: npt.NDArray[np.unsignedinteger[Any] | np.signedinteger[Any]] = np.zeros(
        bits.shape[1], dtype=np.uint16 if bits.shape[0] <= 1023 else np.int64
    )
    differ = np.empty(bits.shape[1], dtype=np.uint64)
    counts = np.empty(bits.shape[1], dtype=np.uint8)
    for word in range(bits.shape[0]):
        np.bitwise_xor(bits[word], query_bits[word], out=differ)
        np.bitwise_count(differ, out=counts)
        total += counts
    return total.astype(np.int64, copy=False)


def similarities(
    matrix: FloatArray, query: FloatArray, pool: ThreadPoolExecutor | None
) -> FloatArray:
    """``matrix @ query``, computed by numpy's einsum in the calling thread (and, for a big
    matrix, in ``pool``'s threads, on slices), not by OpenBLAS: OpenBLAS's worker threads
    keep spinning after each call and, measured on a 2-core machine, made the next query
    embedding by torch twice as slow. einsum releases the GIL, so the slices run in
    parallel; the work is memory-bound, so a few threads are enough."""
    rows = matrix.shape[0]
    out = np.empty(rows, dtype=np.float32)
    if pool is None or matrix.size < PARALLEL_MIN:
        np.einsum("ij,j->i", matrix, query, out=out)
        return out
    step = -(-rows // WORKERS)
    parts = [
        pool.submit(np.einsum, "ij,j->i", matrix[lo : lo + step], query, out=out[lo : lo + step])
        for lo in range(0, rows, step)
    ]
    for part in parts:
        part.result()
    return out


def nearest_by_bits(
    bits: npt.NDArray[np.uint64], query: FloatArray, keep: int, usable: BoolArray | None
) -> IdArray:
    """Positions (columns of ``bits``) of the ``keep`` vectors whose sign bits are nearest
    ``query``'s, in ascending order; with ``usable``, only positions where it is True."""
    distance = hamming(bits, sign_bits(query.reshape(1, -1))[0])
    if usable is not None:
        distance[~usable] = np.iinfo(np.int64).max
    keep = min(keep, distance.shape[0])
    if keep < distance.shape[0]:
        near = np.argpartition(distance, keep - 1)[:keep]
    else:
        near = np.arange(distance.shape[0])
    if usable is not None:
        near = near[usable[near]]
    near.sort()
    return near
