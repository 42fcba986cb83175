"""The console's view-models without HTTP: the side-by-side diff, the budget totals and chart, the per-tool
table's sort/filter/paging on hostile parameters, and the what-if plan."""

from __future__ import annotations

import dataclasses

from foldgate.config.source import StaticConfigSource
from foldgate.edge.console.approvals import side_by_side
from foldgate.edge.console.budget import budget_view, chart, tool_table, totals, what_if
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.serve.views import TenantView
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools


def view(copies: int = 1, **config: object) -> TenantView:
    """The demo catalog's view (``copies`` > 1: each tool repeated under numbered names)."""
    tools = [
        dataclasses.replace(t, name=f"{t.name}_{i}" if i else t.name)
        for i in range(copies)
        for t in demo_tools()
    ]
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", tools), expected_current=None)
    gateway = Gateway(store, StaticConfigSource({"default": demo_config(**config)}), RecordingUpstream())
    return gateway.view("default")


def test_side_by_side_aligns_unchanged_lines_and_marks_changes_additions_and_removals() -> None:
    rows = side_by_side("a\nb\nc", "a\nB\nc\nd")
    assert [(r["kind"], r["left"], r["right"]) for r in rows] == [
        ("same", "a", "a"),
        ("changed", "b", "B"),
        ("same", "c", "c"),
        ("added", "", "d"),
    ]
    assert [r["kind"] for r in side_by_side({"x": 1}, None)] == ["removed"] * 3
    assert side_by_side(None, None) == []


def test_totals_order_the_surfaces_and_the_chart_scales_to_the_largest() -> None:
    v = view(direct_tool_response_mode="auto")
    numbers = totals(v)
    assert numbers["full"] > numbers["deferred"] > 0
    assert numbers["deferred"] <= numbers["auto"] <= numbers["full"]
    bars = {b["key"]: b for b in chart(numbers)}
    largest = max(bars.values(), key=lambda b: b["tokens"])
    assert largest["width"] == max(b["width"] for b in bars.values())
    assert bars["deferred"]["width"] < bars["full"]["width"]
    assert bars["full"]["width"] == round(largest["width"] * numbers["full"] / largest["tokens"])


def test_the_table_sorts_filters_and_pages_and_ignores_unknown_or_hostile_parameters() -> None:
    v = view(copies=5)
    by_name = tool_table(v, {"sort": "name", "dir": "asc", "per_page": "10"})
    names = [r["id"] for r in by_name["rows"]]
    assert names == sorted(names)
    assert len(names) == 10
    assert by_name["pages"] == -(-by_name["matched"] // 10)
    last = tool_table(v, {"sort": "name", "dir": "asc", "per_page": "10", "page": "999"})
    assert last["page"] == last["pages"]
    crm = tool_table(v, {"q": "CRM__", "decision": "full"})
    assert crm["rows"]
    assert all(r["id"].startswith("crm__") and not r["deferred"] for r in crm["rows"])
    hostile = tool_table(v, {"sort": "__class__", "dir": "sideways", "page": "-3", "per_page": "1e9"})
    assert hostile["sort"] == "tokens_full"
    assert hostile["page"] == 1
    fulls = [r["tokens_full"] for r in hostile["rows"]]
    assert fulls == sorted(fulls, reverse=True)


def test_what_if_shows_new_totals_and_refuses_invalid_settings_with_the_config_models_message() -> None:
    v = view(direct_tool_response_mode="full")
    assert what_if(v, {}) is None
    deferred = what_if(v, {"wi_direct_tool_response_mode": "deferred"})
    assert deferred is not None
    assert deferred["error"] is None
    assert deferred["totals"]["auto"] == totals(v)["deferred"]
    assert '"direct_tool_response_mode": "deferred"' in deferred["json"]
    budget = what_if(v, {"wi_direct_tool_response_mode": "auto", "wi_listing_token_budget": "1"})
    assert budget is not None
    assert budget["totals"]["auto_deferred_tools"] == len(v.visible)
    for bad in ({"wi_defer_threshold": "-1"}, {"wi_direct_tool_response_mode": "everything"}):
        refused = what_if(v, bad)
        assert refused is not None
        assert refused["error"]
    assert budget_view(v, {})["what_if"] is None
