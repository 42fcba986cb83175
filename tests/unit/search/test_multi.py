"""Multi-intent retrieval: single needs pass straight through; several needs each reach the page."""

from __future__ import annotations

from collections.abc import Callable, Collection

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foldgate.model.tool import Tool
from foldgate.search import SearchHit, build_search_index
from foldgate.search.multi import (
    IntentHits,
    MultiIntentSearcher,
    intent_ranks,
    search_with_intents,
)


class CountingSearcher:
    """Records every query it is asked, answers from a fixed table (query → keys)."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[str] = []

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        self.calls.append(query)
        keys = [k for k in self.table.get(query, []) if allowed is None or allowed(k)]
        return [SearchHit(k, 1.0 / (i + 1)) for i, k in enumerate(keys[:limit])]


def test_a_single_need_is_the_inner_search_unchanged() -> None:
    inner = CountingSearcher({"list issues": ["gh:list_issues", "gh:get_issue"]})
    searcher = MultiIntentSearcher(inner)
    page, groups = searcher.search_intents("list issues", limit=5)
    assert page == inner.search("list issues", limit=5)
    assert groups == []
    assert inner.calls == ["list issues", "list issues"]  # one search for the wrapper, one above


def test_each_need_gets_its_best_tool_on_the_first_ranks(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    query = "Read the file notes.txt, then post a message to the team channel and open a new issue"
    hits, groups = MultiIntentSearcher(index).search_intents(query, limit=3)
    assert {h.key for h in hits} == {"filesystem:read_file", "slack:send_message", "github:create_issue"}
    # Each need was searched on its own and found its tool first.
    assert [(g.intent, g.hits[0].key) for g in groups] == [
        ("Read the file notes.txt", "filesystem:read_file"),
        ("post a message to the team channel", "slack:send_message"),
        ("open a new issue", "github:create_issue"),
    ]


def test_hidden_tools_never_reach_the_page_through_any_need(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    query = "Read the file notes.txt, then post a message to the team channel"
    page = MultiIntentSearcher(index).search(
        query, limit=10, allowed=lambda key: not key.startswith("slack:")
    )
    assert page
    assert all(not h.key.startswith("slack:") for h in page)


def test_scores_are_fused_ranks_scaled_to_the_best() -> None:
    inner = CountingSearcher({"create a branch": ["git:branch", "git:log"], "open a pull request": ["gh:pr"]})
    page = MultiIntentSearcher(inner, whole_weight=0).search("create a branch and open a pull request")
    assert [h.key for h in page] == ["git:branch", "gh:pr", "git:log"]
    assert page[0].score == 1.0
    assert page[1].score == 1.0  # each need's first hit ties at the top
    assert 0 < page[2].score < 1.0


def test_intent_ranks_give_each_need_the_positions_of_its_page_tools() -> None:
    page = [SearchHit("a:x", 1.0), SearchHit("b:y", 0.9), SearchHit("c:z", 0.5)]
    groups = [
        IntentHits("first need", [SearchHit("b:y", 3.0), SearchHit("a:x", 2.0), SearchHit("d:w", 1.0)]),
        IntentHits("second need", [SearchHit("d:w", 1.0)]),
    ]
    # 1-based page positions in page order, only page tools, and a need without a page tool is kept
    # empty (search it again).
    assert intent_ranks(page, groups) == [("first need", [1, 2]), ("second need", [])]


def test_intent_ranks_name_only_each_needs_own_best_tools() -> None:
    """On a long page each need names only its own first few tools: its deeper hits would list most
    of the page again and cost tokens without telling the agent anything."""
    page = [SearchHit(f"s:t{i}", 1.0) for i in range(12)]
    own = [SearchHit(f"s:t{i}", 1.0) for i in (11, 9, 7, 5, 3, 1, 0)]
    assert intent_ranks(page, [IntentHits("need", own)], per_need=3) == [("need", [8, 10, 12])]
    assert intent_ranks(page, [IntentHits("need", own)]) == [("need", [4, 6, 8, 10, 12])]


def test_search_with_intents_on_a_plain_searcher_shows_no_needs() -> None:
    inner = CountingSearcher({"create a branch and open a pull request": ["git:branch"]})
    page, groups = search_with_intents(inner, "create a branch and open a pull request", limit=3)
    assert [h.key for h in page] == ["git:branch"]
    assert groups == []


def test_no_page_for_a_non_positive_limit() -> None:
    inner = CountingSearcher({})
    assert MultiIntentSearcher(inner).search_intents("a and then b c", limit=0) == ([], [])
    assert inner.calls == []


# Pieces that exercise every splitting rule: sentence ends, connectives, brackets, quotes, CJK.
_PIECES = [*"ab .,;?!\n()\"'", "then ", "and ", "read ", "file ", "文件"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(_PIECES), max_size=60).map("".join))
def test_hostile_requests_never_raise_and_keep_the_page_bounded(tiny_catalog: list[Tool], text: str) -> None:
    page = MultiIntentSearcher(build_search_index(tiny_catalog)).search(text, limit=3)
    assert len(page) <= 3
    assert len({h.key for h in page}) == len(page)
    # A single-need request keeps the inner scores; a split one gets fused scores in (0, 1].
    assert all(h.score > 0 for h in page)


class BatchRecorder(CountingSearcher):
    """A searcher with the hybrid searcher's batched entry point, recording what it was asked."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        super().__init__(table)
        self.batches: list[tuple[list[str], set[int]]] = []

    def search_many(
        self,
        queries: list[str],
        *,
        limit: int = 10,
        allowed: Callable[[str], bool] | None = None,
        lexical_only: Collection[int] = (),
    ) -> list[list[SearchHit]]:
        self.batches.append((list(queries), set(lexical_only)))
        return [self.search(q, limit=limit, allowed=allowed) for q in queries]


def test_the_whole_request_is_searched_lexically_by_default() -> None:
    """Each need is searched hybrid; the whole request (last, at half weight) only lexically: its
    embedding was the longest encode of a request and measured worse than BM25 for this role."""
    query = "create a branch and open a pull request"
    default = BatchRecorder({})
    MultiIntentSearcher(default).search(query)
    assert default.batches == [(["create a branch", "open a pull request", query], {2})]
    embedded = BatchRecorder({})
    MultiIntentSearcher(embedded, whole_dense=True).search(query)
    assert embedded.batches == [(["create a branch", "open a pull request", query], set())]
