"""Differential: the plain session and the MCP SDK's client give the same answers from real upstreams.

Each call goes once through ``PlainSession.request`` and once through the SDK's ``Client`` session
(``send_request`` with a raw result, as the pool used it before): server-everything (handshake era,
stateful; SSE answers, progress notifications interleaved before the response) and the replay upstream
(2026-07-28, stateless). Results must be equal dicts (content, structuredContent, isError, _meta and
all); upstream errors must carry the same code and message.
"""

from __future__ import annotations

import contextlib
import re
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest
from pydantic import TypeAdapter

from foldgate.upstream.plain_session import PlainSession, RpcError, SessionExpiredError
from tests.procs import Replay, replay

_RAW = TypeAdapter(dict[str, Any])
# server-everything stamps dynamic resources with the wall-clock time ("3:57:02 PM"): two calls made a
# moment apart straddle a second now and then (more often on a loaded machine), so times are masked.
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?\b")


def unclocked(value: Any) -> Any:
    """The value with every wall-clock time in its strings replaced by a placeholder."""
    if isinstance(value, str):
        return _CLOCK.sub("<time>", value)
    if isinstance(value, list):
        return [unclocked(v) for v in value]
    if isinstance(value, dict):
        return {k: unclocked(v) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def rp() -> Iterator[Replay]:
    with replay() as running:
        yield running


@contextlib.asynccontextmanager
async def sessions(url: str) -> AsyncIterator[tuple[PlainSession, Any]]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    plain = PlainSession("up", url, httpx2.AsyncClient(timeout=30), era=None)
    await plain.open()
    try:
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            # Declaring what the plain session declares (it relays elicitation and sampling), so both
            # see the same capability-dependent tools.
            Client(
                streamable_http_client(url, http_client=http),
                cache=None,
                elicitation_callback=_never,
                sampling_callback=_never,
            ) as sdk,
        ):
            yield plain, sdk.session
    finally:
        await plain.aclose()


async def _never(*args: Any) -> Any:
    raise AssertionError("no request for input is expected here")


async def outcome(send: Any) -> Any:
    """A result dict, or ("error", code, message) for an upstream JSON-RPC error from either client."""
    from mcp.shared.exceptions import MCPError

    try:
        return await send()
    except (RpcError, MCPError) as exc:
        return ("error", exc.code, exc.message)


async def both(plain: PlainSession, sdk: Any, params: dict[str, Any]) -> tuple[Any, Any]:
    import mcp_types as types

    request = types.CallToolRequest.model_validate({"method": "tools/call", "params": params})
    mine = await outcome(lambda: plain.request("tools/call", params))
    theirs = await outcome(lambda: sdk.send_request(request, _RAW))
    return mine, theirs


EVERYTHING_CALLS = [
    {"name": "echo", "arguments": {"message": "hello ✓"}},
    {"name": "get-sum", "arguments": {"a": 2, "b": 3.5}},
    {"name": "get-annotated-message", "arguments": {"messageType": "error", "includeImage": True}},
    {"name": "get-tiny-image", "arguments": {}},
    {"name": "get-resource-links", "arguments": {"count": 2}},
    {"name": "get-resource-reference", "arguments": {}},
    {"name": "get-structured-content", "arguments": {"location": "Chicago"}},
    # Progress notifications stream before the response on the same SSE answer.
    {
        "name": "trigger-long-running-operation",
        "arguments": {"duration": 0.3, "steps": 3},
        "_meta": {"progressToken": 7},
    },
    {"name": "echo", "arguments": {}},  # invalid arguments
    {"name": "no-such-tool", "arguments": {}},
]


async def test_server_everything_answers_both_clients_alike(everything_url: str) -> None:
    async with sessions(everything_url) as (plain, sdk):
        assert plain.negotiated() == ("legacy", None)
        assert plain.version == sdk.protocol_version
        for params in EVERYTHING_CALLS:
            mine, theirs = await both(plain, sdk, params)
            assert unclocked(mine) == unclocked(theirs), params["name"]
        assert (await both(plain, sdk, EVERYTHING_CALLS[0]))[0]["content"][0]["text"] == "Echo: hello ✓"


async def test_a_stateless_upstream_answers_both_clients_alike(rp: Replay) -> None:
    async with sessions(rp.urls["crm"]) as (plain, sdk):
        era = plain.negotiated()
        assert era is not None
        assert era[0] == sdk.protocol_version == "2026-07-28"
        assert plain.session_id is None
        for params in (
            {"name": "find_contact", "arguments": {"query": "ada"}},
            {"name": "create_contact", "arguments": {"name": "Ada", "email": "ada@example.com"}},
            {"name": "no_such_tool", "arguments": {}},
        ):
            mine, theirs = await both(plain, sdk, params)
            assert mine == theirs, params["name"]


async def test_listing_answers_both_clients_alike(everything_url: str, rp: Replay) -> None:
    import mcp_types as types

    for url in (everything_url, rp.urls["crm"]):
        async with sessions(url) as (plain, sdk):
            request = types.ListToolsRequest()
            assert await plain.send_request(request, _RAW) == await sdk.send_request(request, _RAW)
            assert plain.server_capabilities is not None
            assert set(plain.server_capabilities) == set(
                sdk.server_capabilities.model_dump(by_alias=True, exclude_none=True)
            )


async def test_a_session_the_upstream_ends_midway_is_reported_expired(everything_url: str) -> None:
    plain = PlainSession("ev", everything_url, httpx2.AsyncClient(timeout=30), era=None)
    await plain.open()
    try:
        assert await plain.request("tools/call", {"name": "echo", "arguments": {"message": "a"}})
        assert plain.session_id is not None
        req = urllib.request.Request(
            everything_url, method="DELETE", headers={"mcp-session-id": plain.session_id}
        )
        urllib.request.urlopen(req, timeout=5).close()
        with pytest.raises(SessionExpiredError, match="ev: tools/call: the upstream ended the session"):
            await plain.request("tools/call", {"name": "echo", "arguments": {"message": "b"}})
        assert plain.expired
    finally:
        await plain.aclose()


async def test_an_upstream_json_rpc_error_reaches_both_clients_alike(everything_url: str) -> None:
    import mcp_types as types

    async with sessions(everything_url) as (plain, sdk):
        params = {"uri": "nope://missing"}
        request = types.ReadResourceRequest.model_validate({"method": "resources/read", "params": params})
        mine = await outcome(lambda: plain.request("resources/read", params))
        theirs = await outcome(lambda: sdk.send_request(request, _RAW))
        assert mine == theirs
        assert mine[:2] == ("error", -32602)
