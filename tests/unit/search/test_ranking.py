"""Ranking behaviour on a tiny handmade catalog: names, synonyms, servers, visibility, limits."""

from __future__ import annotations

import pytest

from foldgate.model.tool import Tool
from foldgate.search import DEFAULT, SearchConfig, build_search_index


def _keys(hits: list[object]) -> list[str]:
    return [h.key for h in hits]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "query",
    [
        "create_issue",
        "createIssue",
        "create issue",
        "Create Issue",
        "github__create_issue",
        "github:create_issue",
    ],
)
def test_exact_name_in_any_spelling_ranks_first(tiny_catalog: list[Tool], query: str) -> None:
    index = build_search_index(tiny_catalog)
    assert index.search(query)[0].key == "github:create_issue"


def test_exact_name_wins_over_a_tool_that_merely_mentions_the_words(tiny_catalog: list[Tool]) -> None:
    tools = [
        *tiny_catalog,
        Tool("notes", "issue_tracker", "Create issue reports, create issue templates, issue issue issue."),
    ]
    index = build_search_index(tools)
    assert index.search("create_issue")[0].key == "github:create_issue"


def test_prefix_of_a_name_finds_the_names_it_starts(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    assert index.search("create_pull_req")[0].key == "github:create_pull_request"
    top = _keys(index.search("list_", limit=3))
    assert set(top) == {"github:list_issues", "filesystem:list_directory", "slack:list_channels"}


def test_natural_language_query_finds_the_tool(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    assert index.search("show me the logs of past commits")[0].key == "git:git_log"
    assert index.search("read the contents of a file")[0].key == "filesystem:read_file"


def test_verb_synonyms_reach_the_name(tiny_catalog: list[Tool]) -> None:
    # "erase" is in no description; the delete/remove family links it to delete_file.
    index = build_search_index(tiny_catalog)
    assert index.search("erase a file")[0].key == "filesystem:delete_file"
    plain = build_search_index(tiny_catalog, config=DEFAULT.replace(synonyms=False))
    assert "filesystem:delete_file" not in _keys(plain.search("erase", limit=5))


def test_server_aware_ranking_groups_a_strong_server() -> None:
    tools = [
        Tool("weather", "forecast", "Weather forecast for a city."),
        Tool(
            "weather",
            "alerts",
            "Severe weather alerts and warnings issued by national agencies for regions: storms, floods, "
            "heat waves and cold snaps, each with its expected severity and a short forecast.",
        ),
        Tool("maps", "geocode", "Coordinates of a city."),
        Tool("maps", "route", "Driving route between two places."),
    ]
    query = "city forecast"
    flat = _keys(build_search_index(tools).search(query))
    grouped = _keys(build_search_index(tools, config=DEFAULT.replace(server_boost=1.0)).search(query))
    assert flat == ["weather:forecast", "maps:geocode", "weather:alerts"]
    # The weather server matches strongly, so its tools rank together; non-matching tools stay out.
    assert grouped == ["weather:forecast", "weather:alerts", "maps:geocode"]


def test_allowed_filter_applies_before_the_page_is_cut() -> None:
    tools = [Tool(f"s{i % 10}", f"file_tool_{i}", f"Work with a file, variant {i}.") for i in range(200)]
    index = build_search_index(tools)
    allowed = {t.key for t in tools if t.server == "s7"}
    hits = index.search("file", limit=15, allowed=allowed.__contains__)
    assert len(hits) == 15  # a full page, although s7 holds a tenth of the matches
    assert all(h.key in allowed for h in hits)
    assert index.search("file", limit=50, allowed=allowed.__contains__) == index.search(
        "file", limit=50, allowed=allowed.__contains__
    )
    assert len(index.search("file", limit=50, allowed=allowed.__contains__)) == 20  # all there are


def test_allowed_that_rejects_everything_gives_nothing(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    assert index.search("file", allowed=lambda key: False) == []


def test_scores_are_descending_and_limit_is_honoured(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    hits = index.search("list the issues of a repository", limit=3)
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert index.search("issue", limit=0) == []
    assert index.search("issue", limit=-5) == []


def test_rank_of_scores_equals_search(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog, config=SearchConfig(server_boost=0.3))
    for query in ["open a pull request", "file", "create_issue", "channels", "nothing matches zzz"]:
        scores = index.scores(query)
        assert all(0 <= doc < len(index) for doc in scores)
        assert index.rank(scores, limit=5) == index.search(query, limit=5)


def test_duplicate_keys_keep_the_first_tool() -> None:
    tools = [Tool("s", "t", "alpha"), Tool("s", "t", "beta"), Tool("s", "u", "beta")]
    index = build_search_index(tools)
    assert len(index) == 2
    assert _keys(index.search("beta")) == ["s:u"]


def test_postings_budget_skips_only_the_commonest_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    import foldgate.search.index as index_module

    tools = [Tool("s", f"tool_{i}", "common words everywhere") for i in range(300)]
    tools.append(Tool("s", "needle", "the rare zebra tool, with common words too"))
    index = build_search_index(tools)
    monkeypatch.setattr(index_module, "_POSTINGS_BUDGET", 50)
    # "zebra" (1 posting) is scored first; "common"/"words" (301 postings each) exceed the budget.
    hits = index.search("common words zebra", limit=3)
    assert [h.key for h in hits] == ["s:needle"]
    # A query of common terms only still gets its first (rarest) term scored.
    assert len(index.search("common words", limit=5)) == 5


def test_vectorised_search_equals_a_brute_force_ranking_past_the_pool() -> None:
    """Lexical search scores in numpy and partially sorts only a pool of the matched docs; the page
    must be exactly the score map sorted by (score desc, doc), also when the pool grows because
    visibility hides most of it, and when the limit exceeds the pool."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    tools = [
        Tool(f"srv{i % 7}", f"tool_{i}", " ".join(words[j] for j in range(6) if (i >> j) & 1) + f" item {i}")
        for i in range(400)
    ]
    index = build_search_index(tools)
    keys = index.keys
    for allowed in (None, lambda key: key.endswith(("3", "7"))):
        for query, limit in (("alpha gamma item", 10), ("beta epsilon", 120), ("zeta", 400)):
            scores = index.scores(query, allowed=allowed)
            visible = [d for d in scores if allowed is None or allowed(keys[d])]
            expected = sorted(visible, key=lambda d: (-scores[d], d))[:limit]
            hits = index.search(query, limit=limit, allowed=allowed)
            assert [h.key for h in hits] == [keys[d] for d in expected]
            assert [h.score for h in hits] == [scores[d] for d in expected]
