"""`foldgate bench tokens`: the report shape, mcpproxy's figures reproduced, and our targets."""

from __future__ import annotations

import json

import pytest

from foldgate.app.cli import main
from foldgate.dev.bench.tokens import format_token_report, run_token_bench
from tests.conftest import corpus_path


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("parts", "full", "deferred", "ours_max"),
    [
        (("mcpproxy", "corpus_v2.tools.json"), 6116, 4301, 3225),
        (("mcpproxy", "livemcptool_snapshot", "tools.json"), 99918, 65138, 52100),
    ],
)
def test_mcpproxy_figures_reproduced_and_our_deferred_listing_beats_them(
    parts: tuple[str, ...], full: int, deferred: int, ours_max: int
) -> None:
    path = corpus_path(*parts)
    theirs = run_token_bench(path, mcpproxy_rendering=True)
    assert theirs["modes"]["full"]["tokens"] == full
    assert theirs["modes"]["deferred"]["tokens"] == deferred
    ours = run_token_bench(path)
    assert ours["modes"]["deferred"]["tokens"] <= ours_max
    assert ours["modes"]["deferred"]["tokens"] <= 0.8 * deferred


@pytest.mark.corpus
def test_budget_row_fits_its_budget_and_keeps_some_tools_full() -> None:
    report = run_token_bench(corpus_path("mcpproxy", "livemcptool_snapshot", "tools.json"), budget=70_000)
    row = report["modes"]["budget"]
    assert row["fits"] is True
    assert row["tokens"] <= 70_000
    assert 0 < row["deferred_tools"] < report["tools"]


@pytest.mark.corpus
def test_json_output_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_path("github-mcp-server", "tools.jsonl")
    assert main(["bench", "tokens", "--corpus", str(path), "--json", "--tokenizer", "o200k"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"corpus", "tokenizer", "tools", "modes"} <= set(report)
    assert report["tokenizer"] == "o200k"
    assert report["tools"] == 117
    assert {"tokens", "non_lossy"} <= set(report["modes"]["deferred"])
    assert {"full", "deferred", "auto", "budget"} == set(report["modes"])
    assert report["modes"]["deferred"]["tokens"] < report["modes"]["full"]["tokens"]


def test_report_on_a_small_fixture(tmp_path: object) -> None:
    from pathlib import Path

    p = Path(str(tmp_path)) / "tools.jsonl"
    rows = [
        {"server": "s", "name": f"t{i}", "description": "d",
         "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "description": "q" * 200}}}}
        for i in range(3)
    ]  # fmt: skip
    p.write_text("\n".join(json.dumps(r) for r in rows))
    report = run_token_bench(p)
    assert report["tools"] == 3
    assert report["modes"]["deferred"]["tokens"] < report["modes"]["full"]["tokens"]
    text = format_token_report(report)
    assert "signatures without ~: 3/3" in text
    search = report["search_surface"]
    # The search surface costs the same whatever the fleet; an answer costs five hits (each once: the
    # answer is JSON text only) plus its small envelope.
    assert search["first_search_total"] == search["listing_tokens"] + search["retrieve_response_tokens"]
    assert 5 * search["hit_tokens_median"] < search["retrieve_response_tokens"]
    assert search["retrieve_response_tokens"] < 6 * search["hit_tokens_median"] + 30
    assert "search surface (/mcp/call)" in text


@pytest.mark.corpus
def test_search_surface_is_far_cheaper_than_any_listing_of_a_big_fleet() -> None:
    report = run_token_bench(corpus_path("mcpproxy", "livemcptool_snapshot", "tools.json"))
    assert report["search_surface"]["first_search_total"] * 20 < report["modes"]["deferred"]["tokens"]


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("parts", "cap", "flat_v1", "flat_v2"),
    [
        (("mcpproxy", "corpus_v2.tools.json"), 3225, 39, 45),
        (("mcpproxy", "livemcptool_snapshot", "tools.json"), 52100, 435, 469),
    ],
)
def test_grammar_v2_makes_more_tools_flat_within_the_listing_caps(
    parts: tuple[str, ...], cap: int, flat_v1: int, flat_v2: int
) -> None:
    report = run_token_bench(corpus_path(*parts))
    grammar = report["grammar"]
    assert (grammar["v1"]["flat"], grammar["v2"]["flat"]) == (flat_v1, flat_v2)
    assert grammar["v2"]["deferred_tokens"] == report["modes"]["deferred"]["tokens"] <= cap
    # Every token spent inlining buys a describe round trip that would have cost far more.
    spent = grammar["v2"]["deferred_tokens"] - grammar["v1"]["deferred_tokens"]
    assert 0 < spent * 5 < grammar["describe_tokens_avoided"]
    assert grammar["inlined_tools"] == flat_v2 - flat_v1
    assert "grammar v1 → v2: flat" in format_token_report(report)
