"""`foldgate bench console`: every page is rendered signed in (a refused or failed page would stop the
bench), the activity pages over a seeded log, and the report has a row per page with ordered
percentiles and the fleet's uncached read of the day."""

from __future__ import annotations

from foldgate.dev.bench.console import PAGES, format_console_report, run_console_bench
from tests.gateway_fixture import DEMO_CATALOG


def test_every_page_gets_a_row_with_its_percentiles_and_size() -> None:
    [report] = run_console_bench([DEMO_CATALOG], requests=3, events=300)
    assert report["tools"] == 5
    assert report["events"] == 300
    assert report["usage_read_ms"] > 0
    assert set(report["pages"]) == set(PAGES)
    for page, row in report["pages"].items():
        assert 0 < row["p50_ms"] <= row["p95_ms"]
        # The live refresh's poll with nothing new is a 204 without a body; every page is a page.
        assert row["bytes"] == 0 if page == "activity poll" else row["bytes"] > 1000, page
    text = format_console_report([report])
    assert all(page in text for page in PAGES)
    assert "300 calls in the activity log" in text
