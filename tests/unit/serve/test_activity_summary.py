"""The activity summary per server and tool over a window: calls, errors and error rate, nearest-rank
p50/p95 of gateway and upstream milliseconds, only the tenant's own calls inside the window, read
through every page of the store (bounded, and saying when it was cut)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.errors import InvalidRequestError
from foldgate.model.activity import ActivityEvent, Actor, AuditEvent, Outcome
from foldgate.serve.activity_summary import percentile, summarize, summarize_records
from foldgate.store.activity.base import StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore

NOW = 1_800_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteActivityStore]:
    s = SqliteActivityStore(tmp_path / "a.sqlite3")
    yield s
    s.close()


def call(
    ago: float,
    server: str = "github",
    tool: str = "search",
    outcome: Outcome = "ok",
    gateway_ms: float = 10.0,
    upstream_ms: float | None = 5.0,
    tenant: str = "acme",
) -> ActivityEvent:
    return ActivityEvent(
        tenant, "tools/call", "mcp", outcome, at=NOW - ago, server=server, tool=tool,
        gateway_ms=gateway_ms, upstream_ms=upstream_ms,
    ).with_id()  # fmt: skip


def put(store: SqliteActivityStore, *events: ActivityEvent) -> None:
    # A far-future expiry: the events stay readable whatever the clock says about the fixed NOW.
    store.put_many([StoredRecord(e, 4_000_000_000) for e in events])


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 100)) == (50.0, 95.0, 100.0)
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None


def test_calls_errors_and_latency_per_server_and_tool(store: SqliteActivityStore) -> None:
    put(
        store,
        *[call(60 + i, gateway_ms=float(i + 1), upstream_ms=float(i + 1) / 2) for i in range(20)],
        call(30, outcome="tool_error", gateway_ms=100.0, upstream_ms=90.0),
        call(20, tool="create", outcome="denied", gateway_ms=1.0, upstream_ms=None),
        call(
            10,
            server="jira",
            tool="search",
            outcome="upstream_timeout",
            gateway_ms=30_000.0,
            upstream_ms=None,
        ),
    )
    summary = summarize(store, "acme", "1h", now=NOW)
    assert summary.total.calls == 23
    assert summary.total.errors == 3
    github = summary.servers["github"]
    assert (github.calls, github.errors) == (22, 2)
    assert github.error_rate == pytest.approx(2 / 22)
    search = summary.tools[("github", "search")]
    assert (search.calls, search.errors, search.outcomes) == (21, 1, {"ok": 20, "tool_error": 1})
    assert (search.gateway_p50_ms, search.gateway_p95_ms) == (11.0, 20.0)
    assert (search.upstream_p50_ms, search.upstream_p95_ms) == (5.5, 10.0)
    create = summary.tools[("github", "create")]
    assert (create.upstream_p50_ms, create.outcomes) == (None, {"denied": 1})
    assert summary.servers["jira"].gateway_p95_ms == 30_000.0
    doc = summary.to_doc()
    assert doc["tools"][0] == {  # type: ignore[index]
        "server": "github", "tool": "create", "calls": 1, "errors": 1, "error_rate": 1.0,
        "gateway_ms": {"p50": 1.0, "p95": 1.0}, "upstream_ms": {"p50": None, "p95": None},
        "outcomes": {"denied": 1},
    }  # fmt: skip


def test_only_the_tenants_calls_inside_the_window_count(store: SqliteActivityStore) -> None:
    audit = AuditEvent("acme", "config.save", Actor("cli"), at=NOW - 5).with_id()
    put(store, call(10), call(3599), call(3601), call(10, tenant="globex"), call(-5))
    store.put_many([StoredRecord(audit, 4_000_000_000)])
    assert summarize(store, "acme", "1h", now=NOW).total.calls == 2
    assert summarize(store, "acme", "24h", now=NOW).total.calls == 3
    assert summarize(store, "globex", "7d", now=NOW).total.calls == 1
    assert summarize(store, "initech", "7d", now=NOW).total.calls == 0


def test_every_page_is_read_up_to_the_bound_which_is_reported(store: SqliteActivityStore) -> None:
    put(store, *[call(i) for i in range(1, 2501)])
    assert summarize(store, "acme", "1h", now=NOW).total.calls == 2500
    cut = summarize(store, "acme", "1h", now=NOW, max_events=1200)
    assert (cut.total.calls, cut.truncated) == (1200, True)
    assert not summarize(store, "acme", "1h", now=NOW, max_events=2500).truncated


def test_time_slices_per_server_oldest_first() -> None:
    events = [call(3500), call(3400), call(100, outcome="tool_error")]
    summary = summarize_records("acme", events, window="1h", until=NOW, buckets=4)
    assert [s.calls for s in summary.series["github"]] == [2, 0, 0, 1]
    assert [s.errors for s in summary.series["github"]] == [0, 0, 0, 1]


@pytest.mark.parametrize("window", ["2h", "", "24H"])
def test_an_unknown_window_is_refused_naming_the_choices(store: SqliteActivityStore, window: str) -> None:
    with pytest.raises(InvalidRequestError, match="1h, 24h, 7d"):
        summarize(store, "acme", window)
