"""The MCP endpoints' outer shell: a JSON 405 for every method but POST, a fixed refusal for batches
(no echo of the request), and a JSON-RPC internal error with a correlatable request id for anything
unexpected, on every MCP path."""

from __future__ import annotations

import logging

import pytest

from tests.gateway_fixture import gateway_client

PATHS = ("/mcp", "/mcp/all", "/mcp/call", "/mcp/code")
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
async def test_every_method_but_post_is_a_json_405(method: str) -> None:
    async with gateway_client() as (client, *_):
        for path in PATHS:
            # A GET is the SSE stream clients open after initialize: answered at once, never held open.
            r = await client.request(method, path, headers={"accept": "text/event-stream"})
            assert r.status_code == 405, (path, r.text)
            assert r.headers["allow"] == "POST"
            assert r.headers["content-type"].startswith("application/json")
            assert r.json()["error"]["code"] == -32600
            assert "POST" in r.json()["error"]["message"]


async def test_the_405_needs_no_credential_and_loads_no_sdk() -> None:
    async with gateway_client() as (client, *_):
        r = await client.get("/mcp/all", headers={"authorization": "Bearer nonsense"})
        assert r.status_code == 405
        assert client._transport.app.state.sdk is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "body",
    [
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]',
        b'  \n[{"jsonrpc":"2.0","id":"secret-fragment","method":"tools/call","params":{"name":"x"}}]',
        b"[]",
        b'[1, "secret-fragment"',
    ],
)
async def test_batches_get_a_fixed_error_that_echoes_nothing(body: bytes) -> None:
    async with gateway_client() as (client, *_):
        answers = set()
        for path in PATHS:
            r = await client.post(path, content=body, headers=HEADERS)
            assert r.status_code == 400
            assert r.json()["error"]["code"] == -32600
            assert "secret-fragment" not in r.text
            answers.add(r.text)
        assert len(answers) == 1  # the same words whatever the batch held


async def test_an_unexpected_error_is_a_jsonrpc_internal_error_with_a_logged_request_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with gateway_client() as (client, gateway, *_):

        def broken(*args: object, **kwargs: object) -> str:
            raise RuntimeError("a bug")

        gateway.listing_json = broken  # type: ignore[method-assign]
        body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
        with caplog.at_level(logging.ERROR, logger="foldgate.edge.guard"):
            r = await client.post("/mcp/all", content=body, headers=HEADERS)
        assert r.status_code == 500
        error = r.json()["error"]
        assert error["code"] == -32603
        assert "a bug" not in r.text  # the detail is for the operator's log, not the client
        rid = error["data"]["request_id"]
        assert rid
        assert any(rid in rec.getMessage() and rec.exc_info for rec in caplog.records)
