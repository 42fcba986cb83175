"""retrieve_tools through the gateway for a scoped caller: the order of the tools it sees does not
depend on the words of tools it cannot see (another server, or a tool the operator disabled)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.principal import Principal
from foldgate.model.tool import Tool
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream
from tests.unit.search.fakes import FakeEmbedder

QUERY = "forecast tides"
ALPHA_ONLY = Principal("default", frozenset({"alpha"}), "destructive", "alpha-token")


def _tool(server: str, name: str, description: str) -> Tool:
    return Tool(server=server, name=name, description=description, input_schema={"type": "object"})


def _tools(hidden_word: str) -> list[Tool]:
    visible = [
        _tool("alpha", "tool_one", "Forecast for a city, hourly."),
        _tool("alpha", "tool_two", "Tides for a harbour, hourly."),
    ]
    # beta's tools all repeat one of the query's words, which lowers its idf over the whole catalog.
    hidden = [_tool("beta", f"archive_{i}", f"{hidden_word} archive number {i} and more") for i in range(6)]
    return visible + hidden


def _gateway(tools: list[Tool], *, hybrid: bool, disabled: bool = False) -> Gateway:
    provider = FakeEmbedder()
    store = SqliteStore(":memory:")
    store.publish(
        catalog_from_tools("default", tools, embedder=provider if hybrid else None), expected_current=None
    )
    servers: list[dict[str, Any]] = [
        {"name": s, "url": f"http://127.0.0.1:9/{s}/mcp"} for s in ("alpha", "beta")
    ]
    if disabled:
        servers[1]["enabled"] = False
    configs = StaticConfigSource({"default": parse_tenant_config({"servers": servers})})
    embedder = (lambda: provider) if hybrid else None
    return Gateway(store, configs, RecordingUpstream(), catalog_ttl=60, embedder=embedder)


async def _order(gateway: Gateway, who: str | Principal) -> list[str]:
    result = await gateway.call(who, "retrieve_tools", {"query": QUERY, "limit": 10}, "call")
    assert not result.get("isError"), result
    return [hit["name"] for hit in json.loads(result["content"][0]["text"])["tools"]]


@pytest.mark.parametrize("hybrid", [False, True], ids=["lexical", "hybrid"])
async def test_a_scoped_token_sees_the_same_order_whatever_hidden_servers_say(hybrid: bool) -> None:
    gateways = [_gateway(_tools(word), hybrid=hybrid) for word in ("forecast", "tides")]
    orders = [await _order(gateway, ALPHA_ONLY) for gateway in gateways]
    assert orders[0] == orders[1]
    assert set(orders[0]) == {"alpha__tool_one", "alpha__tool_two"}


async def test_the_hidden_words_do_flip_the_order_for_a_caller_who_sees_them() -> None:
    # The case has teeth: a caller who sees beta too ranks over beta's words, and the order flips.
    orders = [await _order(_gateway(_tools(word), hybrid=False), "default") for word in ("forecast", "tides")]
    alpha = [[n for n in order if n.startswith("alpha__")] for order in orders]
    assert alpha[0] == list(reversed(alpha[1]))


async def test_a_server_the_operator_disabled_is_outside_every_callers_statistics() -> None:
    orders = [
        await _order(_gateway(_tools(word), hybrid=False, disabled=True), "default")
        for word in ("forecast", "tides")
    ]
    assert orders[0] == orders[1]


async def test_callers_with_the_same_visible_tools_share_one_scope_and_a_full_view_none() -> None:
    gateway = _gateway(_tools("forecast"), hybrid=True)
    catalog = gateway.catalog("default")
    assert catalog is not None
    base = gateway.searchers.get(catalog)
    other = Principal("default", frozenset({"alpha"}), "destructive", "another-token")
    scoped = gateway.searchers.for_view(gateway.view(ALPHA_ONLY))
    assert scoped is not base
    assert gateway.searchers.for_view(gateway.view(other)) is scoped
    assert gateway.searchers.for_view(gateway.view("default")) is base


async def test_an_index_stored_before_scopes_is_rebuilt_so_a_scoped_token_still_gets_its_scope(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="foldgate.serve.searchers")
    orders = []
    for word in ("forecast", "tides"):
        gateway = _gateway(_tools(word), hybrid=False)
        catalog = gateway.catalog("default")
        assert catalog is not None
        assert catalog.search is not None
        # What an indexer of format 1 stored: no field counts.
        catalog.search["v"] = 1
        for key in ("fields", "tfs", "lengths"):
            catalog.search.pop(key)
        orders.append(await _order(gateway, ALPHA_ONLY))
    assert orders[0] == orders[1]
    assert sum("predates scopes" in r.getMessage() for r in caplog.records) == 2
