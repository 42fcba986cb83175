"""Protocol faults found by running the official conformance suite through foldgate (issue 28 item 6):
``subscriptions/listen`` is answered -32601 rather than an HTTP 500 with no body; resource-not-found is
-32602 with ``data.uri`` at 2026-07-28 (SEP-2164) and -32002 with ``data.uri`` before, the URI being the
one the caller sent, also when the upstream said not-found about its own URI; an upstream's -32021
(missing required client capability) reaches the client as that error with its data, on the plain
path and the SDK path, instead of a tool error result."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from foldgate.config.tenant import ServerConfig
from foldgate.edge.protocol import modern_error_status
from foldgate.errors import UpstreamProtocolError
from foldgate.upstream.call_errors import passed_through
from foldgate.upstream.plain_session import RpcError
from tests.gateway_fixture import gateway_client
from tests.unit.edge.test_mcp_offerings import LEGACY, MODERN_META, H, add_offerings, rpc

MODERN = {**H, "mcp-protocol-version": "2026-07-28"}


async def post_modern(client: httpx2.AsyncClient, method: str, params: dict[str, Any]) -> httpx2.Response:
    msg = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": MODERN_META}}
    headers = {**MODERN, "mcp-method": method}
    if "uri" in params:
        headers["mcp-name"] = params["uri"]
    return await client.post("/mcp/all", json=msg, headers=headers)


async def test_subscriptions_listen_is_method_not_found_not_a_500() -> None:
    async with gateway_client() as (client, *_):
        r = await post_modern(client, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        # 404 at 2026-07-28, as the SDK's modern transport sends -32601.
        assert r.status_code == 404
        assert r.json() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32601, "message": "Method not found: subscriptions/listen"},
        }


def test_modern_error_statuses_are_the_sdks() -> None:
    from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

    for code in (-32700, -32600, -32602, -32020, -32021, -32601, -32603, -32000):
        assert modern_error_status(code) == ERROR_CODE_HTTP_STATUS.get(code, 200), code


async def test_a_missing_resource_is_invalid_params_with_the_uri_at_2026_07_28() -> None:
    async with gateway_client() as (client, gateway, *_):
        add_offerings(gateway)
        uri = "foldgate://ghost00/mem%3A%2F%2Fnote"
        error = (await post_modern(client, "resources/read", {"uri": uri})).json()["error"]
        assert error["code"] == -32602
        assert error["data"] == {"uri": uri}
        legacy = (await rpc(client, "resources/read", {"uri": uri}))["error"]
        assert legacy["code"] == -32002
        assert legacy["data"] == {"uri": uri}


@pytest.mark.parametrize("upstream_code", [-32002, -32602])
async def test_an_upstreams_not_found_names_the_published_uri_never_its_own(upstream_code: int) -> None:
    async with gateway_client() as (client, gateway, upstream, _):
        add_offerings(gateway)

        async def missing(server: ServerConfig, method: str, params: dict[str, Any]) -> dict[str, Any]:
            raise MCPError(upstream_code, f"Resource {params['uri']} not found", {"uri": params["uri"]})

        upstream.request = missing  # type: ignore[method-assign]
        uri = "foldgate://crm/mem%3A%2F%2Fnote"
        for error, code in (
            ((await post_modern(client, "resources/read", {"uri": uri})).json()["error"], -32602),
            ((await rpc(client, "resources/read", {"uri": uri}))["error"], -32002),
        ):
            assert error["code"] == code
            assert error["data"] == {"uri": uri}
            assert "mem://note" not in error["message"]


REQUIRED = {"sampling": {}}


@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_an_upstreams_missing_capability_error_reaches_the_client_with_its_data(
    accept: str, era: str
) -> None:
    # "application/json" alone is answered by the plain path; with event-stream too, by the SDK.
    async with gateway_client() as (client, _gateway, upstream, _):
        upstream.fail["create_contact"] = UpstreamProtocolError(
            "sampling is required", -32021, {"requiredCapabilities": REQUIRED}
        )
        params: dict[str, Any] = {
            "name": "crm__create_contact",
            "arguments": {"name": "Ada", "email": "a@b.co"},
        }
        headers = {**(LEGACY if era == "legacy" else MODERN), "accept": accept}
        if era == "modern":
            params["_meta"] = MODERN_META
            headers["mcp-method"] = "tools/call"
            headers["mcp-name"] = "crm__create_contact"
        msg = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
        r = await client.post("/mcp/all", json=msg, headers=headers)
        # 2026-07-28: the status the spec gives the error (400), on either path.
        assert r.status_code == (200 if era == "legacy" else 400), r.text
        body = r.json()
        assert "result" not in body, body
        assert body["error"]["code"] == -32021
        assert body["error"]["data"] == {"requiredCapabilities": REQUIRED}
        assert upstream.calls, "the call reached the upstream"


def test_only_capability_errors_pass_through_and_their_data_is_bounded() -> None:
    passed = passed_through(RpcError(-32021, "needs sampling", {"requiredCapabilities": REQUIRED, "x": 1}))
    assert passed is not None
    assert (passed.rpc_code, passed.message, passed.rpc_data) == (
        -32021,
        "needs sampling",
        {"requiredCapabilities": REQUIRED},
    )
    huge = passed_through(RpcError(-32021, "m" * 10_000, {"requiredCapabilities": {"x": "y" * 10_000}}))
    assert huge is not None
    assert huge.message == "m" * 500 + "… (9500 bytes cut)"  # the one bound (model/bounded.py)
    assert huge.rpc_data is None
    shaped_wrong = passed_through(RpcError(-32021, "m", {"requiredCapabilities": ["sampling"]}))
    assert shaped_wrong is not None
    assert shaped_wrong.rpc_data is None
    assert passed_through(RpcError(-32603, "internal", None)) is None
    assert passed_through(ValueError("not an rpc error")) is None
