"""A 2026-07-28 retry's requestState at the edge: opened before anything runs, refused with -32602
(and nothing called upstream) unless the gateway sealed it for this caller and call; an opened state
gives the upstream the client's answers and the upstream's own state (never the client's text)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from foldgate.auth.request_state import call_binding
from foldgate.edge.input_relay import sealer_for
from foldgate.serve.gateway import Gateway
from foldgate.upstream.relay import current_relay
from tests.gateway_fixture import RecordingUpstream, gateway_client

MODERN = "2026-07-28"
TOOL = "crm__create_contact"
ARGS = {"name": "Ada", "email": "ada@example.com"}
ME = "default\x1f*"  # the stamp of unauthenticated local access
CAPS = {"elicitation": {}}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": MODERN,
    "mcp-method": "tools/call",
    "mcp-name": TOOL,
}
ANSWERS = {"confirm": {"action": "accept", "content": {"ok": True}}}


def _retry(state: str, arguments: dict[str, Any] = ARGS) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": CAPS,
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
    }
    params = {"name": TOOL, "arguments": arguments, "_meta": meta, "inputResponses": ANSWERS}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {**params, "requestState": state}}


def _seal(gateway: Gateway, stamp: str = ME, tool: str = TOOL, arguments: Any = ARGS) -> str:
    return sealer_for(gateway).seal({"s": "upstream-own"}, call_binding(stamp, tool, arguments))


async def _post(client: httpx2.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/mcp/all", json=body, headers=HEADERS)
    # The SDK answers a JSON-RPC error to a 2026-07-28 request with HTTP 400.
    assert response.status_code == (200 if "result" in response.json() else 400)
    data: dict[str, Any] = response.json()
    return data


async def test_a_state_the_gateway_sealed_for_this_call_reaches_the_upstream_opened() -> None:
    resumed: list[Any] = []

    async def call_tool(self: RecordingUpstream, *args: Any, **kwargs: Any) -> dict[str, Any]:
        relay = current_relay()
        resumed.append(relay.resume if relay is not None else None)
        return {"content": [{"type": "text", "text": "done"}], "isError": False}

    async with gateway_client() as (client, gateway, upstream, _):
        upstream.call_tool = call_tool.__get__(upstream)  # type: ignore[method-assign]
        answer = await _post(client, _retry(_seal(gateway)))
    assert answer["result"]["content"][0]["text"] == "done"
    assert resumed == [{"inputResponses": ANSWERS, "requestState": "upstream-own"}]


async def test_states_not_sealed_for_this_caller_and_call_are_refused_before_any_call() -> None:
    async with gateway_client() as (client, gateway, upstream, _):
        refused = [
            "upstream-own",  # an upstream's raw state, or anything a client makes up
            _seal(gateway, stamp="default\x1fanother-token"),
            _seal(gateway, tool="crm__delete_contact"),
            _seal(gateway, arguments={"name": "Eve"}),
            _seal(gateway)[:-4] + "AAAA",
        ]
        for state in refused:
            answer = await _post(client, _retry(state))
            assert answer["error"]["code"] == -32602, state
            assert "requestState is not valid" in answer["error"]["message"]
        assert upstream.calls == []


@pytest.mark.parametrize(
    ("accept", "caps", "offered"),
    [
        # Declared nothing: nothing offered (on main the gateway's own, so the upstream ran the tool).
        ("application/json", {}, {}),
        ("application/json, text/event-stream", {}, {}),
        ("application/json", {"sampling": {}}, {"sampling": {}}),
        (
            "application/json",
            {"elicitation": {"form": {}}, "roots": {}},
            {"elicitation": {"form": {}}, "roots": {}},
        ),
    ],
)
async def test_a_2026_07_28_client_s_declared_capabilities_are_offered_upstream_exactly(
    accept: str, caps: dict[str, Any], offered: dict[str, Any]
) -> None:
    """SEP-2322 / server-stateless: the upstream is told exactly what the client declared, so an upstream
    tool that needs an undeclared capability refuses it (-32021, passed through) instead of running."""
    seen: list[Any] = []

    async def call_tool(self: RecordingUpstream, *args: Any, **kwargs: Any) -> dict[str, Any]:
        relay = current_relay()
        seen.append(relay.for_call().offered_capabilities() if relay is not None else "no relay")
        return {"content": [{"type": "text", "text": "done"}], "isError": False}

    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": TOOL, "arguments": ARGS, "_meta": meta}}  # fmt: skip
    async with gateway_client() as (client, _gateway, upstream, _):
        upstream.call_tool = call_tool.__get__(upstream)  # type: ignore[method-assign]
        response = await client.post("/mcp/all", json=body, headers={**HEADERS, "accept": accept})
    assert response.status_code == 200, response.text
    assert seen == [offered]


async def test_a_handshake_era_client_s_call_keeps_the_gateway_s_own_capabilities_upstream() -> None:
    """Its capabilities are not in the request (initialize was another request, maybe elsewhere):
    nothing is claimed for it, so an upstream's request for input is refused and named in the error."""
    seen: list[Any] = []

    async def call_tool(self: RecordingUpstream, *args: Any, **kwargs: Any) -> dict[str, Any]:
        relay = current_relay()
        seen.append(relay.for_call().offered_capabilities() if relay is not None else "no relay")
        return {"content": [{"type": "text", "text": "done"}], "isError": False}

    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": TOOL, "arguments": ARGS}}
    headers = {
        "accept": "application/json",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
    }
    async with gateway_client() as (client, _gateway, upstream, _):
        upstream.call_tool = call_tool.__get__(upstream)  # type: ignore[method-assign]
        response = await client.post("/mcp/all", json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert seen == [None]
