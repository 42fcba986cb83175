"""Several queries of one request in the hybrid searcher: per-need fallbacks."""

from __future__ import annotations

from foldgate.model.tool import Tool
from foldgate.search import build_search_index
from foldgate.search.dense import build_dense_index
from foldgate.search.hybrid import HybridSearcher
from tests.unit.search.fakes import FakeEmbedder


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
