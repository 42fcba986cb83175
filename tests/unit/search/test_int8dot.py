"""The int8 product on onnxruntime: exact int32 results at the edges of both operands' ranges."""

from __future__ import annotations

import numpy as np
import pytest

from foldgate.search.int8dot import ZERO_POINT, open_int8_dot


@pytest.mark.parametrize("rows", [1, 7, 300, 1029])
def test_products_are_exact_for_every_row_and_the_extreme_codes(rows: int) -> None:
    """Any drop, misplacement or saturation of a product shows as a difference from int64 numpy."""
    rng = np.random.default_rng(rows)
    codes = rng.integers(-128, 128, size=(rows, 40), dtype=np.int8)
    codes[0] = 127
    codes[-1] = -128
    dot = open_int8_dot(codes)
    assert dot is not None
    queries = rng.integers(1, 128, size=(5, 40), dtype=np.uint8)
    queries[0] = 127  # the largest query row against the largest codes: the saturation edge
    queries[1] = 1
    got = dot(queries)
    want = (queries.astype(np.int64) - ZERO_POINT) @ codes.astype(np.int64).T
    assert got.dtype == np.int32
    assert np.array_equal(got, want)


def test_no_product_over_no_rows() -> None:
    assert open_int8_dot(np.zeros((0, 8), dtype=np.int8)) is None


def test_a_kernel_that_disagrees_with_numpy_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build-time check is what makes the screen's bound a proof; a wrong kernel must fail it."""
    from foldgate.search import int8dot

    real = int8dot.Int8Dot.__call__

    def off_by_one(self: int8dot.Int8Dot, rows: np.ndarray) -> np.ndarray:
        return real(self, rows) + 1

    monkeypatch.setattr(int8dot.Int8Dot, "__call__", off_by_one)
    assert open_int8_dot(np.ones((3, 8), dtype=np.int8)) is None
