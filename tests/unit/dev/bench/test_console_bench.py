"""`foldgate bench console`: every page is rendered signed in (a refused or failed page would stop the
bench), and the report has a row per page with ordered percentiles."""

from __future__ import annotations

from foldgate.dev.bench.console import PAGES, format_console_report, run_console_bench
from tests.gateway_fixture import DEMO_CATALOG


def test_every_page_gets_a_row_with_its_percentiles_and_size() -> None:
    [report] = run_console_bench([DEMO_CATALOG], requests=3)
    assert report["tools"] == 5
    assert set(report["pages"]) == set(PAGES)
    for row in report["pages"].values():
        assert 0 < row["p50_ms"] <= row["p95_ms"]
        assert row["bytes"] > 1000
    text = format_console_report([report])
    assert all(page in text for page in PAGES)
