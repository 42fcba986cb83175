"""The upstream's log notifications on the Lambda path (tools-call-with-logging): a handshake-era client
that accepts text/event-stream gets them without sending a progress token, in the order sent and
before the result, in the one buffered event-stream body; they take at most
LAMBDA_NOTIFICATION_BYTES of it (later ones dropped, never the result); a 2026-07-28 client that names
no log level gets none, and a client that accepts only JSON gets the plain JSON answer."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from foldgate.edge.streaming import LAMBDA_NOTIFICATION_BYTES
from foldgate.upstream.relay import current_relay
from tests.gateway_fixture import RecordingUpstream, gateway_client

TOOL = "crm__create_contact"
ARGS = {"name": "Ada", "email": "ada@example.com"}
BOTH = "application/json, text/event-stream"


class _Context:
    """What Mangum puts in the scope as ``aws.context``: a Lambda invocation's time left."""

    def get_remaining_time_in_millis(self) -> int:
        return 25_000


def _on_lambda(app: ASGIApp) -> ASGIApp:
    async def invoked(scope: Scope, receive: Receive, send: Send) -> None:
        await app({**scope, "aws.context": _Context()}, receive, send)

    return invoked


def _logging_upstream(upstream: RecordingUpstream, lines: list[Any]) -> None:
    async def call_tool(self: RecordingUpstream, *args: Any, **kwargs: Any) -> dict[str, Any]:
        relay = current_relay()
        assert relay is not None
        for line in lines:
            message = {"method": "notifications/message", "params": {"level": "info", "data": line}}
            await relay.notification("crm", message)
        return {"content": [{"type": "text", "text": "done"}], "isError": False}

    upstream.call_tool = call_tool.__get__(upstream)  # type: ignore[method-assign]


def _events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


async def _post(
    lines: list[Any], accept: str, version: str = "2025-11-25", meta: Any = None
) -> httpx2.Response:
    params: dict[str, Any] = {"name": TOOL, "arguments": ARGS}
    headers = {"content-type": "application/json", "accept": accept, "mcp-protocol-version": version}
    if meta is not None:
        params["_meta"] = meta
        headers |= {"mcp-method": "tools/call", "mcp-name": TOOL}
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
    async with gateway_client() as (client, _gateway, upstream, _):
        _logging_upstream(upstream, lines)
        app = client._transport.app  # type: ignore[attr-defined]
        lambda_transport = httpx2.ASGITransport(app=_on_lambda(app))
        async with httpx2.AsyncClient(transport=lambda_transport, base_url="http://testserver") as on_lambda:
            return await on_lambda.post("/mcp/all", json=body, headers=headers)


async def test_logs_reach_a_client_without_a_progress_token_before_the_result_in_order() -> None:
    r = await _post(["started", "working", "done"], BOTH)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    *logs, answer = _events(r.text)
    assert [m["method"] for m in logs] == ["notifications/message"] * 3
    assert [m["params"]["data"] for m in logs] == ["started", "working", "done"]
    assert answer["id"] == 5
    assert answer["result"]["content"][0]["text"] == "done"


async def test_the_logs_take_at_most_their_share_of_the_buffered_response() -> None:
    line = "x" * 60_000
    r = await _post([f"{i:03d}{line}" for i in range(40)], BOTH)  # ~2.4 MB of logs
    *logs, answer = _events(r.text)
    assert answer["result"]["content"][0]["text"] == "done"
    sent = [m["params"]["data"][:3] for m in logs]
    assert sent == [f"{i:03d}" for i in range(len(sent))]  # a prefix, in order: nothing skipped between
    assert 0 < len(sent) < 40
    relayed = sum(len(json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode()) for m in logs)
    assert relayed <= LAMBDA_NOTIFICATION_BYTES


@pytest.mark.parametrize(
    ("accept", "version", "meta"),
    [
        ("application/json", "2025-11-25", None),
        (BOTH, "2026-07-28", {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {}}),
    ],
)  # fmt: skip
async def test_no_logs_for_a_json_only_client_or_a_2026_client_that_named_no_level(
    accept: str, version: str, meta: Any
) -> None:
    r = await _post(["started"], accept, version, meta)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["result"]["content"][0]["text"] == "done"
