"""Deferral policy: precedence, reasons, and the token budget."""

from __future__ import annotations

from typing import Any

from foldgate.config.policy import decide
from foldgate.config.tenant import parse_tenant_config
from foldgate.model.tool import Tool


def _tools(server: str, n: int, schema_chars: int = 10) -> list[Tool]:
    schema = {"type": "object", "description": "x" * schema_chars}
    return [Tool(server=server, name=f"t{i}", input_schema=schema) for i in range(n)]


def _cfg(**kw: Any) -> Any:
    servers = kw.pop("servers", [])
    return parse_tenant_config({"servers": servers, **kw})


def _labels(tools: list[Tool], cfg: Any, **kw: Any) -> dict[str, str]:
    plan = decide(tools, cfg, **kw)
    return {k: d.label for k, d in plan.decisions.items()}


def test_full_and_deferred_modes_apply_to_everything() -> None:
    tools = _tools("a", 3)
    assert set(_labels(tools, _cfg(), mode="full").values()) == {"fullByMode"}
    assert set(_labels(tools, _cfg(), mode="deferred").values()) == {"deferredByMode"}


def test_count_threshold_defers_big_servers_only() -> None:
    tools = _tools("big", 21) + _tools("small", 20)
    labels = _labels(tools, _cfg(), mode="auto")
    assert labels["big:t0"] == "deferredByCount"
    assert labels["small:t0"] == "fullByDefault"


def test_precedence_pin_beats_size_beats_server() -> None:
    servers = [
        {"name": "a", "url": "http://h/mcp", "tool_loading": "eager",
         "tools": {"t0": {"defer_loading": False}, "t2": {"defer_loading": True}}},
    ]  # fmt: skip
    tools = [*_tools("a", 2, schema_chars=500), Tool(server="a", name="t2"), Tool(server="a", name="t3")]
    labels = _labels(tools, _cfg(servers=servers, defer_schema_chars=100), mode="auto")
    assert labels == {
        "a:t0": "fullByPin",  # pinned full despite its size
        "a:t1": "deferredBySize",  # the size rule beats the server's eager loading
        "a:t2": "deferredByPin",
        "a:t3": "fullByServer",
    }


def test_server_deferred_loading() -> None:
    servers = [{"name": "a", "url": "http://h/mcp", "tool_loading": "deferred"}]
    assert set(_labels(_tools("a", 2), _cfg(servers=servers), mode="auto").values()) == {"deferredByServer"}


def test_budget_defers_biggest_savers_first_and_respects_pins() -> None:
    tools = [Tool(server="a", name=f"t{i}") for i in range(4)]
    costs = {"a:t0": (100, 10), "a:t1": (50, 10), "a:t2": (30, 10), "a:t3": (200, 10)}
    servers = [{"name": "a", "url": "http://h/mcp", "tools": {"t3": {"defer_loading": False}}}]
    cfg = _cfg(servers=servers, listing_token_budget=300)
    plan = decide(tools, cfg, mode="auto", cost=lambda t: costs[t.key])
    # all full: 380 > 300. t3 is pinned full; t0 saves most (90) → 290 fits.
    assert {k: d.label for k, d in plan.decisions.items()} == {
        "a:t0": "deferredByBudget",
        "a:t1": "fullByBudget",
        "a:t2": "fullByBudget",
        "a:t3": "fullByPin",
    }
    assert plan.listing_tokens == 290
    assert plan.fits_budget is True


def test_budget_that_cannot_be_met_defers_everything_it_may() -> None:
    tools = [Tool(server="a", name=f"t{i}") for i in range(3)]
    plan = decide(tools, _cfg(listing_token_budget=5), mode="auto", cost=lambda t: (100, 10))
    assert plan.deferred_count == 3
    assert plan.listing_tokens == 30
    assert plan.fits_budget is False
