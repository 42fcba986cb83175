"""`foldgate bench context`: what each surface costs per task and which tasks one search fully reaches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.dev.bench.context import format_context_report, run_context_bench

# Two flat tools and one whose schema a signature cannot carry (nested objects): it is lossy, so
# reaching it also costs a describe_tool answer.
NESTED = {
    "type": "object",
    "properties": {"filter": {"type": "object", "properties": {"a": {"type": "object"}}}},
    "required": ["filter"],
}
TOOLS = [
    {
        "server": "fs",
        "name": "read_file",
        "description": "Read a file from disk.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {"server": "git", "name": "git_log", "description": "Show the commit log of a repository."},
    {
        "server": "crm",
        "name": "query_contacts",
        "description": "Query contacts with a filter.",
        "inputSchema": NESTED,
    },
]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    tools = tmp_path / "tools.jsonl"
    tools.write_text("\n".join(json.dumps(t) for t in TOOLS) + "\n")
    tasks = tmp_path / "tasks.jsonl"
    rows = [
        {"query": "read the file notes.txt", "expected": ["fs__read_file"]},
        {
            "query": "show the commit log, then query contacts",
            "expected": ["git__git_log", "crm__query_contacts"],
        },
        {"query": "order a pizza", "expected": ["fs__read_file", "git__git_log"]},
    ]
    tasks.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return tools, tasks


def test_surfaces_cost_and_reach(files: tuple[Path, Path]) -> None:
    tools, tasks = files
    report = run_context_bench(tools, tasks, limits=(1, 3), engine="lexical")
    assert report["tasks"] == 3
    # The search surface's listing is constant (its five meta-tools), whatever the catalog size.
    assert report["surface_listing_tokens"] > 0
    assert report["full_listing_tokens"] > 0
    # Deferred: the compact listing plus a describe for the one lossy tool (second task only).
    assert report["deferred_tokens_mean"] > 0
    one, three = report["search"]
    # Limit 1 reaches only the single-tool task the search finds; the pizza task is never reached.
    assert one["reached_share"] == pytest.approx(1 / 3, abs=1e-4)
    # Limit 3 covers the whole catalog except for the task with no matching word.
    assert three["reached_share"] == pytest.approx(2 / 3, abs=1e-4)
    assert three["tokens_mean"] > one["tokens_mean"]
    assert three["describe_tokens_mean"] > 0  # the lossy tool was reached and described
    text = format_context_report(report)
    assert "search surface" in text
    assert "66.7% of tasks" in text


def test_cli_prints_json(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    tools, tasks = files
    argv = ["bench", "context", "--engine", "lexical", "--tools", str(tools), "--queries", str(tasks)]
    assert main([*argv, "--limit", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [row["limit"] for row in report["search"]] == [2]


def test_the_first_browse_page_is_counted_per_limit(files: tuple[Path, Path]) -> None:
    """Browsing without a query: its first page grows with the limit, until every tool is on it."""
    tools, tasks = files
    report = run_context_bench(tools, tasks, limits=(1, 3, 5), engine="lexical")
    one, three, five = (row["browse_first_page_tokens"] for row in report["search"])
    assert 0 < one < three == five  # three tools: a page of 3 and a page of 5 are the same page
    assert "browse (no query) first page at limit 3" in format_context_report(report)
