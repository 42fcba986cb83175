"""The fleet page's last 24 hours per server, from the activity summary: one tenant's calls in hourly
slices ending now, bounded reading of a busy day, a store that cannot be read, and the rows the page
renders (figures, gaps for idle hours, sparklines escaped)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from foldgate.edge.console.usage import HOURS, UsageCache, fleet_usage, usage_rows
from foldgate.errors import StoreError
from foldgate.model.activity import ActivityEvent, Actor, AuditEvent
from foldgate.serve.activity_summary import summarize_records
from foldgate.store.activity.base import ActivityPage, ActivityQuery, StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore

NOW = 1_800_000_000.0
SVG = "{http://www.w3.org/2000/svg}"


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


def store_of(*events: ActivityEvent) -> SqliteActivityStore:
    store = SqliteActivityStore(":memory:")
    # Kept until long after the fixed clock these tests read at.
    store.put_many([StoredRecord(e, NOW + 10 * 86400) for e in events])
    return store


def marks(svg: str) -> int:
    """How many lines and dots a sparkline draws (the baseline aside)."""
    root = ET.fromstring(svg)
    return sum(1 for el in root if el.tag in (f"{SVG}polyline", f"{SVG}circle"))


def test_fleet_usage_reads_one_tenants_calls_of_the_last_day_in_hourly_slices() -> None:
    store = store_of(call(60), call(120, outcome="tool_error"), call(60, tenant="other"), call(25 * 3600))
    store.put_many([StoredRecord(AuditEvent("acme", "token.create", Actor("cli"), at=NOW - 60), NOW + 86400)])
    summary = fleet_usage(store, "acme", NOW)["summary"]
    assert summary.servers["crm"].calls == 2
    assert summary.servers["crm"].errors == 1
    assert len(summary.series["crm"]) == HOURS
    assert summary.series["crm"][-1].calls == 2
    assert summary.truncated is False
    assert fleet_usage(None, "acme", NOW)["available"] is False


def test_a_busy_day_is_read_up_to_the_bound_and_says_so() -> None:
    store = store_of(*(call(60 + i) for i in range(30)))
    summary = fleet_usage(store, "acme", NOW, max_events=25)["summary"]
    assert summary.servers["crm"].calls == 25
    assert summary.truncated is True


class Failing(SqliteActivityStore):
    def query(self, query: ActivityQuery) -> ActivityPage:
        raise StoreError("disk I/O error")


def test_a_store_that_cannot_be_read_is_a_message_not_a_failed_page() -> None:
    usage = fleet_usage(Failing(":memory:"), "acme", NOW)
    assert usage["summary"] is None
    assert "disk I/O error" in usage["error"]
    assert [r["calls"] for r in usage_rows(None, ["crm"])] == ["0"]


def test_rows_follow_the_pages_servers_with_figures_and_gaps_for_idle_hours() -> None:
    events = [call(60, ms=4.0), call(3 * 3600, outcome="upstream_error", ms=1500.0)]
    summary = summarize_records("acme", events, window="24h", until=NOW, buckets=HOURS)
    crm, idle = usage_rows(summary, ["crm", "idle"])
    assert (crm["name"], crm["calls"], crm["error_rate"], crm["p95"]) == ("crm", "2", "50.0%", "1,500 ms")
    assert (idle["calls"], idle["error_rate"], idle["p95"]) == ("0", "\u2013", "\u2013")
    # Calls: one line over every hour; error rate and p95: a dot for each of the two hours with calls.
    assert (marks(crm["calls_svg"]), marks(crm["errors_svg"]), marks(crm["p95_svg"])) == (1, 2, 2)
    # An idle server: a flat line of zero calls, no error-rate or latency marks at all.
    assert (marks(idle["calls_svg"]), marks(idle["errors_svg"]), marks(idle["p95_svg"])) == (1, 0, 0)


def test_a_hostile_server_name_reaches_the_sparkline_only_escaped() -> None:
    hostile = '<script>alert("x")</script>'
    summary = summarize_records("acme", [call(60, server=hostile)], window="24h", until=NOW, buckets=HOURS)
    [row] = usage_rows(summary, [hostile])
    for key in ("calls_svg", "errors_svg", "p95_svg"):
        assert "<script>" not in row[key]
        assert hostile in ET.fromstring(row[key]).find(f"{SVG}title").text  # type: ignore[union-attr,operator]


class Counting(SqliteActivityStore):
    """The SQLite store, counting its reads."""

    reads = 0

    def query(self, query: ActivityQuery) -> ActivityPage:
        self.reads += 1
        return super().query(query)


def test_the_fleets_figures_are_read_once_a_minute_per_tenant_and_a_failed_read_is_not_kept() -> None:
    clock = [NOW]
    store = Counting(":memory:")
    store.put_many([StoredRecord(call(60), NOW + 86400), StoredRecord(call(60, tenant="b"), NOW + 86400)])
    cache = UsageCache(store, ttl_s=60, max_tenants=2, clock=lambda: clock[0])
    first = cache.get("acme")
    assert first["summary"].servers["crm"].calls == 1
    assert first["as_of"] == NOW
    store.put_many([StoredRecord(call(30), NOW + 86400)])
    clock[0] += 59
    assert cache.get("acme") is first
    assert store.reads == 1
    clock[0] += 1
    assert cache.get("acme")["summary"].servers["crm"].calls == 2
    assert store.reads == 2
    # At most max_tenants kept: a third tenant drops the oldest kept.
    cache.get("b")
    cache.get("c")
    reads = store.reads
    cache.get("b")
    assert store.reads == reads
    cache.get("acme")
    assert store.reads == reads + 1
    failing = UsageCache(Failing(":memory:"), clock=lambda: NOW)
    assert failing.get("acme")["error"] is not None
    assert failing.get("acme") is not failing.get("acme")


def test_a_pages_rows_are_drawn_once_per_read_and_again_after_the_next_read() -> None:
    clock = [NOW]
    cache = UsageCache(store_of(call(60)), ttl_s=60, clock=lambda: clock[0])
    usage = cache.get("acme")
    first = cache.rows(usage, ["crm", "tickets"])
    assert [r["calls"] for r in first] == ["1", "0"]
    assert cache.rows(cache.get("acme"), ["crm", "tickets"]) is first
    assert [r["name"] for r in cache.rows(usage, ["tickets"])] == ["tickets"]
    clock[0] += 60
    assert cache.rows(cache.get("acme"), ["crm", "tickets"]) is not first
