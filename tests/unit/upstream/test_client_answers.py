"""How the upstream client turns a pooled session's answers into results and errors, and when it
sends a call again: a scripted upstream behind the pool's HTTP client (no network)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamError, UpstreamProtocolError
from foldgate.model.bounded import MESSAGE_BYTES
from foldgate.upstream import pool
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.relay import MAX_INPUT_ROUNDS, Relay, relaying

SERVER = ServerConfig(name="up", url="http://127.0.0.1:9/mcp", timeout_s=5)
READ_ONLY = {"readOnlyHint": True}
Answer = Callable[[dict[str, Any]], httpx2.Response]


class Scripted:
    """A handshake-era upstream whose tools/call answers come from ``calls`` in turn."""

    def __init__(self, *calls: Answer) -> None:
        self.calls = list(calls)
        self.seen: list[str] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        msg = json.loads(request.content) if request.content else {}
        method = msg.get("method", request.method)
        self.seen.append(method)
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
            body = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
            return httpx2.Response(
                200, json=body, headers={"mcp-session-id": f"s{self.seen.count('initialize')}"}
            )
        if method == "tools/call":
            return self.calls.pop(0)(msg)
        return httpx2.Response(202)


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Scripted]:
    def install(*calls: Answer) -> Scripted:
        scripted = Scripted(*calls)

        def client(headers: Any, **_: Any) -> httpx2.AsyncClient:
            return httpx2.AsyncClient(headers=dict(headers), transport=httpx2.MockTransport(scripted.handle))

        monkeypatch.setattr(pool, "session_http_client", client)
        return scripted

    return install


def text(msg: dict[str, Any], value: str) -> httpx2.Response:
    result = {"content": [{"type": "text", "text": value}]}
    return httpx2.Response(200, json={"jsonrpc": "2.0", "id": msg["id"], "result": result})


def sse_bytes(body: bytes) -> Answer:
    return lambda msg: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


async def call(annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    client = UpstreamClient(allow_private=True)
    try:
        return await client.call_tool(SERVER, "t", {}, annotations=annotations)
    finally:
        await client.aclose()


async def test_a_garbled_answer_is_a_clear_error_and_never_sent_again(
    upstream: Callable[..., Scripted],
) -> None:
    scripted = upstream(sse_bytes(b"data: {not json\n\n"), lambda m: text(m, "again"))
    with pytest.raises(UpstreamError, match=r"^up: tools/call: SSE event: not JSON$"):
        await call(READ_ONLY)  # even a read-only call: the upstream got it and answered
    assert scripted.seen.count("tools/call") == 1


async def test_an_oversized_answer_is_a_clear_error(
    upstream: Callable[..., Scripted], monkeypatch: pytest.MonkeyPatch
) -> None:
    from foldgate.upstream import plain_session

    monkeypatch.setattr(plain_session, "MAX_MESSAGE_BYTES", 100)
    upstream(lambda m: text(m, "x" * 500))
    with pytest.raises(UpstreamError, match=r"^up: tools/call: answer larger than 100 bytes$"):
        await call()


async def test_an_upstream_json_rpc_error_names_the_server_and_tool(
    upstream: Callable[..., Scripted],
) -> None:
    error = {"code": -32602, "message": "Tool t not found"}
    upstream(lambda m: httpx2.Response(200, json={"jsonrpc": "2.0", "id": m["id"], "error": error}))
    with pytest.raises(UpstreamError, match=r"^up: t failed upstream: Tool t not found$") as raised:
        await call()
    # Kept for a task's call, which fails with the upstream's own code (never shown in a tool result).
    assert raised.value.details["rpc_code"] == -32602


async def test_an_upstream_error_message_of_5_mb_reaches_the_agent_bounded(
    upstream: Callable[..., Scripted],
) -> None:
    """A hostile upstream's error text is cut to one bound, saying how much was cut (it reached the
    agent whole, 5,243,087 bytes, on main)."""
    error = {"code": -32603, "message": "E" * 5_243_087}
    upstream(lambda m: httpx2.Response(200, json={"jsonrpc": "2.0", "id": m["id"], "error": error}))
    with pytest.raises(UpstreamError) as raised:
        await call()
    message = raised.value.message
    assert message == "up: t failed upstream: " + "E" * MESSAGE_BYTES + "… (5242087 bytes cut)"


async def test_a_passed_through_error_is_bounded_by_the_same_helper(
    upstream: Callable[..., Scripted],
) -> None:
    error = {"code": -32021, "message": "needs " + "x" * 10_000, "data": {"requiredCapabilities": {}}}
    upstream(lambda m: httpx2.Response(200, json={"jsonrpc": "2.0", "id": m["id"], "error": error}))
    with pytest.raises(UpstreamProtocolError) as raised:
        await call()
    assert raised.value.message.endswith("… (9506 bytes cut)")


async def test_a_stream_that_ends_without_an_answer_is_resent_only_when_safe(
    upstream: Callable[..., Scripted],
) -> None:
    cut = sse_bytes(b'data: {"jsonrpc": "2.0", "method": "notifications/progress"}\n\n')
    scripted = upstream(cut, lambda m: text(m, "second"))
    with pytest.raises(UpstreamError, match="ended without a response"):
        await call()
    assert scripted.seen.count("tools/call") == 1
    scripted = upstream(cut, lambda m: text(m, "second"))
    assert await call(READ_ONLY) == {"content": [{"type": "text", "text": "second"}]}
    assert scripted.seen.count("initialize") == 2  # the lost session was replaced, not reused


async def test_an_expired_session_is_reopened_and_the_call_sent_again(
    upstream: Callable[..., Scripted],
) -> None:
    scripted = upstream(lambda m: httpx2.Response(404), lambda m: text(m, "fresh"))
    assert await call() == {"content": [{"type": "text", "text": "fresh"}]}
    assert scripted.seen == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/call",
        "initialize",  # the era is remembered: no second probe
        "notifications/initialized",
        "tools/call",
        "DELETE",  # on close, the live session only: the expired one is gone already
    ]


class ScriptedModern(Scripted):
    """A 2026-07-28 upstream (it answers server/discover); records each tools/call's params. Only a
    ``handshake`` one also accepts initialize (a half-upgraded upstream); else it is not found."""

    def __init__(self, *calls: Answer, handshake: bool = False) -> None:
        super().__init__(*calls)
        self.params: list[dict[str, Any]] = []
        self.handshake = handshake

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        msg = json.loads(request.content) if request.content else {}
        if msg.get("method") == "initialize" and not self.handshake:
            self.seen.append("initialize")
            error = {"code": -32601, "message": "Method not found: initialize"}
            return httpx2.Response(404, json={"jsonrpc": "2.0", "id": msg["id"], "error": error})
        if msg.get("method") == "server/discover":
            result = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "resultType": "complete",
            }
            return httpx2.Response(200, json={"jsonrpc": "2.0", "id": msg["id"], "result": result})
        if msg.get("method") == "tools/call":
            self.params.append(msg["params"])
        return super().handle(request)


def asks_name(msg: dict[str, Any]) -> httpx2.Response:
    request = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {}}}
    result = {"resultType": "input_required", "inputRequests": {"name": request}, "requestState": "up-1"}
    return httpx2.Response(200, json={"jsonrpc": "2.0", "id": msg["id"], "result": result})


@pytest.mark.parametrize("rounds", [1, MAX_INPUT_ROUNDS + 1])
async def test_a_modern_upstreams_input_required_is_answered_on_the_clients_stream_for_bounded_rounds(
    monkeypatch: pytest.MonkeyPatch, rounds: int
) -> None:
    """For a handshake-era client that takes the request on its stream, the call is sent again with
    the client's reply and the upstream's own state; an upstream that never stops asking ends in an
    error after MAX_INPUT_ROUNDS rounds."""
    answers: list[Answer] = [asks_name] * rounds + [lambda m: text(m, "done")]
    scripted = ScriptedModern(*answers)

    def client(headers: Any, **_: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers=dict(headers), transport=httpx2.MockTransport(scripted.handle))

    monkeypatch.setattr(pool, "session_http_client", client)

    async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"result": {"action": "accept", "content": {"name": "Ada"}}}

    with relaying(Relay(ask=ask, asks=frozenset({"elicitation/create"}))):
        if rounds > MAX_INPUT_ROUNDS:
            with pytest.raises(UpstreamError, match=f"still asked for input after {MAX_INPUT_ROUNDS} rounds"):
                await call()
        else:
            assert await call() == {"content": [{"type": "text", "text": "done"}]}
    assert len(scripted.params) == min(rounds, MAX_INPUT_ROUNDS) + 1
    assert "inputResponses" not in scripted.params[0]
    for retry in scripted.params[1:]:
        assert retry["inputResponses"] == {"name": {"action": "accept", "content": {"name": "Ada"}}}
        assert retry["requestState"] == "up-1"


async def test_a_2025_era_clients_relaying_call_goes_to_a_half_upgraded_upstream_at_2025(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An upstream that offers 2026-07-28 and accepts the handshake: a call from a 2025-era client
    that takes input on its stream is sent on a handshake-era session (kept for the next such call);
    a call from a client that takes none stays on the upstream's newest version."""
    scripted = ScriptedModern(*[lambda m: text(m, "ok")] * 3, handshake=True)

    def client(headers: Any, **_: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers=dict(headers), transport=httpx2.MockTransport(scripted.handle))

    monkeypatch.setattr(pool, "session_http_client", client)

    async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"result": {}}

    upstream_client = UpstreamClient(allow_private=True)
    try:
        with relaying(Relay(ask=ask, asks=frozenset({"sampling/createMessage"}))):
            await upstream_client.call_tool(SERVER, "t", {})
            await upstream_client.call_tool(SERVER, "t", {})
        await upstream_client.call_tool(SERVER, "t", {})
    finally:
        await upstream_client.aclose()
    # (server/discover is answered without being recorded in ``seen``.)
    assert scripted.seen == [
        "initialize",
        "notifications/initialized",
        "tools/call",
        "tools/call",
        "tools/call",
        "DELETE",
    ]
    # The first two calls were in the session (no 2026-07-28 _meta); the third was stateless.
    assert [p.get("_meta", {}).get("io.modelcontextprotocol/protocolVersion") for p in scripted.params] == [
        None,
        None,
        "2026-07-28",
    ]


async def test_an_upstream_that_refuses_the_handshake_is_asked_once_then_called_at_its_newest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted = ScriptedModern(*[lambda m: text(m, "ok")] * 2)

    def client(headers: Any, **_: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers=dict(headers), transport=httpx2.MockTransport(scripted.handle))

    monkeypatch.setattr(pool, "session_http_client", client)

    async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"result": {}}

    upstream_client = UpstreamClient(allow_private=True)
    try:
        with relaying(Relay(ask=ask, asks=frozenset({"elicitation/create"}))):
            for _ in range(2):
                assert await upstream_client.call_tool(SERVER, "t", {}) == {
                    "content": [{"type": "text", "text": "ok"}]
                }
    finally:
        await upstream_client.aclose()
    assert scripted.seen.count("initialize") == 1
    assert len(scripted.params) == 2
