"""`foldgate bench search --enrich`: the catalog enriched by the indexer's pass, searched without and
with the enrichment; model output cached by content hash so a second run calls no provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.dev.bench.search import format_search_report
from foldgate.dev.bench.search_enrich import (
    CacheOnly,
    EnrichmentCache,
    format_enriched_report,
    open_bench_provider,
    run_enriched_search_bench,
)
from foldgate.errors import CorpusError
from tests.unit.enrich.fixed import FixedProvider

TOOLS = [
    {"server": "fs", "name": "read_file", "description": "Read a file from disk."},
    {"server": "fs", "name": "write_file", "description": "Write a file to disk."},
    {"server": "git", "name": "git_log", "description": "Show the commit log."},
]
# "quuxify" is in no tool's text, only in FixedProvider's generated queries: enrichment alone answers it.
QUERIES = [
    {"query": "quuxify", "expected": ["fs__read_file"]},
    {"query": "show commit history", "expected": ["git__git_log"]},
]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    tools = tmp_path / "tools.jsonl"
    tools.write_text("\n".join(json.dumps(t) for t in TOOLS) + "\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n")
    return tools, queries


def test_both_runs_are_reported_with_their_difference_and_the_providers_spend(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    tools, queries = files
    cache = tmp_path / "enrich.json"
    report = run_enriched_search_bench(tools, queries, FixedProvider(), cache_path=cache)
    assert report["enriched_tools"] == 3
    assert report["enrichment"]["enriched"] == 3
    assert report["enrichment"]["tokens_out"] == 30
    assert set(report["delta"]) >= {"recall@1", "recall@5", "ndcg@10"}
    assert report["delta"]["recall@5"] == round(report["with"]["recall@5"] - report["without"]["recall@5"], 4)
    text = format_enriched_report(report, format_search_report)
    assert "without enrichment:" in text
    assert "tokens in 30 / out 30" in text


def test_a_second_run_reuses_the_cache_and_calls_no_provider(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    tools, queries = files
    cache = tmp_path / "enrich.json"
    run_enriched_search_bench(tools, queries, FixedProvider(), cache_path=cache)
    again = FixedProvider()
    report = run_enriched_search_bench(tools, queries, again, cache_path=cache)
    assert again.asked == []
    assert report["enrichment"]["reused"] == 3
    # Another model's answers are its own: a different source asks its provider again.
    other = FixedProvider("fixed:v2")
    run_enriched_search_bench(tools, queries, other, cache_path=cache)
    assert len(other.asked) == 3
    assert EnrichmentCache(cache).sources() == ["fixed:v1", "fixed:v2"]


def test_enrich_cache_searches_with_the_cached_answers_only(files: tuple[Path, Path], tmp_path: Path) -> None:
    tools, queries = files
    cache = tmp_path / "enrich.json"
    with pytest.raises(CorpusError, match="needs --enrich-model"):
        open_bench_provider("cache", EnrichmentCache(cache))
    run_enriched_search_bench(tools, queries, FixedProvider(), cache_path=cache)
    provider = open_bench_provider("cache", EnrichmentCache(cache))
    assert isinstance(provider, CacheOnly)
    assert provider.source == "fixed:v1"
    report = run_enriched_search_bench(tools, queries, provider, cache_path=cache)
    assert report["enriched_tools"] == 3
    assert report["enrichment"]["failed"] == 0


def test_the_cli_prints_both_runs_from_the_cache(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools, queries = files
    cache = tmp_path / "enrich.json"
    run_enriched_search_bench(tools, queries, FixedProvider(), cache_path=cache)
    args = ["--tools", str(tools), "--queries", str(queries), "--enrich-cache", str(cache), "--json"]
    code = main(["bench", "search", "--enrich", "cache", *args])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["without"]["recall@5"] == 0.5
    assert report["with"]["recall@5"] == 1.0
    assert report["delta"]["recall@5"] == 0.5


def test_the_enrichment_field_weights_can_be_tuned_from_the_cli(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools, queries = files
    cache = tmp_path / "enrich.json"
    run_enriched_search_bench(tools, queries, FixedProvider(), cache_path=cache)
    args = ["--tools", str(tools), "--queries", str(queries), "--enrich-cache", str(cache), "--json"]
    assert main(["bench", "search", "--enrich", "cache", "--enrich-weights", "0,0", *args]) == 0
    report = json.loads(capsys.readouterr().out)
    # Both enrichment fields off: the enriched run ranks exactly as the plain one.
    assert report["with"]["recall@5"] == report["without"]["recall@5"] == 0.5
    with pytest.raises(SystemExit):
        main(["bench", "search", "--enrich-weights", "1", *args])
