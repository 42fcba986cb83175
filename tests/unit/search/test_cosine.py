"""The cosine table: its screen's proven bound, exact cosines and the best docs equal to a full sort."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from foldgate.model.tool import Tool
from foldgate.search import build_search_index
from foldgate.search import cosine as cosine_module
from foldgate.search.cosine import CosineTable, top_order
from foldgate.search.dense import DenseIndex, _quantize, build_dense_index
from foldgate.search.hybrid import HybridSearcher
from tests.unit.search.fakes import FakeEmbedder


def _table(rows: int, dim: int = 48, seed: int = 0) -> tuple[CosineTable, npt.NDArray[np.float32]]:
    """A table of random unit vectors with a few duplicates (ties) and absent rows."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((rows, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[rows // 2] = vectors[rows // 3]  # the same tool twice: equal cosines, order by doc
    vectors[rows - 1] = vectors[1]
    codes, scales = _quantize(vectors)
    scales[2] = 0.0  # a tool whose embedding failed
    matrix = (codes.astype(np.float32) * (scales / np.float32(127))[:, None]).astype(np.float32)
    return CosineTable(codes, scales), matrix


def _query(dim: int, seed: int) -> npt.NDArray[np.float32]:
    vec = np.random.default_rng(1000 + seed).standard_normal(dim).astype(np.float32)
    return vec / np.float32(np.linalg.norm(vec))


def _first(allowed: Callable[[int], bool]) -> Callable[[npt.NDArray[np.intp], int], list[int]]:
    def first(order: npt.NDArray[np.intp], count: int) -> list[int]:
        return [d for d in order.tolist() if allowed(d)][:count]

    return first


def test_exact_cosines_are_the_dequantised_rows_times_the_query_rounded_once() -> None:
    table, matrix = _table(300)
    query = _query(48, 1)
    docs = np.arange(300, dtype=np.intp)
    want = (matrix.astype(np.float64) @ query.astype(np.float64)).astype(np.float32)
    assert np.array_equal(table.exact(docs, query), want)
    # A row's cosine does not depend on which other rows are asked with it.
    some = np.array([299, 5, 17], dtype=np.intp)
    assert np.array_equal(table.exact(some, query), want[some])


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_the_screen_is_within_its_bound_of_every_exact_cosine(
    integer: bool, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not integer:
        monkeypatch.setattr(cosine_module, "open_int8_dot", lambda codes: None)
    table, _ = _table(700, seed=seed)
    assert table.integer is integer
    vectors = [_query(48, seed * 10 + k) for k in range(3)]
    screens = table.screen(vectors, table.present)
    docs = np.flatnonzero(table.present)
    for screen, vec in zip(screens, vectors, strict=True):
        exact = table.exact(docs, vec).astype(np.float64)
        assert np.all(np.abs(screen.values[docs] - exact) <= screen.bound)
        assert screen.bound < 0.01  # tight enough to keep the exact step to a few rows
        assert np.all(np.isneginf(screen.values[~table.present]))


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("count", [1, 5, 50, 690, 2000])
def test_best_is_the_top_of_a_full_sort_by_exact_cosine(
    integer: bool, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Visible, present docs only; ties by doc number; fewer when fewer exist."""
    if not integer:
        monkeypatch.setattr(cosine_module, "open_int8_dot", lambda codes: None)
    table, _ = _table(700, seed=count)
    allowed: list[Callable[[int], bool]] = [lambda d: True, lambda d: d % 3 != 0]
    for k, visible in enumerate(allowed):
        query = _query(48, count + k)
        (screen,) = table.screen([query], table.present)
        docs, cosines = table.best(screen, count, _first(visible), int(table.present.sum()))
        every = np.array([d for d in range(700) if table.present[d] and visible(d)], dtype=np.intp)
        exact = table.exact(every, query)
        order = np.lexsort((every, -exact))[:count]
        assert docs.tolist() == every[order].tolist()
        assert np.array_equal(cosines, exact[order])


def test_top_order_keeps_every_tie_of_the_last_kept_value() -> None:
    values = np.array([0.5, 0.9, 0.5, 0.1, 0.5, 0.9], dtype=np.float64)
    assert top_order(values, 3).tolist() == [1, 5, 0, 2, 4]
    assert top_order(values, 10).tolist() == [1, 5, 0, 2, 4, 3]
    assert top_order(values, 0).tolist() == []


def _whole_catalog_pages(
    searcher: HybridSearcher, dense: DenseIndex, provider: FakeEmbedder, query: str, limit: int
) -> list[tuple[str, float]]:
    """The fusion as it was computed before the cosine table: over whole catalog vectors."""
    lexical = searcher._lexical
    table = dense.cosines
    vec = provider.encode(query)
    cos = table.exact(np.arange(len(dense), dtype=np.intp), vec)
    present = table.present
    masked = np.where(present, cos, np.float32(-np.inf))
    anchors = [d for d in top_order(masked, searcher.pool).tolist() if present[d]][: searcher.pool]
    fused = np.zeros(len(dense), dtype=np.float32)
    hi, lo = float(cos[anchors[0]]), float(cos[anchors[-1]])
    span = hi - lo if hi > lo else 1.0
    dn = np.clip((cos - lo) / np.float32(span), 0.0, 1.0)
    dn[~present] = 0.0
    fused += np.float32(searcher.weight) * dn
    acc, docs = lexical.score_vector(query, lambda a, d: float(a[d].max()) if len(d) else 0.0)
    if len(docs) and acc[docs].max() > 0:
        best = float(acc[docs].max())
        fused[docs] += (np.float32((1.0 - searcher.weight) / best) * acc[docs]).astype(np.float32)
    order = [d for d in top_order(fused, limit).tolist() if fused[d] > 0][:limit]
    return [(dense.keys[d], round(float(fused[d]), 6)) for d in order]


@pytest.mark.parametrize("pool", [3, 5, 50])
def test_pages_equal_the_fusion_over_whole_catalog_vectors(tiny_catalog: list[Tool], pool: int) -> None:
    """Only anchors and lexical matches can have a fused value: the sparse fusion loses no tool."""
    provider = FakeEmbedder()
    lexical = build_search_index(tiny_catalog)
    dense = build_dense_index(provider, tiny_catalog)
    assert dense is not None
    searcher = HybridSearcher(lexical, dense, provider, pool=pool)
    for query in ["read the contents of a file", "open an issue", "post to slack", "zzz unknown words"]:
        for limit in (1, 4, 14):
            got = [(h.key, h.score) for h in searcher.search(query, limit=limit)]
            assert got == _whole_catalog_pages(searcher, dense, provider, query, limit)


def test_a_dense_index_in_another_order_is_aligned_into_its_own_table(tiny_catalog: list[Tool]) -> None:
    """Rows permuted or missing relative to the lexical index: the same pages as the aligned index."""
    provider = FakeEmbedder()
    lexical = build_search_index(tiny_catalog)
    dense = build_dense_index(provider, tiny_catalog)
    shuffled = build_dense_index(provider, list(reversed(tiny_catalog)))
    assert dense is not None
    assert shuffled is not None
    aligned = HybridSearcher(lexical, dense, provider)
    permuted = HybridSearcher(lexical, shuffled, provider)
    assert permuted._table is not shuffled.cosines
    for query in ["read the contents of a file", "list the open issues"]:
        assert permuted.search(query, limit=6) == aligned.search(query, limit=6)
