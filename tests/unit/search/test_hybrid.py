"""Query time of hybrid search: fusion, visibility, fallbacks, hostile queries, the real model."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from foldgate.model.tool import Tool
from foldgate.search import SearchIndex, build_search_index
from foldgate.search.dense import DenseIndex, build_dense_index, dense_text
from foldgate.search.embed import EmbeddingError, NoEmbedder, Vector
from foldgate.search.hybrid import DEFAULT_WEIGHT, HybridSearcher, _Visible
from tests.unit.search.fakes import FakeEmbedder, local_model


def _searcher(
    catalog: list[Tool], provider: Any = None, **kwargs: Any
) -> tuple[HybridSearcher, SearchIndex, DenseIndex]:
    provider = provider or FakeEmbedder()
    lexical = build_search_index(catalog)
    dense = build_dense_index(provider, catalog)
    assert dense is not None
    return HybridSearcher(lexical, dense, provider, **kwargs), lexical, dense


def test_hybrid_mode_and_hit_shape(tiny_catalog: list[Tool]) -> None:
    searcher, lexical, _ = _searcher(tiny_catalog)
    assert searcher.mode == "hybrid"
    assert searcher.weight == DEFAULT_WEIGHT
    hits = searcher.search("read the contents of a file", limit=3)
    assert len(hits) == 3
    assert hits[0].key == "filesystem:read_file"
    assert all(0 < h.score <= 1 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.key for h in hits} <= set(lexical.keys)


def test_weight_zero_is_lexical_and_one_is_dense(tiny_catalog: list[Tool]) -> None:
    lexical_only, lexical, _ = _searcher(tiny_catalog, weight=0.0)
    assert lexical_only.mode == "lexical"
    query = "list the open issues"
    assert lexical_only.search(query) == lexical.search(query)
    provider = FakeEmbedder()
    dense_only, _, dense = _searcher(tiny_catalog, provider, weight=1.0)
    assert dense_only.mode == "dense"
    qv = provider.encode(query)
    by_cosine = sorted(range(len(dense)), key=lambda i: (-float(dense.matrix[i] @ qv), i))
    assert [h.key for h in dense_only.search(query, limit=5)] == [dense.keys[i] for i in by_cosine[:5]]


def test_rrf_fusion_is_available(tiny_catalog: list[Tool]) -> None:
    searcher, _, _ = _searcher(tiny_catalog, fusion="rrf")
    hits = searcher.search("commit the changes", limit=4)
    assert hits[0].key == "git:git_commit"


def test_dense_rows_are_aligned_by_key(tiny_catalog: list[Tool]) -> None:
    provider = FakeEmbedder()
    lexical = build_search_index(tiny_catalog)
    # The dense index lists the tools in another order and lacks one: alignment is by key.
    dense = build_dense_index(provider, list(reversed(tiny_catalog[1:])))
    assert dense is not None
    searcher = HybridSearcher(lexical, dense, provider, weight=1.0)
    hits = searcher.search(dense_text(tiny_catalog[5]), limit=len(tiny_catalog))
    assert hits[0].key == tiny_catalog[5].key
    assert tiny_catalog[0].key not in {h.key for h in hits}


# ---- visibility -------------------------------------------------------------------------------


def test_allowed_filters_before_the_page_is_cut(tiny_catalog: list[Tool]) -> None:
    searcher, _, _ = _searcher(tiny_catalog)
    asked: list[str] = []

    def only_git(key: str) -> bool:
        asked.append(key)
        return key.startswith("git:")

    hits = searcher.search("show the repository issues and commits", limit=3, allowed=only_git)
    assert len(hits) == 3
    assert all(h.key.startswith("git:") for h in hits)
    assert searcher.search("anything", allowed=lambda key: False) == []
    # The predicate is asked at most once per tool and query.
    assert len(asked) == len(set(asked))


def test_a_hidden_tool_cannot_move_visible_scores(tiny_catalog: list[Tool]) -> None:
    query = "send a message to the team channel"
    hidden = "slack:send_message"
    provider = FakeEmbedder()
    lexical = build_search_index(tiny_catalog)
    base = build_dense_index(provider, tiny_catalog)
    assert base is not None
    # The same catalog, but the hidden tool's vector is now exactly the query's: the best cosine
    # of the whole catalog, which would stretch every visible score if it were normalised over.
    i = base.keys.index(hidden)
    codes = np.rint(base.matrix / np.abs(base.matrix).max(axis=1, keepdims=True) * 127).astype(np.int8)
    qv = provider.encode(query)
    codes[i] = np.rint(qv / np.abs(qv).max() * 127).astype(np.int8)
    scales = np.abs(base.matrix).max(axis=1).astype(np.float32)
    scales[i] = float(np.abs(qv).max())
    skewed = DenseIndex(
        provider=base.provider,
        model_id=base.model_id,
        keys=base.keys,
        hashes=base.hashes,
        codes=codes,
        scales=scales,
    )

    def visible(key: str) -> bool:
        return key != hidden

    pages = [
        HybridSearcher(lexical, dense, provider).search(query, limit=len(tiny_catalog), allowed=visible)
        for dense in (base, skewed)
    ]
    assert pages[0] == pages[1]
    assert hidden not in {h.key for h in pages[0]}
    # The test has teeth: unfiltered, the skewed vector does move the other tools' scores.
    unfiltered = [
        {h.key: h.score for h in HybridSearcher(lexical, dense, provider).search(query, limit=20)}
        for dense in (base, skewed)
    ]
    assert any(unfiltered[0][k] != unfiltered[1][k] for k in unfiltered[0] if k != hidden)


def test_every_visible_tool_can_fill_a_big_page(tiny_catalog: list[Tool]) -> None:
    searcher, _, _ = _searcher(tiny_catalog, weight=1.0, pool=2)
    hits = searcher.search("file", limit=100, allowed=lambda key: key.startswith("filesystem:"))
    assert {h.key for h in hits} <= {t.key for t in tiny_catalog if t.server == "filesystem"}
    assert hits


# ---- fallbacks --------------------------------------------------------------------------------


def test_no_dense_index_or_another_model_is_lexical(tiny_catalog: list[Tool]) -> None:
    lexical = build_search_index(tiny_catalog)
    none = HybridSearcher(lexical, None, NoEmbedder())
    assert none.mode == "lexical"
    assert "no dense index" in none.reason
    dense = build_dense_index(FakeEmbedder(model_id="old"), tiny_catalog)
    assert dense is not None
    other = HybridSearcher(lexical, dense, FakeEmbedder(model_id="new"))
    assert other.mode == "lexical"
    assert "'old'" in other.reason
    assert other.search("create an issue") == lexical.search("create an issue")


def test_provider_failure_at_query_time_answers_lexically(tiny_catalog: list[Tool]) -> None:
    provider = FakeEmbedder()
    searcher, lexical, _ = _searcher(tiny_catalog, provider)

    class Broken(FakeEmbedder):
        def encode(self, text: str) -> Vector:
            raise EmbeddingError("service down")

    class Odd(FakeEmbedder):
        def encode(self, text: str) -> Vector:
            return np.full(3, np.nan, dtype=np.float32)

    for bad in (Broken(), Odd()):
        searcher._provider = bad
        allowed = lambda key: key != "github:create_issue"  # noqa: E731
        assert searcher.search("create an issue", allowed=allowed) == lexical.search(
            "create an issue", allowed=allowed
        )
    assert searcher.fallbacks == 2


@pytest.mark.parametrize(
    "query",
    ["", "   ", "?!*&^%", "x" * 100_000, "日本語のテキスト", "a\ud800b", "\x00", "word " * 20_000, None, 42],
)
def test_hostile_queries_never_raise(tiny_catalog: list[Tool], query: Any) -> None:
    searcher, _, _ = _searcher(tiny_catalog)
    hits = searcher.search(query, limit=5)
    assert len(hits) <= 5
    assert searcher.search(query, limit=0) == []
    assert searcher.search(query, limit=-3) == []


def test_punctuation_only_has_no_meaning_to_embed(tiny_catalog: list[Tool]) -> None:
    provider = FakeEmbedder()
    searcher, _, _ = _searcher(tiny_catalog, provider)
    provider.calls.clear()
    assert searcher.search("?!?") == []
    assert provider.calls == []


def test_empty_catalog(tiny_catalog: list[Tool]) -> None:
    searcher, _, _ = _searcher([])
    assert searcher.search("read a file") == []


# ---- the real model on a tiny handmade catalog --------------------------------------------------


@pytest.fixture
def real_hybrid(tiny_catalog: list[Tool]) -> tuple[HybridSearcher, SearchIndex]:
    model = local_model()
    lexical = build_search_index(tiny_catalog)
    dense = build_dense_index(model, tiny_catalog)
    assert dense is not None
    hybrid = HybridSearcher(lexical, DenseIndex.from_doc(dense.to_doc()), model)
    assert hybrid.mode == "hybrid"
    return hybrid, lexical


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("browse what is in this folder", "filesystem:list_directory"),
        ("which rooms exist in our workspace", "slack:list_channels"),
        ("post a note to the team chat", "slack:send_message"),
        ("propose merging my feature branch", "github:create_pull_request"),
        ("erase a document", "filesystem:delete_file"),
    ],
)
def test_real_model_ranks_by_meaning(
    real_hybrid: tuple[HybridSearcher, SearchIndex], query: str, expected: str
) -> None:
    hybrid, _ = real_hybrid
    assert hybrid.search(query, limit=3)[0].key == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [("chat rooms available", "slack:list_channels"), ("look at a single bug report", "github:get_issue")],
)
def test_real_model_answers_where_no_word_matches(
    real_hybrid: tuple[HybridSearcher, SearchIndex], query: str, expected: str
) -> None:
    hybrid, lexical = real_hybrid
    assert lexical.search(query) == []
    assert expected in [h.key for h in hybrid.search(query, limit=3)]


def test_real_model_reembeds_only_changed_tools(tiny_catalog: list[Tool]) -> None:
    model = local_model()
    dense = build_dense_index(model, tiny_catalog)
    assert dense is not None
    changed = [dataclasses.replace(tiny_catalog[0], description="Open a new issue."), *tiny_catalog[1:]]
    again = build_dense_index(model, changed, dense.reusable_for(model))
    assert again is not None
    assert (again.encoded, again.reused) == (1, len(tiny_catalog) - 1)


def test_a_hidden_tool_cannot_move_a_visible_tools_name_boost() -> None:
    # Same length and document frequencies, different strength of match: only the hidden tool changes.
    def index_with(hidden_description: str) -> SearchIndex:
        visible = Tool(server="a", name="create_issue", description="Open a ticket in the tracker.")
        hidden = Tool(server="b", name="tracker_tool", description=hidden_description)
        return build_search_index([visible, hidden])

    def only_visible(key: str) -> bool:
        return key == "a:create_issue"

    strong = index_with("issue create issue create").search("create_issue", allowed=only_visible)
    weak = index_with("issue create other words").search("create_issue", allowed=only_visible)
    assert [h.key for h in strong] == [h.key for h in weak] == ["a:create_issue"]
    assert strong[0].score == weak[0].score


@pytest.mark.parametrize(
    "query", ["read the contents of a file", "git_commit", "create issue", "list the open issues", "zzz"]
)
def test_the_vectorised_lexical_signal_is_the_index_score(tiny_catalog: list[Tool], query: str) -> None:
    """Hybrid adds BM25F up term at a time in numpy; it must score exactly what the index scores
    (name boosts included), or fusion would rank differently from the lexical engine it builds on."""
    searcher, lexical, _ = _searcher(tiny_catalog)
    for allowed in (None, lambda key: not key.startswith("git:")):
        expected = lexical.scores(query, allowed=allowed)
        visible = _Visible(list(lexical.keys), allowed)
        acc, docs = searcher._lexical_vector(query, visible)
        assert sorted(docs.tolist()) == sorted(expected)
        for doc, score in expected.items():
            assert acc[doc] == pytest.approx(score, rel=1e-12)


def test_search_many_answers_each_query_as_search_does(tiny_catalog: list[Tool]) -> None:
    """The needs of one request are scored in one matrix product; each page is what a search of
    that need alone returns, whatever else is in the batch (punctuation, a failing need)."""
    searcher, _, _ = _searcher(tiny_catalog)
    queries = ["read the contents of a file", "?!", "commit the changes", "open a pull request"]
    for allowed in (None, lambda key: key != "filesystem:read_file"):
        pages = searcher.search_many(queries, limit=4, allowed=allowed)
        assert pages == [searcher.search(q, limit=4, allowed=allowed) for q in queries]
    assert searcher.search_many(["x"], limit=0) == [[]]


def test_search_many_answers_lexical_only_queries_without_encoding_them(tiny_catalog: list[Tool]) -> None:
    """A query marked lexical-only is never encoded and gets exactly the lexical index's page; the
    others are hybrid as usual (the multi-intent wrapper marks the whole request so)."""
    provider = FakeEmbedder()
    searcher, lexical, _ = _searcher(tiny_catalog, provider)
    queries = ["read the contents of a file", "commit the changes and open a pull request"]
    expected_hybrid = searcher.search(queries[0], limit=4)
    provider.calls.clear()
    pages = searcher.search_many(queries, limit=4, lexical_only={1})
    assert provider.calls == [queries[0]]
    assert pages == [expected_hybrid, lexical.search(queries[1], limit=4)]
