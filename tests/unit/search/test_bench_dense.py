"""`foldgate bench search --engine dense|hybrid`: the extra figures and the CLI flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.dev.bench.search import format_search_report, run_search_bench, stack_bytes
from foldgate.errors import CorpusError
from tests.unit.search.fakes import FakeEmbedder

TOOLS = [
    {"server": "fs", "name": "read_file", "description": "Read a file from disk."},
    {"server": "fs", "name": "write_file", "description": "Write a file to disk."},
    {"server": "git", "name": "git_log", "description": "Show the commit log."},
]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    tools = tmp_path / "tools.jsonl"
    tools.write_text("\n".join(json.dumps(t) for t in TOOLS) + "\n")
    queries = tmp_path / "queries.jsonl"
    rows = [
        {"query": "read file", "expected": ["fs__read_file"]},
        {"query": "commit log", "expected": ["git__git_log"]},
    ]
    queries.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return tools, queries


@pytest.mark.parametrize("engine", ["dense", "hybrid"])
def test_dense_engines_report_encoder_and_index_figures(
    files: tuple[Path, Path], tmp_path: Path, engine: str
) -> None:
    provider = FakeEmbedder()
    cache = tmp_path / "vectors.json"
    report = run_search_bench(*files, engine=engine, provider=provider, dense_cache=cache)  # type: ignore[arg-type]
    assert report["engine"] == engine
    assert report["weight"] == (1.0 if engine == "dense" else 0.6)
    assert report["queries"] == 2
    assert report["recall@5"] == 1.0
    for key in ("encoder_load_ms", "encode_p50_ms", "encode_p95_ms", "dense_build_s", "dense_zlib_bytes"):
        assert report[key] >= 0
    assert report["dense_encoded"] == 3
    assert report["search_stack_mb"] > 0
    text = format_search_report(report)
    assert f"engine {engine}" in text
    assert "encoder cold load" in text
    # The cache keeps the vectors: a second run encodes nothing.
    again = run_search_bench(*files, engine=engine, provider=FakeEmbedder(), dense_cache=cache)  # type: ignore[arg-type]
    assert (again["dense_encoded"], again["dense_reused"]) == (0, 3)


def test_unknown_engine_is_refused(files: tuple[Path, Path]) -> None:
    with pytest.raises(CorpusError):
        run_search_bench(*files, engine="magic")  # type: ignore[arg-type]


def test_cli_hybrid_without_a_model_fails_clearly(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools, queries = files
    argv = ["bench", "search", "--tools", str(tools), "--queries", str(queries), "--engine", "hybrid"]
    assert main([*argv, "--model-dir", str(tmp_path / "none"), "--weight", "0.5"]) == 2
    assert "make model" in capsys.readouterr().err


def test_cli_lexical_is_still_the_default(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tools, queries = files
    assert main(["bench", "search", "--tools", str(tools), "--queries", str(queries), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["engine"] == "lexical"
    assert "encode_p50_ms" not in report


def test_stack_size_counts_installed_files_and_the_model(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"x" * 1000)
    assert stack_bytes((), tmp_path) == 1000
    assert stack_bytes(("numpy",)) > 1_000_000
    assert stack_bytes(("no-such-distribution",)) == 0
