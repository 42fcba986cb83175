"""The MCP edge for prompts and resources: capabilities declared only when there is something to
serve, logging/setLevel accepted, invisible resources and prompts answered on the wire exactly like
nonexistent ones, and 2026-07-28 list results carrying the gateway's cache bound as ``ttlMs``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx2

from foldgate.model.catalog import new_version_id
from foldgate.model.offerings import publish_items
from foldgate.serve.gateway import Gateway
from tests.gateway_fixture import demo_config, gateway_client

H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = {**H, "mcp-protocol-version": "2025-11-25"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def add_offerings(gateway: Gateway) -> None:
    """Publish a version of the tenant's catalog that also has prompts, resources and templates."""
    current = gateway.catalog("default")
    assert current is not None
    items = []
    for server in ("crm", "tickets"):
        items += publish_items("prompt", [(server, {"name": "brief", "description": "d"})])
        items += publish_items("resource", [(server, {"uri": "mem://note", "name": "note"})])
    new = replace(current, version=new_version_id(), offerings=tuple(items))
    gateway.catalogs.store.publish(new, expected_current=current.version)


async def rpc(client: httpx2.AsyncClient, method: str, params: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    r = await client.post("/mcp/all", json=msg, headers=LEGACY)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def modern(
    client: httpx2.AsyncClient, method: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    msg = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": MODERN_META}}
    headers = {**H, "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    r = await client.post("/mcp/all", json=msg, headers=headers)
    result: dict[str, Any] = r.json()["result"]
    return result


INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


async def test_capabilities_follow_what_there_is_to_serve() -> None:
    async with gateway_client() as (client, gateway, *_):
        caps = (await rpc(client, "initialize", INIT))["result"]["capabilities"]
        assert "tools" in caps
        assert "logging" in caps
        assert not {"prompts", "resources", "completions"} & set(caps)
        assert (await rpc(client, "logging/setLevel", {"level": "info"}))["result"] == {}
        add_offerings(gateway)
        caps = (await rpc(client, "initialize", INIT))["result"]["capabilities"]
        assert {"prompts", "resources", "completions"} <= set(caps)
        prompts = (await rpc(client, "prompts/list"))["result"]["prompts"]
        assert [p["name"] for p in prompts] == ["crm__brief", "tickets__brief"]


async def test_a_quarantined_servers_offerings_answer_like_nonexistent_ones() -> None:
    servers = [
        {"name": "crm", "url": "http://127.0.0.1:9/crm/mcp"},
        {"name": "tickets", "url": "http://127.0.0.1:9/tickets/mcp", "quarantined": True},
    ]
    async with gateway_client(demo_config(servers=servers)) as (client, gateway, *_):
        add_offerings(gateway)
        listed = (await rpc(client, "resources/list"))["result"]["resources"]
        assert [r["uri"] for r in listed] == ["foldgate://crm/mem%3A%2F%2Fnote"]
        hidden = await rpc(client, "resources/read", {"uri": "foldgate://tickets/mem%3A%2F%2Fnote"})
        missing = await rpc(client, "resources/read", {"uri": "foldgate://ghost00/mem%3A%2F%2Fnote"})
        assert hidden["error"]["code"] == missing["error"]["code"] == -32002
        assert hidden["error"]["message"].replace("tickets", "X") == missing["error"]["message"].replace(
            "ghost00", "X"
        )
        # The visible server is tried: nothing listens there, which is an upstream failure, not a miss.
        down = await rpc(client, "resources/read", {"uri": "foldgate://crm/mem%3A%2F%2Fnote"})
        assert down["error"]["code"] == -32000
        assert down["error"]["message"].startswith("crm: ")
        hidden = await rpc(client, "prompts/get", {"name": "tickets__brief"})
        missing = await rpc(client, "prompts/get", {"name": "ghost00__brief"})
        assert hidden["error"]["code"] == missing["error"]["code"] == -32602
        assert hidden["error"]["message"].replace("tickets", "X") == missing["error"]["message"].replace(
            "ghost00", "X"
        )


async def test_modern_list_results_carry_the_cache_bound() -> None:
    async with gateway_client() as (client, gateway, *_):
        add_offerings(gateway)
        gateway.catalogs.ttl = 4.0  # the static config source never changes: the catalog bound rules
        fast = await modern(client, "tools/list")  # answered by the fast path
        slow = await modern(client, "tools/list", {"cursor": "x"})  # a cursor goes through the SDK
        resources = await modern(client, "resources/list")
        for result in (fast, slow, resources):
            assert (result["ttlMs"], result["cacheScope"]) == (4000, "private")
        assert "ttlMs" not in (await rpc(client, "tools/list"))["result"]  # older eras have no hints
