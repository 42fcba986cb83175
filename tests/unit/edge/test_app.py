"""The HTTP/MCP edge: bad input gets a specific error and the gateway keeps serving."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from foldgate.errors import UpstreamTimeoutError
from tests.gateway_fixture import demo_config, gateway_client
from tests.helpers import error_of

H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = {**H, "mcp-protocol-version": "2025-11-25"}


async def rpc(client: httpx2.AsyncClient, method: str, params: Any = None, *, rid: Any = 1) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    r = await client.post("/mcp/all", json=msg, headers=LEGACY)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def call(client: httpx2.AsyncClient, name: str, arguments: Any) -> dict[str, Any]:
    body = await rpc(client, "tools/call", {"name": name, "arguments": arguments})
    result: dict[str, Any] = body["result"]
    return result


async def test_fast_listing_matches_the_sdk_shape() -> None:
    async with gateway_client() as (client, *_):
        body = await rpc(client, "tools/list", rid="abc")
        assert body["id"] == "abc"
        names = [t["name"] for t in body["result"]["tools"]]
        assert names[0] == "describe_tool"
        assert "crm__create_contact" in names


async def test_paginated_listing_request_goes_through_the_sdk_and_matches() -> None:
    async with gateway_client() as (client, *_):
        fast = (await rpc(client, "tools/list"))["result"]["tools"]
        slow = (await rpc(client, "tools/list", {"cursor": None, "_meta": {"progressToken": 1}}))["result"][
            "tools"
        ]
        assert [t["name"] for t in slow] == [t["name"] for t in fast]


async def test_config_change_applies_on_the_next_request() -> None:
    async with gateway_client(demo_config(direct_tool_response_mode="full")) as (client, _, _, configs):
        tools = {t["name"]: t for t in (await rpc(client, "tools/list"))["result"]["tools"]}
        assert tools["crm__create_contact"]["inputSchema"]["required"] == ["name", "email"]
        configs.configs["default"] = demo_config(direct_tool_response_mode="deferred")
        tools = {t["name"]: t for t in (await rpc(client, "tools/list"))["result"]["tools"]}
        assert tools["crm__create_contact"]["inputSchema"] == {"type": "object"}
        # auto with a pin: the pinned tool is deferred, the rest (small servers) stay full
        servers = [
            {
                "name": "crm",
                "url": "http://127.0.0.1:9/crm/mcp",
                "tools": {"find_contact": {"defer_loading": True}},
            },
            {"name": "tickets", "url": "http://127.0.0.1:9/tickets/mcp"},
        ]
        configs.configs["default"] = demo_config(direct_tool_response_mode="auto", servers=servers)
        tools = {t["name"]: t for t in (await rpc(client, "tools/list"))["result"]["tools"]}
        assert tools["crm__find_contact"]["inputSchema"] == {"type": "object"}
        assert tools["crm__create_contact"]["inputSchema"]["type"] == "object"
        assert "properties" in tools["crm__create_contact"]["inputSchema"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", {-32700}),
        (b'"just a string"', {-32600, -32602}),
        (b'{"jsonrpc":"2.0","id":1}', {-32600, -32602}),
        (b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', {-32600, -32602}),
    ],
)
async def test_malformed_bodies_get_jsonrpc_errors(body: bytes, code: set[int]) -> None:
    async with gateway_client() as (client, *_):
        r = await client.post("/mcp/all", content=body, headers=LEGACY)
        assert r.status_code in (200, 400)
        assert r.json()["error"]["code"] in code
        assert r.json()["error"]["message"]
        assert (await rpc(client, "tools/list"))["result"]["tools"]  # still serving


async def test_unknown_method_is_method_not_found() -> None:
    async with gateway_client() as (client, *_):
        body = await rpc(client, "tools/frobnicate")
        assert body["error"]["code"] == -32601


async def test_batch_arrays_are_refused_clearly() -> None:
    async with gateway_client() as (client, *_):
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]
        r = await client.post("/mcp/all", json=batch, headers=LEGACY)
        assert r.status_code == 400
        assert r.json()["error"]["code"] == -32600
        assert "batches are not supported" in r.json()["error"]["message"]


async def test_oversized_body_is_413_before_parsing() -> None:
    async with gateway_client(max_body_bytes=2048) as (client, *_):
        big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "crm__find_contact", "arguments": {"query": "x" * 5000}}}  # fmt: skip
        r = await client.post("/mcp/all", json=big, headers=LEGACY)
        assert r.status_code == 413
        assert "exceeds 2048 bytes" in r.json()["error"]["message"]


async def test_unknown_tool_is_not_found_and_never_dispatched() -> None:
    async with gateway_client() as (client, _, upstream, _):
        result = await call(client, "crm__nope", {})
        assert result["isError"] is True
        assert error_of(result)["error_type"] == "not_found"
        assert upstream.calls == []


async def test_invisible_tool_answers_exactly_like_a_nonexistent_one() -> None:
    servers = [{"name": "crm", "url": "http://127.0.0.1:9/crm/mcp", "quarantined": True},
               {"name": "tickets", "url": "http://127.0.0.1:9/tickets/mcp"}]  # fmt: skip
    async with gateway_client(demo_config(servers=servers)) as (client, *_):
        hidden = await call(client, "crm__find_contact", {"query": "a"})
        missing = await call(client, "crm__find_contactx", {"query": "a"})
        assert error_of(hidden)["error"].replace("crm__find_contact", "X") == error_of(missing)[
            "error"
        ].replace("crm__find_contactx", "X")
        described = await call(client, "describe_tool", {"tool_ids": ["crm__find_contact", "crm:nope"]})
        assert described["structuredContent"]["tools"] == [
            {"id": "crm__find_contact", "error": "not_found"},
            {"id": "crm:nope", "error": "not_found"},
        ]
        listed = [t["name"] for t in (await rpc(client, "tools/list"))["result"]["tools"]]
        assert not any(n.startswith("crm__") for n in listed)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"tool_ids": [f"t{i}" for i in range(6)]}, "at most 5 tool_ids"),
        ({"tool_ids": [f"t{i}" for i in range(51)], "check": True}, "at most 50 tool_ids"),
        ({"tool_ids": []}, "non-empty array"),
        ({"tool_ids": "crm__find_contact"}, "non-empty array"),
        ({"tool_ids": [1, 2]}, "non-empty string"),
        ({"tool_ids": ["a"], "check": "yes"}, "true or false"),
        ({"tool_ids": ["a"], "verbose": True}, "does not take verbose"),
    ],
)
async def test_describe_tool_bad_arguments_fail_the_whole_call_clearly(arguments: Any, message: str) -> None:
    async with gateway_client() as (client, *_):
        result = await call(client, "describe_tool", arguments)
        assert result["isError"] is True
        assert message in error_of(result)["error"]


async def test_describe_check_mode_and_both_id_forms() -> None:
    async with gateway_client() as (client, *_):
        ids = ["crm__find_contact", "tickets:list_tickets", "x"]
        result = await call(client, "describe_tool", {"tool_ids": ids, "check": True})
        assert result["structuredContent"]["tools"] == [
            {"id": "crm__find_contact", "status": "ready"},
            {"id": "tickets__list_tickets", "status": "ready"},
            {"id": "x", "status": "unavailable", "reason": "not_found"},
        ]


@pytest.mark.parametrize("arguments", [[1, 2], "text", 5])
async def test_arguments_that_are_not_objects_get_the_schema(arguments: Any) -> None:
    async with gateway_client() as (client, _, upstream, _):
        r = await client.post(
            "/mcp/all",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "crm__find_contact", "arguments": arguments}},
            headers=LEGACY,
        )  # fmt: skip
        body = r.json()
        # The SDK refuses non-object arguments at the protocol level; either way nothing is dispatched.
        assert "error" in body or body["result"]["isError"] is True
        assert upstream.calls == []


async def test_invalid_arguments_self_heal_with_the_full_schema() -> None:
    async with gateway_client() as (client, _, upstream, _):
        result = await call(client, "crm__create_contact", {"name": "Ada", "tags": ["vip"]})
        err = error_of(result)
        assert err["error_type"] == "invalid_params"
        assert err["error"].startswith("invalid arguments for crm__create_contact: ")
        assert "'email' is a required property" in err["error"]
        assert "'vip' is not one of" in err["error"]
        assert err["tool"] == "crm__create_contact"
        assert err["input_schema"]["additionalProperties"] is False
        assert json.loads(result["content"][0]["text"]) == err
        assert upstream.calls == []


async def test_valid_call_is_proxied_and_upstream_errors_keep_their_own_shape() -> None:
    async with gateway_client() as (client, _, upstream, _):
        ok = await call(client, "crm__find_contact", {"query": "Ada"})
        assert ok["isError"] is False
        assert upstream.calls == [("crm", "find_contact", {"query": "Ada"})]
        upstream.fail["list_tickets"] = UpstreamTimeoutError("tickets: list_tickets did not answer within 1s")
        err = await call(client, "tickets__list_tickets", {})
        assert err["isError"] is True
        assert error_of(err)["error_type"] == "upstream_timeout"
        assert "input_schema" not in error_of(err)


async def test_uncompilable_schema_fails_open_and_is_counted() -> None:
    from foldgate.model.tool import tool_from_wire

    broken = tool_from_wire(
        "crm", {"name": "weird", "inputSchema": {"type": "object", "properties": {"a": {"type": 5}}}}
    )
    async with gateway_client(tools=[broken]) as (client, gateway, upstream, _):
        result = await call(client, "crm__weird", {"a": 1})
        assert result["isError"] is False
        assert upstream.calls == [("crm", "weird", {"a": 1})]
        assert gateway.caller.validators.skipped == 1


async def test_unknown_tenant_header_is_refused() -> None:
    async with gateway_client() as (client, *_):
        r = await client.post(
            "/mcp/all", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**LEGACY, "x-foldgate-tenant": "other"},
        )  # fmt: skip
        assert r.status_code == 404
        assert r.json()["error"]["message"] == "unknown tenant 'other'"


def test_protocol_versions_spelled_out_for_the_hot_path_match_the_sdk() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    from foldgate.edge import protocol

    assert protocol.MODERN_PROTOCOL_VERSIONS == MODERN_PROTOCOL_VERSIONS
    assert protocol.HANDSHAKE_PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


async def test_modern_era_fast_listing_has_the_sdk_envelope() -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    headers = {**H, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    async with gateway_client() as (client, *_):
        msg = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}}
        r = await client.post("/mcp/all", json=msg, headers=headers)
        result = r.json()["result"]
        assert result["resultType"] == "complete"
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "foldgate"
        # A version mismatch between header and _meta is left to the SDK, which refuses it.
        bad = {**msg, "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}}
        r = await client.post("/mcp/all", json=bad, headers=headers)
        assert "error" in r.json()
