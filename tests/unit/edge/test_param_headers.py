"""SEP-2243 at the edge (http-custom-header-server-validation): a 2026-07-28 tools/call of a tool that
declares ``x-mcp-header`` arguments is refused with HTTP 400 and -32020, before the upstream is called,
when an Mcp-Param-* header is missing, differs from its argument or is malformed Base64, on the plain
path (no Mcp-Param header) and the SDK path (with one) alike; a call whose headers mirror its
arguments runs; a tool listed deferred (its client never saw the declaration) is not checked."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.model.tool import Tool, tool_from_wire
from tests.gateway_fixture import demo_tools, gateway_client
from tests.recorders import ListRecorder

SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "q": {"type": "string"}},
    "required": ["region"],
}
TOOL = "crm__route"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _tools() -> list[Tool]:
    return [
        *demo_tools(),
        tool_from_wire("crm", {"name": "route", "description": "Routes", "inputSchema": SCHEMA}),
    ]


async def _call(
    client: httpx2.AsyncClient,
    arguments: dict[str, Any],
    extra: dict[str, str],
    accept: str = "application/json",
) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": TOOL, "arguments": arguments, "_meta": META}}  # fmt: skip
    headers = {
        "content-type": "application/json",
        "accept": accept,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": TOOL,
        **extra,
    }
    return await client.post("/mcp/all", json=body, headers=headers)


@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"])
@pytest.mark.parametrize(
    "extra",
    [
        {},  # missing while the argument is sent
        {"Mcp-Param-Region": "eu-central"},  # another value
        {"Mcp-Param-Region": "=?base64?ZXUtd2VzdA?="},  # bad padding
        {"Mcp-Param-Region": "=?base64?ZXUt!!!d2VzdA==?="},  # not the Base64 alphabet
    ],
)
async def test_headers_that_disagree_with_the_arguments_are_refused_before_any_call(
    extra: dict[str, str], accept: str
) -> None:
    async with gateway_client(tools=_tools()) as (client, gateway, upstream, _):
        recorder = gateway.recorder = ListRecorder()
        r = await _call(client, {"region": "eu-west"}, extra, accept)
    assert r.status_code == 400, r.text
    # One activity event: the tool that was named, and that it never ran.
    (event,) = recorder.calls
    assert (event.server, event.tool, event.outcome, event.detail) == (
        "crm",
        "route",
        "invalid_arguments",
        "header_mismatch",
    )
    body = r.json()
    assert body["id"] == 9
    assert body["error"]["code"] == -32020
    assert "Mcp-Param-Region" in body["error"]["message"]
    assert upstream.calls == []


@pytest.mark.parametrize("sent", ["eu-west", "=?base64?ZXUtd2VzdA==?=", " eu-west "])
async def test_headers_that_mirror_the_arguments_are_served(sent: str) -> None:
    async with gateway_client(tools=_tools()) as (client, _gateway, upstream, _):
        r = await _call(client, {"region": "eu-west"}, {"Mcp-Param-Region": sent})
    assert r.status_code == 200, r.text
    assert "result" in r.json()
    assert upstream.calls == [("crm", "route", {"region": "eu-west"})]
    # The upstream is told which arguments to mirror in its own Mcp-Param-* headers.
    assert [p.name for p in upstream.header_params["route"]] == ["Region"]


async def test_a_handshake_era_call_and_a_deferred_tool_are_not_checked() -> None:
    servers = [
        {"name": s, "url": f"http://127.0.0.1:9/{s}/mcp", "tool_loading": "deferred"}
        for s in ("crm", "tickets")
    ]
    deferred = parse_tenant_config({"servers": servers})
    async with gateway_client(config=deferred, tools=_tools()) as (client, gateway, upstream, _):
        view = gateway.view("default")
        tool = view.resolve(TOOL)
        assert tool is not None
        assert tool.header_params
        assert view.is_deferred(tool)
        r = await _call(client, {"region": "eu-west"}, {})
        assert r.status_code == 200, r.text
    async with gateway_client(tools=_tools()) as (client, _gateway, upstream, _):
        body = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": TOOL, "arguments": {"region": "x"}},
        }
        r = await client.post(
            "/mcp/all",
            json=body,
            headers={
                "content-type": "application/json",
                "accept": "application/json",
                "mcp-protocol-version": "2025-11-25",
            },
        )
        assert r.status_code == 200, r.text
        assert upstream.calls == [("crm", "route", {"region": "x"})]
