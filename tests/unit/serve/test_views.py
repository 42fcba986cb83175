"""What a caller's view holds: effective tiers (the MCP spec's defaults, declared hints, the operator's
pin) and views cached by config content, never by object identity."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.source import ConfigSource
from foldgate.config.tenant import TenantConfig, parse_tenant_config
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.catalog import declared_tier
from foldgate.model.principal import Principal
from foldgate.model.tool import tool_from_wire
from foldgate.serve.gateway import Gateway
from foldgate.serve.views import build_view
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, ("destructive", "default")),
        ({}, ("destructive", "default")),
        ({"title": "x"}, ("destructive", "default")),
        ({"readOnlyHint": True}, ("read", "declared")),
        ({"readOnlyHint": True, "destructiveHint": True}, ("read", "declared")),  # read-only wins
        ({"readOnlyHint": False}, ("destructive", "default")),
        ({"readOnlyHint": False, "destructiveHint": False}, ("write", "declared")),
        ({"destructiveHint": False}, ("write", "declared")),
        ({"destructiveHint": True}, ("destructive", "declared")),
        ({"readOnlyHint": "true"}, ("destructive", "default")),  # not a boolean: as good as absent
    ],
)
def test_tiers_follow_the_mcp_spec_defaults(annotations: Any, expected: tuple[str, str]) -> None:
    assert declared_tier(annotations) == expected


def tools() -> list[Any]:
    return [
        tool_from_wire("crm", {"name": "plain", "description": "No hints at all."}),
        tool_from_wire("crm", {"name": "reader", "annotations": {"readOnlyHint": True}}),
        tool_from_wire(
            "crm", {"name": "writer", "annotations": {"readOnlyHint": False, "destructiveHint": False}}
        ),
    ]


def config(**pins: str) -> TenantConfig:
    server = {
        "name": "crm",
        "url": "http://127.0.0.1:9/mcp",
        "tools": {k: {"tier": v} for k, v in pins.items()},
    }
    return parse_tenant_config({"servers": [server]})


def test_an_unannotated_tool_is_destructive_and_hidden_from_lower_tiers() -> None:
    catalog = catalog_from_tools("t", tools())
    view = build_view(catalog, config(), Principal("t", tier="read"))
    assert [t.tool.name for t in view.visible] == ["reader"]
    everyone = build_view(catalog, config(), Principal("t", tier="destructive"))
    assert {t.tool.name: view_tier for t in everyone.visible if (view_tier := everyone.tier(t))} == {
        "plain": "destructive",
        "reader": "read",
        "writer": "write",
    }


def test_an_operator_pin_wins_both_ways_and_says_so() -> None:
    catalog = catalog_from_tools("t", tools())
    view = build_view(catalog, config(plain="read", reader="destructive"), Principal("t", tier="read"))
    assert [t.tool.name for t in view.visible] == ["plain"]
    full = build_view(catalog, config(plain="read", reader="destructive"))
    assert {t.tool.name: full.tiers[t.tool.key] for t in full.visible} == {
        "plain": ("read", "pinned"),
        "reader": ("destructive", "pinned"),
        "writer": ("write", "declared"),
    }


def test_a_pinned_tier_must_be_a_tier() -> None:
    with pytest.raises(Exception, match="tier"):
        config(plain="admin")


class SwappingSource(ConfigSource):
    """Serves whatever config the test put last (a live config that changes)."""

    def __init__(self, config: TenantConfig) -> None:
        self.config: TenantConfig | None = config

    def get(self, tenant: str, *, force: bool = False) -> TenantConfig:
        assert self.config is not None
        return self.config

    def tenants(self) -> list[str]:
        return ["t"]


def test_views_and_listings_are_keyed_by_config_content_not_object_identity() -> None:
    """An id can be reused by a new object once the old one is freed; a cache keyed on ``id(config)``
    could then serve a stale view (say, before a server was quarantined). Content keys cannot."""
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("t", tools()), expected_current=None)
    server = {"name": "crm", "url": "http://127.0.0.1:9/mcp"}
    source = SwappingSource(parse_tenant_config({"servers": [server]}))
    # A sandbox factory makes the code surface list its catalog (the worker is never started here).
    gateway = Gateway(store, source, RecordingUpstream(), catalog_ttl=60, sandbox=lambda: None)  # type: ignore[arg-type, return-value]
    first = gateway.view("t")
    assert "crm.plain" in gateway.listing_json("t", "code")
    source.config = parse_tenant_config({"servers": [server]})  # a new object, the same content
    assert gateway.view("t") is first
    source.config = parse_tenant_config({"servers": [{**server, "quarantined": True}]})
    assert gateway.view("t").visible == ()
    assert "crm." not in gateway.listing_json("t", "code")
