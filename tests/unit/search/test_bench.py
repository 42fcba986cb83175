"""`foldgate bench search`: query formats, metric definitions and the CLI's JSON report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.dev.bench.search import format_search_report, load_queries, run_search_bench, score_ranking
from foldgate.dev.corpus import load_catalog
from foldgate.errors import CorpusError
from foldgate.model.tool import Tool

TOOLS = [
    {"server": "fs", "name": "read_file", "description": "Read a file from disk."},
    {"server": "fs", "name": "write_file", "description": "Write a file to disk."},
    {"server": "git", "name": "git_log", "description": "Show the commit log."},
    {"server": "git", "name": "git_diff", "description": "Show changes."},
]


@pytest.fixture
def fixture_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    tools = tmp_path / "tools.jsonl"
    tools.write_text("\n".join(json.dumps(t) for t in TOOLS) + "\n")
    jsonl = tmp_path / "queries.jsonl"
    rows = [
        {"query": "read the file", "expected": ["fs__read_file"]},
        {"query": "show commit history", "expected": ["git__git_log"]},
        {"query": "unknown tool", "expected": ["nowhere__nothing"]},
    ]
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    golden = tmp_path / "golden.json"
    golden.write_text(
        json.dumps(
            {
                "queries": [
                    {
                        "id": "q1",
                        "query": "save text to a file",
                        "labels": [
                            {"tool_id": "fs:write_file", "relevance": 2},
                            {"tool_id": "fs:read_file", "relevance": 1},
                            {"tool_id": "git:git_log", "relevance": 0},
                        ],
                    }
                ]
            }
        )
    )
    return tools, jsonl, golden


def test_both_query_formats_are_detected(fixture_files: tuple[Path, Path, Path]) -> None:
    tools_path, jsonl, golden = fixture_files
    tools = load_catalog(tools_path)
    plain = load_queries(jsonl, tools)
    assert [q.relevant for q in plain] == [{"fs:read_file": 1}, {"git:git_log": 1}, {}]
    graded = load_queries(golden, tools)
    # Relevance 0 (a hard negative) is not relevant; grades are kept for nDCG.
    assert graded[0].relevant == {"fs:write_file": 2, "fs:read_file": 1}


def test_bad_query_file_is_a_corpus_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(CorpusError):
        load_queries(bad, [Tool("s", "t")])
    with pytest.raises(CorpusError):
        load_queries(tmp_path / "missing.jsonl", [])


def test_metric_definitions() -> None:
    relevant = {"a": 2, "b": 1}
    m = score_ranking(["x", "a", "y", "z", "w", "b"], relevant)
    assert m["recall@1"] == 0.0
    assert m["recall@5"] == 0.5  # a fraction of the relevant tools, not a hit
    assert m["recall@10"] == 1.0
    assert m["mrr"] == 0.5
    dcg = 2 / math.log2(3) + 1 / math.log2(7)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert m["ndcg@10"] == pytest.approx(dcg / idcg)
    assert score_ranking([], {"a": 1})["mrr"] == 0.0


def test_report_counts_unjudged_queries(fixture_files: tuple[Path, Path, Path]) -> None:
    tools_path, jsonl, _ = fixture_files
    report = run_search_bench(tools_path, jsonl)
    assert report["queries"] == 2
    assert report["unjudged"] == 1
    assert report["recall@1"] == 1.0
    assert "without a relevant tool" in format_search_report(report)


def test_cli_json_report(fixture_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    tools_path, _, golden = fixture_files
    assert main(["bench", "search", "--tools", str(tools_path), "--queries", str(golden), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    keys = {"queries", "recall@1", "recall@5", "recall@10", "mrr", "ndcg@10", "p50_ms", "p95_ms"}
    assert keys <= set(report)
    assert {"build_s", "index_zlib_bytes", "load_ms"} <= set(report)
    # CPU time per query beside wall time: never negative, and a p95 at least its p50.
    assert 0 <= report["cpu_p50_ms"] <= report["cpu_p95_ms"]
    assert report["queries"] == 1
    assert report["recall@5"] == 1.0
    assert 0 < report["ndcg@10"] <= 1


def test_cli_text_report_and_plain_baseline(
    fixture_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tools_path, jsonl, _ = fixture_files
    argv = ["bench", "search", "--tools", str(tools_path), "--queries", str(jsonl), "--plain", "--limit", "3"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Recall@5" in out
    assert "p95" in out
    assert "index build" in out
