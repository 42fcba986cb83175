"""The fleet page's last 24 hours per server: hourly buckets ending now, the error rate counting only
calls that failed at or beyond the tool, nearest-rank p95, bounded reading of a busy day, and the rows
the page renders (figures and sparklines, escaped)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from foldgate.edge.console.usage import HOURS, fleet_usage, hourly_usage, p95, usage_rows
from foldgate.model.activity import ActivityEvent, Actor, AuditEvent
from foldgate.store.activity.base import StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore

NOW = 1_800_000_000.0


def call(
    ago_s: float, server: str = "crm", outcome: str = "ok", ms: float = 10.0, tenant: str = "acme"
) -> ActivityEvent:
    return ActivityEvent(
        tenant,
        "tools/call",
        "mcp",
        outcome,
        at=NOW - ago_s,
        server=server,
        tool="t",
        gateway_ms=ms,  # type: ignore[arg-type]
    ).with_id()


def test_p95_is_the_nearest_rank() -> None:
    assert p95([]) is None
    assert p95([3.0]) == 3.0
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    assert p95([float(i) for i in range(1, 21)]) == 19.0


def test_calls_fall_in_hourly_buckets_oldest_first_and_outside_the_window_not_at_all() -> None:
    window = [call(10), call(3599), call(3601), call(23.5 * 3600)]
    outside = [call(24 * 3600 + 1), call(-5), call(10, server="")]
    usage = hourly_usage(window + outside, NOW)
    crm = usage["crm"]
    assert crm.calls == 4
    assert len(crm.hourly_calls) == HOURS
    assert crm.hourly_calls[-1] == 2
    assert crm.hourly_calls[-2] == 1
    assert crm.hourly_calls[0] == 1
    assert set(usage) == {"crm"}


def test_the_error_rate_counts_failures_at_the_tool_not_refusals_by_policy() -> None:
    failed = ["tool_error", "upstream_error", "upstream_timeout", "deadline", "internal_error"]
    refused = ["denied", "held", "needs_consent", "rate_limited", "not_found", "invalid_arguments"]
    outcomes = ["ok", *failed, *refused]
    usage = hourly_usage([call(60 + i, outcome=o) for i, o in enumerate(outcomes)], NOW)["crm"]
    assert (usage.calls, usage.errors) == (12, 5)
    assert usage.error_rate == 5 / 12
    assert usage.hourly_error_rate()[-1] == 5 / 12
    assert usage.hourly_error_rate()[0] is None


def test_p95_per_hour_and_over_the_day() -> None:
    events = [call(60, ms=float(ms)) for ms in range(1, 21)] + [call(2 * 3600 + 60, ms=500.0)]
    usage = hourly_usage(events, NOW)["crm"]
    hourly = usage.hourly_p95()
    assert hourly[-1] == 19.0
    assert hourly[-3] == 500.0
    assert hourly[-2] is None
    assert usage.p95_ms == 20.0


def test_fleet_usage_reads_one_tenants_calls_of_the_last_day_only() -> None:
    store = SqliteActivityStore(":memory:")
    records = [call(60), call(120, outcome="tool_error"), call(60, tenant="other"), call(25 * 3600)]
    store.put_many([StoredRecord(r, NOW + 86400) for r in records])
    store.put_many([StoredRecord(AuditEvent("acme", "token.create", Actor("cli"), at=NOW - 60), NOW + 86400)])
    usage = fleet_usage(store, "acme", NOW)
    assert usage["servers"]["crm"].calls == 2
    assert usage["servers"]["crm"].errors == 1
    assert usage["cut_from"] is None
    assert fleet_usage(None, "acme", NOW)["available"] is False


def test_a_busy_day_is_read_up_to_the_bound_and_says_from_when() -> None:
    store = SqliteActivityStore(":memory:")
    store.put_many([StoredRecord(call(60 + i), NOW + 86400) for i in range(30)])
    usage = fleet_usage(store, "acme", NOW, max_events=25)
    assert usage["servers"]["crm"].calls == 25
    assert usage["cut_from"] is not None
    assert fleet_usage(store, "acme", NOW, max_events=30)["cut_from"] is None


def test_rows_follow_the_pages_servers_with_figures_and_escaped_sparklines() -> None:
    hostile = '<script>alert("x")</script>'
    events = [call(60, ms=4.0), call(3700, outcome="upstream_error", ms=1500.0), call(60, server=hostile)]
    usage = {"servers": hourly_usage(events, NOW)}
    rows = usage_rows(usage, ["crm", "idle", hostile])
    assert [r["name"] for r in rows] == ["crm", "idle", hostile]
    crm, idle, bad = rows
    assert (crm["calls"], crm["error_rate"], crm["p95"]) == ("2", "50.0%", "1,500 ms")
    assert (idle["calls"], idle["error_rate"], idle["p95"]) == ("0", "\u2013", "\u2013")
    for row in rows:
        for key in ("calls_svg", "errors_svg", "p95_svg"):
            ET.fromstring(row[key])
    assert "<script>" not in bad["calls_svg"]
