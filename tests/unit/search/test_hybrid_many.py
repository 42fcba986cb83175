"""Several queries of one request in the hybrid searcher: the blocked product and per-need fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from foldgate.model.tool import Tool
from foldgate.search import build_search_index
from foldgate.search.dense import build_dense_index
from foldgate.search.hybrid import HybridSearcher, similarities
from tests.unit.search.fakes import FakeEmbedder


@pytest.mark.parametrize("rows", [1, 7, 511, 512, 513, 1300])
@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_similarities_are_the_matrix_product_for_any_row_count(rows: int, count: int) -> None:
    """Row blocks must not drop, repeat or misplace a tool, including the last partial block."""
    rng = np.random.default_rng(rows * 10 + count)
    matrix = rng.standard_normal((rows, 24)).astype(np.float32)
    vectors = [rng.standard_normal(24).astype(np.float32) for _ in range(count)]
    got = similarities(matrix, vectors)
    assert got.shape == (count, rows)
    assert got.dtype == np.float32
    assert got.flags.c_contiguous
    for row, vec in zip(got, vectors, strict=True):
        np.testing.assert_allclose(row, matrix @ vec, rtol=1e-5, atol=1e-5)


def test_a_need_whose_encoding_fails_is_answered_lexically_and_the_others_are_not(
    tiny_catalog: list[Tool],
) -> None:
    """One failing need costs one fallback; the request's other needs keep their hybrid pages."""
    good = FakeEmbedder()
    lexical = build_search_index(tiny_catalog)
    dense = build_dense_index(good, tiny_catalog)
    assert dense is not None
    queries = ["open an issue", "commit the changes", "read the contents of a file"]
    expected = HybridSearcher(lexical, dense, good).search_many(queries, limit=4)
    failing = FakeEmbedder(fail=lambda text: text == queries[1])
    searcher = HybridSearcher(lexical, dense, failing)
    pages = searcher.search_many(queries, limit=4)
    assert pages[0] == expected[0]
    assert pages[2] == expected[2]
    assert pages[1] == lexical.search(queries[1], limit=4)
    assert searcher.fallbacks == 1
