"""A caller's scope of the index: ranking statistics from the tools it sees, never from hidden ones.

A scoped index must rank exactly as an index built from the visible tools alone (hits, scores and
ties), so adding or removing words in tools the caller cannot see never changes its page.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from foldgate.model.tool import Tool
from foldgate.search import IndexFormatError, SearchIndex, build_search_index
from foldgate.search.codec import pack
from foldgate.search.dense import build_dense_index
from foldgate.search.hybrid import HybridSearcher, _top_order
from foldgate.search.multi import MultiIntentSearcher
from foldgate.search.scope import FieldCounts
from tests.unit.search.conftest import _tool
from tests.unit.search.fakes import FakeEmbedder

QUERY = "forecast tides"
_FORMAT_1 = {"v", "config", "servers", "names", "doc_server", "doc_server_w", "terms", "offsets", "gaps"}
_FORMAT_1 |= {"gaps_w", "sats"}


def _visible() -> list[Tool]:
    return [
        _tool("alpha", "tool_one", "Forecast for a city, hourly."),
        _tool("alpha", "tool_two", "Tides for a harbour, hourly."),
        _tool("alpha", "tool_three", "Currency rates for a day."),
    ]


def _hidden(word: str) -> list[Tool]:
    """Another server's tools, each repeating ``word``: it lowers that word's catalog-wide idf."""
    return [_tool("beta", f"archive_{i}", f"{word} archive number {i} and more words") for i in range(6)]


def _alpha(key: str) -> bool:
    return key.startswith("alpha:")


def _page(index: SearchIndex, query: str = QUERY) -> list[tuple[str, float]]:
    return [(h.key, h.score) for h in index.search(query, limit=10, allowed=_alpha)]


def test_words_in_hidden_tools_do_not_flip_the_visible_order() -> None:
    catalogs = [_visible() + _hidden("forecast"), _visible() + _hidden("tides")]
    # The test has teeth: over the whole catalog, the hidden server's words flip the two hits.
    whole = [[k for k, _ in _page(build_search_index(c))] for c in catalogs]
    assert whole[0][:2] == ["alpha:tool_two", "alpha:tool_one"]
    assert whole[1][:2] == ["alpha:tool_one", "alpha:tool_two"]
    keys = [t.key for t in _visible()]
    scoped = [_page(build_search_index(c).scoped(keys)) for c in catalogs]
    assert scoped[0] == scoped[1] == _page(build_search_index(_visible()))


def _catalog(rng: random.Random) -> list[Tool]:
    words = ["create", "read", "list", "delete", "issue", "file", "repo", "branch", "team", "report"]
    tools = []
    for s in range(5):
        for i in range(12):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(2, 14)))
            name = f"{rng.choice(words)}_{rng.choice(words)}_{i}"
            tools.append(_tool(f"srv{s}", name, text, **{rng.choice(words): rng.choice(words)}))
    return tools


@pytest.mark.parametrize("seed", range(4))
def test_a_scope_ranks_exactly_as_an_index_of_its_tools_alone(seed: int) -> None:
    rng = random.Random(seed)
    tools = _catalog(rng)
    index = SearchIndex.from_doc(json.loads(json.dumps(build_search_index(tools).to_doc())))
    visible = [t for t in tools if rng.random() < 0.4]
    alone = build_search_index(visible)
    scoped = index.scoped([t.key for t in visible])
    for query in ["create issue", "delete the file in a repo", "list team report", "crea", "read_file_3"]:
        assert [(h.key, h.score) for h in scoped.search(query, limit=30)] == [
            (h.key, h.score) for h in alone.search(query, limit=30)
        ]


def test_the_whole_catalog_as_scope_is_the_index_itself(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    assert index.scoped([t.key for t in tiny_catalog]) is index
    provider = FakeEmbedder()
    dense = build_dense_index(provider, tiny_catalog)
    hybrid = MultiIntentSearcher(HybridSearcher(index, dense, provider))
    assert hybrid.scoped([t.key for t in tiny_catalog]) is hybrid


def test_hidden_names_do_not_crowd_visible_ones_out_of_the_prefix_boost() -> None:
    # 60 hidden names sort before the visible one: the prefix table's first 50 are all hidden.
    hidden = [_tool("alpha", f"report_a{i:02d}", "Quarterly numbers.") for i in range(60)]
    visible = [_tool("beta", "report_zeta", "Yearly summary."), _tool("beta", "summary", "Report zeta.")]
    index = build_search_index(hidden + visible)
    keys = [t.key for t in visible]
    page = [h.key for h in index.scoped(keys).search("report", limit=5)]
    assert page == [h.key for h in build_search_index(visible).search("report", limit=5)]
    assert page[0] == "beta:report_zeta"


def test_a_word_only_hidden_tools_have_takes_no_query_term_slot() -> None:
    hidden = [_tool("alpha", f"t{i}", f"word{i:02d}") for i in range(64)]
    visible = [_tool("beta", "lonely", "Finds the needle.")]
    index = build_search_index(hidden + visible)
    query = " ".join(f"word{i:02d}" for i in range(64)) + " needle"
    assert [h.key for h in index.scoped(["beta:lonely"]).search(query)] == ["beta:lonely"]


def test_an_index_stored_before_scopes_loads_but_cannot_be_scoped(tiny_catalog: list[Tool]) -> None:
    doc = build_search_index(tiny_catalog).to_doc()
    old = {k: v for k, v in doc.items() if k in _FORMAT_1}
    old["v"] = 1
    index = SearchIndex.from_doc(old)
    assert not index.scopeable
    assert index.search("create issue")[0].key == "github:create_issue"
    with pytest.raises(ValueError, match="field counts"):
        index.scoped(["github:create_issue"])
    assert SearchIndex.from_doc(doc).scopeable
    # A scope is never stored: it writes the catalog's index it derives from.
    assert build_search_index(tiny_catalog).scoped(["github:create_issue"]).to_doc() == doc


def test_hybrid_scope_ignores_hidden_words_and_never_returns_a_hidden_tool() -> None:
    provider = FakeEmbedder()
    pages = []
    for hidden_word in ("forecast", "tides"):
        tools = _visible() + _hidden(hidden_word)
        dense = build_dense_index(provider, tools)
        searcher = MultiIntentSearcher(HybridSearcher(build_search_index(tools), dense, provider))
        scoped = searcher.scoped([t.key for t in _visible()])
        # No predicate at all: the scope alone keeps hidden tools off the page.
        pages.append([(h.key, h.score) for h in scoped.search(QUERY, limit=10)])
    assert pages[0] == pages[1]
    assert pages[0]
    assert all(_alpha(k) for k, _ in pages[0])


def test_a_cut_by_rank_keeps_every_tie_so_the_order_is_a_prefix_of_the_full_order() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        values = rng.integers(0, 3, int(rng.integers(60, 400))).astype(np.float32)
        full = np.lexsort((np.arange(len(values)), -values))
        cut = _top_order(values, 50)
        assert len(cut) >= 50
        assert cut.tolist() == full[: len(cut)].tolist()


@pytest.mark.parametrize("seed", range(3))
def test_a_page_cut_inside_a_tie_lists_the_tied_tools_in_catalog_order(seed: int) -> None:
    # Three score levels in a random catalog order; the page (40) and its pool (160) both end
    # inside the middle level, whose tools tie: the page takes the first of them by catalog order.
    texts = ["widget widget gadget", "widget gizmo gadget", "widget gizmo gadget and many more words"]
    rng = random.Random(seed)
    levels = [rng.choices([0, 1, 2], [20, 300, 100])[0] for _ in range(420)]
    tools = [_tool("alpha", f"t{i:03d}", texts[level]) for i, level in enumerate(levels)]
    page = [h.key for h in build_search_index(tools).search("widget", limit=40)]
    best_first = [t.key for want in (0, 1, 2) for t, lv in zip(tools, levels, strict=True) if lv == want]
    assert page == best_first[:40]


def test_field_counts_round_trip_plain_or_sparse_at_each_rows_own_width() -> None:
    tfs = [[1, 0, 300, 2], [0, 0, 0, 1]]
    fields = FieldCounts([0, 2], tfs, [[4, 5], [70000, 6]])
    doc = json.loads(json.dumps(fields.to_doc()))
    # A row mostly zeros is stored sparse (gaps and values); a full one plain; each at its width.
    assert [row[0] for row in doc["tfs"]] == ["plain", "sparse"]
    assert doc["tfs"][0][2] == "H"
    again = FieldCounts.from_doc(doc, 4, 2)
    assert [list(r) for r in again.tfs] == tfs
    assert [list(r) for r in again.lengths] == [[4, 5], [70000, 6]]


def test_a_stored_index_whose_field_counts_do_not_fit_is_refused(tiny_catalog: list[Tool]) -> None:
    doc = build_search_index(tiny_catalog).to_doc()
    postings = len(SearchIndex.from_doc(doc)._gaps)
    # A row one posting short, a sparse row pointing past the end, and rows that are not rows.
    short = FieldCounts([0], [[1] * (postings - 1)], [[1] * len(tiny_catalog)]).to_doc()
    beyond = FieldCounts([0], [[0] * (postings - 1) + [1]], [[1] * len(tiny_catalog)]).to_doc()
    beyond["tfs"][0][1] = pack([postings], "I")
    beyond["tfs"][0][2] = "I"
    for hostile in (short, beyond, {"tfs": "not rows"}, {"tfs": [["sparse", "", "B"]]}):
        with pytest.raises(IndexFormatError):
            SearchIndex.from_doc({**doc, **hostile})
