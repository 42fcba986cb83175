"""`foldgate bench cloud`: starts its own moto_server, indexes into DynamoDB and SQLite, and times the
MCP Lambda through Mangum; pinned here on the small demo catalog so the command keeps working."""

from __future__ import annotations

import json

import pytest

from foldgate.app.cli import main
from tests.gateway_fixture import DEMO_CATALOG


def test_cloud_bench_reports_throughput_and_latency_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "cloud", "--corpus", str(DEMO_CATALOG), "--requests", "5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    row = report["corpora"][str(DEMO_CATALOG)]
    assert row["tools"] == 5
    assert row["chunks"] == 1
    for key in ("build_tools_per_s", "sqlite_tools_per_s", "dynamodb_tools_per_s", "publish_ratio"):
        assert row[key] > 0, key
    latency = row["mcp_lambda_tools_list"]
    assert set(latency) == {"cached", "pointer_each_request"}
    for cell in latency.values():
        assert cell["dynamodb_p50_ms"] > 0
        assert cell["ratio"] > 0


def test_cloud_bench_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "cloud", "--corpus", str(DEMO_CATALOG), "--requests", "3"]) == 0
    out = capsys.readouterr().out
    assert "publish dynamodb (moto)" in out
    assert "MCP Lambda tools/list, cached" in out
