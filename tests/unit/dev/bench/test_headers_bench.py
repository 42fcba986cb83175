"""`foldgate bench headers`: both timed calls pass the check (a refused one stops the bench), the added
tool is the one that declares header arguments, and the report names each figure."""

from __future__ import annotations

from foldgate.dev.bench.param_headers import format_headers_report, run_headers_bench
from tests.gateway_fixture import DEMO_CATALOG


def test_the_report_times_the_check_for_a_tool_with_and_without_header_arguments() -> None:
    report = run_headers_bench(DEMO_CATALOG, calls=20)
    assert report["tools"] == 5
    assert report["tools_declaring_headers"] == 0  # the demo's tools declare none; the bench adds one
    assert report["no_header_args_us"] > 0
    assert report["header_args_us"] > 0
    text = format_headers_report(report)
    assert "5 tools, 0 declaring x-mcp-header arguments" in text
    assert "a tool with two" in text
