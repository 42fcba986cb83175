"""Near-duplicate groups for neighbour-aware prompts: CRUD families of one server, the same tool on
several servers, near-identical descriptions; bounded per tool and cheap on the 11k-tool corpus."""

from __future__ import annotations

from foldgate.enrich.neighbours import DEFAULT_LIMIT, find_neighbours, name_stem
from foldgate.model.tool import Tool
from tests.conftest import corpus_path


def tool(server: str, name: str, description: str = "") -> Tool:
    return Tool(server, name, description)


def keys(found: dict[str, tuple[object, ...]], key: str) -> set[str]:
    return {f"{n.server}:{n.name}" for n in found.get(key, ())}  # type: ignore[attr-defined]


def test_name_stem_strips_the_verb_and_the_plural() -> None:
    assert name_stem("create_issue") == "issue"
    assert name_stem("listIssues") == "issue"
    assert name_stem("bulk_delete_issues") == "issue"
    assert name_stem("issue") is None
    assert name_stem("get") is None


def test_a_servers_crud_family_are_each_others_neighbours_and_another_servers_are_not() -> None:
    tools = [
        tool("gh", "create_issue", "Open a new issue in a repository."),
        tool("gh", "get_issue", "Read one issue."),
        tool("gh", "update_issues", "Change the title or body of an issue."),
        tool("gh", "get_repo", "Read a repository."),
        tool("jira", "delete_issue", "Remove a Jira ticket."),
    ]
    found = find_neighbours(tools)
    assert keys(found, "gh:create_issue") == {"gh:get_issue", "gh:update_issues"}
    assert "gh:get_repo" not in found
    assert "jira:delete_issue" not in found


def test_the_same_tool_on_several_servers_and_copied_descriptions_are_neighbours() -> None:
    text = "Fetch the current weather forecast for a city, with temperature, wind and rain for five days."
    tools = [
        tool("smithery/weather", "forecast", text),
        tool("glama/weather", "forecast", "Weather forecast."),
        tool("mcp.so/wx", "city_weather", text + " Free API."),
        tool("maps", "geocode", "Turn an address into coordinates."),
    ]
    found = find_neighbours(tools)
    assert keys(found, "smithery/weather:forecast") == {"glama/weather:forecast", "mcp.so/wx:city_weather"}
    assert keys(found, "mcp.so/wx:city_weather") == {"smithery/weather:forecast"}
    assert "maps:geocode" not in found


def test_only_restricts_the_answer_not_the_candidates() -> None:
    tools = [tool("s", "create_note"), tool("s", "delete_note"), tool("s", "get_note")]
    found = find_neighbours(tools, only={"s:get_note"})
    assert set(found) == {"s:get_note"}
    assert keys(found, "s:get_note") == {"s:create_note", "s:delete_note"}


def test_neighbours_are_bounded_per_tool_and_their_text_is_cut_short() -> None:
    tools = [tool(f"market{i}", "search", "x" * 5000 + " search the web") for i in range(300)]
    found = find_neighbours(tools, limit=3)
    assert len(found) == 300
    assert all(len(n) == 3 for n in found.values())
    assert all(len(x.description) <= 300 for n in found.values() for x in n)


def test_on_the_11k_tool_corpus_every_tool_has_at_most_the_limit_and_duplicates_are_found() -> None:
    path = corpus_path("mcp-flow", "tools.jsonl")
    from foldgate.dev.corpus import load_catalog  # the corpus reader is developer tooling

    tools = load_catalog(path)
    found = find_neighbours(tools)
    assert all(1 <= len(n) <= DEFAULT_LIMIT for n in found.values())
    # mcp-flow lists many servers on several marketplaces: a good share of tools has a twin.
    assert len(found) > len(tools) // 4
