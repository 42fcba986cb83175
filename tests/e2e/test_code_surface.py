"""End to end: the brief's example program through the official client — list issues, fetch each
with Promise.all, return a filtered list — against a replay of the real GitHub MCP server catalog,
served by `foldgate serve` in its own process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from mcp import Client

from tests.conftest import corpus_path
from tests.procs import Replay, foldgate_serve, replay

pytestmark = pytest.mark.e2e

PROGRAM = """
const listed = await call_tool("github", "list_issues", {owner: "octo", repo: "demo", state: "OPEN"});
const numbers = [1, 2, 3, 4, 5];  // the replay echoes requests, so the "listed" issues are made up here
const issues = await Promise.all(numbers.map(n =>
  call_tool("github", "issue_read", {method: "get", owner: "octo", repo: "demo", issue_number: n})));
console.log(`listed via ${listed.tool}, fetched ${issues.length}`);
return issues.filter(i => i.arguments.issue_number % 2 === 1).map(i => i.arguments.issue_number);
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Replay]]:
    catalog = corpus_path("github-mcp-server", "tools.jsonl")
    tmp = tmp_path_factory.mktemp("code-serve")
    with ExitStack() as stack:
        rp = stack.enter_context(replay(catalog))
        config = {"routing_mode": "code_execution", "servers": [{"name": "github", "url": rp.urls["github"]}]}
        yield stack.enter_context(foldgate_serve(config, tmp)) + "/mcp", rp


async def test_the_example_program_runs_end_to_end(served: tuple[str, Replay]) -> None:
    url, rp = served
    async with Client(url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools) == ["code_execution", "retrieve_tools", "describe_tool"]
        assert "github.issue_read(" in (tools["code_execution"].description or "")
        rp.clear()
        result = await client.call_tool("code_execution", {"code": PROGRAM})
        assert not result.is_error, result.content
        body = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert body["value"] == [1, 3, 5]
        assert body["console"] == ["listed via list_issues, fetched 5"]
        assert len(body["calls"]) == 6
        assert sorted(c["tool"] for c in rp.calls()) == ["issue_read"] * 5 + ["list_issues"]
