"""Which calls the edge answers as event streams, and whose replies reach a waiting request for input:
only the credential that was asked can answer it (another caller's reply is not routed)."""

from __future__ import annotations

import asyncio
import json

from starlette.requests import Request

from foldgate.edge.elicitation import CLIENTS
from foldgate.edge.jsonrpc import PlainRequest
from foldgate.edge.streaming import PENDING, _Waiting, streamable, take_reply
from foldgate.model.principal import Principal
from foldgate.model.rpc_body import RpcBody

ME = Principal("default", key="me")
OTHER = Principal("default", key="other")
BOTH = "application/json, text/event-stream"


def _request(accept: str) -> Request:
    return Request({"type": "http", "method": "POST", "headers": [(b"accept", accept.encode())]})


def _call(meta: dict[str, object] | None = None, version: str = "2025-11-25") -> PlainRequest:
    params: dict[str, object] = {"name": "t", **({"_meta": meta} if meta else {})}
    return PlainRequest(1, "tools/call", params, version)


def test_a_progress_token_and_an_event_stream_accept_open_a_stream() -> None:
    CLIENTS.clear()
    token = {"progressToken": "p"}
    assert streamable(_call(token), _request(BOTH), ME, asks=True) == frozenset()
    assert streamable(_call(token), _request("application/json"), ME, asks=True) is None
    assert streamable(_call(token, "2026-07-28"), _request(BOTH), ME, asks=True) == frozenset()


def test_a_client_that_hears_logs_may_get_a_stream_without_a_progress_token() -> None:
    """A handshake-era client hears every level (it cannot say otherwise per request), also on Lambda;
    a 2026-07-28 client only when its _meta names a level (no log without logLevel, SEP-2575)."""
    CLIENTS.clear()
    assert streamable(_call(), _request(BOTH), ME, asks=True) == frozenset()
    assert streamable(_call(), _request(BOTH), ME, asks=False) == frozenset()
    assert streamable(_call(), _request("application/json"), ME, asks=False) is None
    modern = "2026-07-28"
    assert streamable(_call(version=modern), _request(BOTH), ME, asks=False) is None
    level = {"io.modelcontextprotocol/logLevel": "info"}
    assert streamable(_call(level, modern), _request(BOTH), ME, asks=False) == frozenset()
    bogus = {"io.modelcontextprotocol/logLevel": "loud"}
    assert streamable(_call(bogus, modern), _request(BOTH), ME, asks=False) is None


def test_a_declared_elicitation_opens_a_stream_only_where_replies_can_be_routed() -> None:
    CLIENTS.clear()
    try:
        CLIENTS.note(ME.stamp, {"elicitation": {}, "sampling": {}})
        wanted = frozenset({"elicitation/create", "sampling/createMessage"})
        assert streamable(_call(), _request(BOTH), ME, asks=True) == wanted
        # Another credential, or the Lambda path: a stream for logs and progress, never for input.
        assert streamable(_call(), _request(BOTH), OTHER, asks=True) == frozenset()
        assert streamable(_call(), _request(BOTH), ME, asks=False) == frozenset()
        # At 2026-07-28 a request for input is an input_required result, never on the stream.
        assert streamable(_call(version="2026-07-28"), _request(BOTH), ME, asks=True) is None
        CLIENTS.note(ME.stamp, {"elicitation": {"url": {}}})
        # URL mode alone is asked for in the JSON answer's error, never on the stream.
        assert streamable(_call(), _request(BOTH), ME, asks=True) == frozenset()
    finally:
        CLIENTS.clear()


async def test_only_the_asked_credential_can_answer() -> None:
    waiting = _Waiting(ME.stamp, asyncio.get_running_loop().create_future())
    PENDING["foldgate-abc"] = waiting
    try:
        raw = json.dumps({"jsonrpc": "2.0", "id": "foldgate-abc", "result": {"action": "accept"}}).encode()
        reply = RpcBody(raw)
        assert not take_reply(reply, OTHER)
        assert not waiting.answer.done()
        unknown = RpcBody(raw.replace(b"foldgate-abc", b"foldgate-xyz"))
        assert not take_reply(unknown, ME)
        assert take_reply(reply, ME)
        assert waiting.answer.result() == {"result": {"action": "accept"}}
        assert not take_reply(reply, ME)  # answered once
    finally:
        PENDING.clear()


async def test_an_error_reply_reaches_the_upstream_as_code_and_message_only() -> None:
    waiting = _Waiting(ME.stamp, asyncio.get_running_loop().create_future())
    PENDING["foldgate-err"] = waiting
    try:
        error = {"code": -1, "message": "no" * 400, "data": {"secret": 1}}
        raw = json.dumps({"jsonrpc": "2.0", "id": "foldgate-err", "error": error}).encode()
        assert take_reply(RpcBody(raw), ME)
        said = ("no" * 400)[:500] + "… (300 bytes cut)"  # the one bound (model/bounded.py)
        assert waiting.answer.result() == {"error": {"code": -1, "message": said}}
    finally:
        PENDING.clear()
