"""`foldgate bench search --breakdown`: each stage timed on the served objects, which are left unwrapped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.dev.bench.search import format_search_report, run_search_bench
from foldgate.dev.bench.search_stages import STAGES, run_breakdown
from foldgate.model.tool import Tool
from foldgate.search import build_search_index
from foldgate.search.dense import build_dense_index
from foldgate.search.hybrid import HybridSearcher
from foldgate.search.multi import MultiIntentSearcher
from tests.unit.search.fakes import FakeEmbedder

TOOLS = [
    {"server": "fs", "name": "read_file", "description": "Read a file from disk."},
    {"server": "fs", "name": "write_file", "description": "Write a file to disk."},
    {"server": "git", "name": "git_log", "description": "Show the commit log."},
]


def test_every_stage_is_timed_and_the_wrappers_are_removed() -> None:
    tools = [Tool(server=t["server"], name=t["name"], description=t["description"]) for t in TOOLS]
    provider = FakeEmbedder()
    lexical = build_search_index(tools)
    dense = build_dense_index(provider, tools)
    searcher = HybridSearcher(lexical, dense, provider)
    served = MultiIntentSearcher(searcher)
    texts = ["read a file", "read a file and then show the commit log"]
    before = [served.search(t, limit=3) for t in texts]
    result = run_breakdown(
        served.search, texts, limit=3, provider=provider, lexical=lexical, cosines=searcher.cosines
    )
    assert set(result) == {*STAGES, "total"}
    for stage in ("encode", "lexical", "dense screen", "dense exact", "total"):
        assert result[stage]["mean_ms"] > 0, stage
    assert result["total"]["p95_ms"] >= result["lexical"]["p95_ms"]
    # Three tools at build, three needs a pass; the wrappers gone: the objects answer as before.
    assert len(provider.calls) == 3 + 2 * 3
    assert "encode" not in vars(provider)
    assert "score_vector" not in vars(lexical)
    assert "screen" not in vars(searcher.cosines)
    assert [served.search(t, limit=3) for t in texts] == before


def test_the_cli_prints_the_stage_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools = tmp_path / "tools.jsonl"
    tools.write_text("\n".join(json.dumps(t) for t in TOOLS) + "\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query": "read file", "expected": ["fs__read_file"]}) + "\n")
    report = run_search_bench(tools, queries, engine="hybrid", provider=FakeEmbedder(), breakdown=True)
    assert report["breakdown"]["encode"]["mean_ms"] > 0
    assert "stage breakdown" in format_search_report(report)
    # Lexical engine: the stages it has (no encoder, no dense side).
    assert main(["bench", "search", "--tools", str(tools), "--queries", str(queries), "--breakdown"]) == 0
    out = capsys.readouterr().out
    assert "stage breakdown" in out
    assert "lexical" in out
