"""VectorRows: the arrays behind the vector index grow, shrink and find rows by id."""

from __future__ import annotations

import numpy as np

from pmm.embed.matrix import VectorRows
from pmm.embed.scoring import sign_bits


def _row(event_id: int, values: list[float]) -> tuple[int, bytes]:
    return event_id, np.asarray(values, dtype=np.float32).tobytes()


def test_rows_are_stored_normalised_with_their_sign_bits_and_ids() -> None:
    rows = VectorRows(dim=2)
    rows.add([_row(3, [3.0, 4.0]), _row(5, [0.0, 0.0]), _row(8, [-1.0, 0.0])])
    assert rows.n == 3 and rows.held.tolist() == [3, 5, 8]
    assert np.allclose(rows.matrix[:3], [[0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]])
    assert (rows.bits[:, :3] == sign_bits(rows.matrix[:3]).T).all()
    assert rows.id_sum == 16
    assert rows.nbytes() == 3 * (2 * 4 + 8)


def test_growing_past_the_capacity_keeps_every_row() -> None:
    rows = VectorRows(dim=3)
    first = [_row(i, [float(i), 1.0, -1.0]) for i in range(1, 1500)]
    rows.add(first)
    rows.add([_row(5000 + i, [1.0, float(i), 0.5]) for i in range(3000)])
    assert rows.n == 4499 and len(rows.ids) >= 4499
    assert rows.held[:1499].tolist() == list(range(1, 1500))
    expected = np.asarray([1499.0, 1.0, -1.0]) / np.linalg.norm([1499.0, 1.0, -1.0])
    assert np.allclose(rows.matrix[1498], expected)


def test_rows_of_finds_held_ids_only() -> None:
    rows = VectorRows(dim=2)
    assert rows.rows_of(np.array([1])).tolist() == []
    rows.add([_row(2, [1, 0]), _row(4, [0, 1]), _row(9, [1, 1])])
    assert rows.rows_of(np.array([9, 1, 4, 4, 10])).tolist() == [1, 2]


def test_remove_keeps_the_others_in_order_and_returns_the_mask() -> None:
    rows = VectorRows(dim=2)
    rows.add([_row(2, [1, 0]), _row(4, [0, 1]), _row(9, [-1, 0])])
    keep = rows.remove(np.array([1]))
    assert keep.tolist() == [True, False, True]
    assert rows.held.tolist() == [2, 9] and rows.id_sum == 11
    assert np.allclose(rows.matrix[:2], [[1, 0], [-1, 0]])
    assert (rows.bits[:, :2] == sign_bits(rows.matrix[:2]).T).all()
