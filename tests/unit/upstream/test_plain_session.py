"""The plain session against a scripted upstream: negotiation per era, the headers each request carries,
answers read from JSON or SSE, expiry, refusals, and the constants it shares with the SDK."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from foldgate.errors import UpstreamError
from foldgate.model.deadline import answering_by
from foldgate.upstream import net_guard
from foldgate.upstream.plain_session import (
    _LATER_FIELDS,
    HANDSHAKE_VERSIONS,
    MODERN_VERSIONS,
    PlainSession,
    RpcError,
    SessionExpiredError,
    _header_value,
)
from foldgate.upstream.relay import Relay, relaying
from foldgate.upstream.wire import WireError

URL = "http://up.test/mcp"
Answer = Callable[[dict[str, Any], httpx2.Request], httpx2.Response]


def sse(*messages: dict[str, Any]) -> httpx2.Response:
    body = b"".join(b"event: message\ndata: " + json.dumps(m).encode() + b"\n\n" for m in messages)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def ok(msg: dict[str, Any], result: dict[str, Any], **headers: str) -> httpx2.Response:
    return httpx2.Response(200, json={"jsonrpc": "2.0", "id": msg["id"], "result": result}, headers=headers)


def error(msg: dict[str, Any], code: int, text: str, data: Any = None, status: int = 200) -> httpx2.Response:
    err: dict[str, Any] = {"code": code, "message": text}
    if data is not None:
        err["data"] = data
    return httpx2.Response(status, json={"jsonrpc": "2.0", "id": msg.get("id"), "error": err})


class Upstream:
    """A scripted upstream: ``answers[method]`` answers a message; records every request it saw."""

    def __init__(self, *, modern: bool = False, version: str = "2025-11-25") -> None:
        self.seen: list[tuple[str, dict[str, Any] | None, httpx2.Headers]] = []
        self.answers: dict[str, Answer] = {}
        if modern:
            discover = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "resultType": "complete",
            }
            self.answers["server/discover"] = lambda m, r: ok(m, discover)
        else:
            self.answers["server/discover"] = lambda m, r: error(m, -32601, "Method not found", status=400)
        self.answers["initialize"] = lambda m, r: ok(
            m, {"protocolVersion": version, "capabilities": {"tools": {}}}, **{"mcp-session-id": "s-1"}
        )
        self.answers["notifications/initialized"] = lambda m, r: httpx2.Response(202)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        msg = json.loads(request.content) if request.content else None
        self.seen.append((request.method, msg, request.headers))
        if request.method == "DELETE":
            return httpx2.Response(200)
        assert msg is not None
        key = msg.get("method") or "reply"
        return self.answers[key](msg, request) if key in self.answers else httpx2.Response(202)

    def session(self, era: tuple[str, Any] | None = None) -> PlainSession:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        return PlainSession("up", URL, http, era=era)

    def methods(self) -> list[str]:
        return [
            f"{verb} {(msg or {}).get('method') or ('reply' if msg else '')}".strip()
            for verb, msg, _ in self.seen
        ]


async def test_a_handshake_era_upstream_is_probed_then_initialised_and_its_session_kept() -> None:
    up = Upstream(version="2025-06-18")
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": [], "resultType": "complete", "ttlMs": -5})
    session = up.session()
    await session.open()
    assert session.negotiated() == ("legacy", None)
    result = await session.request("tools/call", {"name": "t", "arguments": {}})
    # As the SDK session: later revisions' fields of this method dropped on a handshake-era session, a
    # negative ttlMs floored (tools/call defines none in any revision, so it is not "later").
    assert result == {"content": [], "ttlMs": 0}
    await session.aclose()
    assert up.methods() == [
        "POST server/discover",
        "POST initialize",
        "POST notifications/initialized",
        "POST tools/call",
        "DELETE",
    ]
    init_headers, call_headers, delete_headers = up.seen[1][2], up.seen[3][2], up.seen[4][2]
    assert "mcp-session-id" not in init_headers
    assert "mcp-protocol-version" not in init_headers
    assert up.seen[1][1]["params"]["protocolVersion"] == HANDSHAKE_VERSIONS[-1]  # type: ignore[index]
    for headers in (up.seen[2][2], call_headers, delete_headers):
        assert headers["mcp-session-id"] == "s-1"
        assert headers["mcp-protocol-version"] == "2025-06-18"
    assert call_headers["accept"] == "application/json, text/event-stream"


async def test_a_remembered_legacy_era_skips_the_probe() -> None:
    up = Upstream()
    await up.session(("legacy", None)).open()
    assert up.methods() == ["POST initialize", "POST notifications/initialized"]


async def test_a_modern_upstream_is_adopted_and_then_called_statelessly() -> None:
    up = Upstream(modern=True)
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": [], "resultType": "complete", "ttlMs": -1})
    session = up.session()
    await session.open()
    era = session.negotiated()
    assert era is not None
    assert era[0] == "2026-07-28"
    result = await session.request(
        "tools/call", {"name": "naïve tool", "arguments": {"q": 1}, "_meta": {"k": 1}}
    )
    assert result == {"content": [], "resultType": "complete", "ttlMs": 0}  # a negative hint floored
    _, msg, headers = up.seen[-1]
    assert msg is not None
    assert msg["params"]["_meta"] == {
        "k": 1,
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {
            "name": "foldgate",
            "version": msg["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["version"],
        },
        # The gateway relays elicitation and sampling to its own clients, so it declares them.
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}, "url": {}},
            "sampling": {},
        },
    }
    assert headers["mcp-protocol-version"] == "2026-07-28"
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == _header_value("naïve tool") != "naïve tool"
    assert "mcp-session-id" not in headers
    # The next session to this upstream adopts the remembered era: no traffic at all.
    again = Upstream(modern=True)
    await again.session(era).open()
    assert again.seen == []
    await session.aclose()
    assert up.methods()[-1] == "POST tools/call"  # no session: nothing to DELETE


@pytest.mark.parametrize(
    ("takes", "offered"),
    [
        ({"sampling/createMessage"}, {"sampling": {}}),
        ({"elicitation/create", "roots/list"}, {"elicitation": {"form": {}}, "roots": {}}),
    ],
)
async def test_a_relayed_call_offers_a_modern_upstream_only_the_clients_capabilities(
    takes: set[str], offered: dict[str, Any]
) -> None:
    """SEP-2322: an upstream asks only for what its client can answer, so a call relayed for a client
    that takes some requests for input tells the upstream exactly those (never the gateway's own)."""
    up = Upstream(modern=True)
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": [], "resultType": "complete"})
    session = up.session()
    await session.open()
    with relaying(Relay(input_required=frozenset(takes))):
        await session.request("tools/call", {"name": "t", "arguments": {}})
    _, msg, _ = up.seen[-1]
    assert msg is not None
    assert msg["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == offered


async def test_a_probe_refused_with_a_mutual_modern_version_is_retried_at_it() -> None:
    up = Upstream(modern=True)
    adopt = up.answers["server/discover"]
    up.answers["server/discover"] = lambda m, r: (
        adopt(m, r)
        if m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        and len(up.seen) > 1
        else error(m, -32022, "unsupported", {"supported": ["2026-07-28"]})
    )
    session = up.session()
    await session.open()
    assert session.modern
    assert up.methods() == ["POST server/discover", "POST server/discover"]


async def test_a_modern_only_upstream_with_no_version_in_common_is_refused_clearly() -> None:
    up = Upstream()
    up.answers["server/discover"] = lambda m, r: error(
        m, -32022, "unsupported", {"supported": ["2099-01-01"]}
    )
    with pytest.raises(UpstreamError, match="no protocol version in common: the upstream speaks 2099-01-01"):
        await up.session().open()


async def test_an_initialize_answer_in_a_version_we_do_not_speak_is_refused() -> None:
    up = Upstream(version="1999-01-01")
    with pytest.raises(UpstreamError, match="protocol version '1999-01-01'; foldgate speaks 2024-11-05"):
        await up.session().open()


async def test_a_discover_answer_without_a_modern_version_falls_back_to_the_handshake() -> None:
    up = Upstream()
    up.answers["server/discover"] = lambda m, r: ok(
        m, {"supportedVersions": ["2025-11-25"], "capabilities": {}}
    )
    session = up.session()
    await session.open()
    assert session.negotiated() == ("legacy", None)


async def test_the_response_is_found_among_notifications_and_server_requests_are_answered() -> None:
    up = Upstream()
    up.answers["tools/call"] = lambda m, r: sse(
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}},
        {"jsonrpc": "2.0", "id": m["id"] + 100, "result": {"not": "ours"}},
        {"jsonrpc": "2.0", "id": 9, "method": "ping"},
        {"jsonrpc": "2.0", "id": 10, "method": "sampling/createMessage", "params": {}},
        {"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "done"}]}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {}},
    )
    session = up.session(("legacy", None))
    await session.open()
    assert await session.request("tools/call", {"name": "t"}) == {
        "content": [{"type": "text", "text": "done"}]
    }
    replies = [msg for verb, msg, _ in up.seen if msg is not None and "method" not in msg]
    assert replies == [
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": 10, "error": {"code": -32601, "message": replies[1]["error"]["message"]}},
    ]


@pytest.mark.parametrize(
    ("answer", "raised", "text"),
    [
        (lambda m, r: error(m, -32602, "bad arguments", {"field": "x"}), RpcError, "bad arguments"),
        (lambda m, r: error(m, -32000, "rejected", status=500), RpcError, "rejected"),
        (lambda m, r: httpx2.Response(500, text="boom"), RpcError, "HTTP 500"),
        (lambda m, r: httpx2.Response(202), WireError, "202 Accepted"),
        (
            lambda m, r: httpx2.Response(200, content=b"<html>", headers={"content-type": "text/html"}),
            WireError,
            "content type",
        ),
        (
            lambda m, r: httpx2.Response(
                200, content=b"{garbled", headers={"content-type": "application/json"}
            ),
            WireError,
            "not JSON",
        ),
        (
            lambda m, r: httpx2.Response(200, json={"jsonrpc": "2.0", "id": m["id"], "result": [1]}),
            WireError,
            "no result object",
        ),
        (
            lambda m, r: httpx2.Response(200, json={"jsonrpc": "2.0", "id": 999, "result": {}}),
            WireError,
            "another request",
        ),
        (
            lambda m, r: httpx2.Response(
                200, content=b"data: {garbled\n\n", headers={"content-type": "text/event-stream"}
            ),
            WireError,
            "SSE event: not JSON",
        ),
        (
            lambda m, r: sse({"jsonrpc": "2.0", "method": "notifications/progress"}),
            UpstreamError,
            "ended without a response",
        ),
        (
            lambda m, r: httpx2.Response(307, headers={"location": "https://up.test/mcp/"}),
            WireError,
            "redirect to 'https://up.test/mcp/' not followed",
        ),
    ],
)
async def test_every_bad_answer_is_a_clear_error(answer: Answer, raised: type[Exception], text: str) -> None:
    up = Upstream()
    up.answers["tools/call"] = answer
    session = up.session(("legacy", None))
    await session.open()
    with pytest.raises(raised, match=text) as info:
        await session.request("tools/call", {"name": "t"})
    assert not session.expired
    if isinstance(info.value, RpcError) and info.value.code == -32602:
        assert info.value.data == {"field": "x"}
    if raised is UpstreamError:
        assert not isinstance(info.value, WireError)  # no answer at all: lost in transit, not garbled


@pytest.mark.parametrize(
    "answer",
    [
        lambda m, r: httpx2.Response(404),
        lambda m, r: error(m, -32000, "Bad Request: No valid session ID provided", status=400),
    ],
)
async def test_a_refused_session_is_expired(answer: Answer) -> None:
    up = Upstream()
    up.answers["tools/call"] = answer
    session = up.session(("legacy", None))
    await session.open()
    with pytest.raises(SessionExpiredError):
        await session.request("tools/call", {"name": "t"})
    assert session.expired
    await session.aclose()
    assert up.methods()[-1] == "POST tools/call"  # an expired session is not DELETEd


async def test_a_400_on_a_stateless_request_is_an_upstream_error_not_an_expiry() -> None:
    up = Upstream(modern=True)
    up.answers["tools/call"] = lambda m, r: error(m, -32602, "no such session of yours", status=400)
    session = up.session()
    await session.open()
    with pytest.raises(RpcError):
        await session.request("tools/call", {"name": "t"})
    assert not session.expired


async def test_an_invalid_session_id_is_refused() -> None:
    up = Upstream()
    up.answers["initialize"] = lambda m, r: ok(
        m, {"protocolVersion": "2025-11-25", "capabilities": {}}, **{"mcp-session-id": "a b"}
    )
    with pytest.raises(WireError, match="invalid Mcp-Session-Id"):
        await up.session(("legacy", None)).open()


def test_shared_constants_equal_the_sdks() -> None:
    from mcp.client.session import _later_revision_fields
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
    from mcp.shared.inbound import encode_header_value
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    assert (HANDSHAKE_VERSIONS, MODERN_VERSIONS) == (HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS)
    for method, fields in _LATER_FIELDS.items():
        for version in HANDSHAKE_VERSIONS:
            assert _later_revision_fields(method, version) == fields, (method, version)
        assert not _later_revision_fields(method, MODERN_VERSIONS[-1])
    assert (net_guard._DEFAULT_TIMEOUT, net_guard._READ_TIMEOUT) == (
        MCP_DEFAULT_TIMEOUT,
        MCP_DEFAULT_SSE_READ_TIMEOUT,
    )
    for name in ("plain", "with space", " edge", "naïve", "=?base64?abc?=", "tab\there", "~!@#"):
        assert _header_value(name) == encode_header_value(name), name


async def test_a_same_origin_redirect_keeping_the_method_is_followed_and_others_are_not() -> None:
    up = Upstream()
    up.answers["tools/call"] = lambda m, r: (
        ok(m, {"content": []})
        if r.url.path == "/mcp/"
        else httpx2.Response(
            307, headers={"location": "/mcp/" if m["params"]["name"] == "here" else "http://x.test/"}
        )
    )
    session = up.session(("legacy", None))
    await session.open()
    assert await session.request("tools/call", {"name": "here"}) == {"content": []}
    with pytest.raises(WireError, match=r"redirect to 'http://x\.test/' not followed"):
        await session.request("tools/call", {"name": "away"})


async def test_a_probe_left_unanswered_falls_back_to_the_handshake(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from foldgate.upstream import plain_session

    monkeypatch.setattr(plain_session, "DISCOVER_SECONDS", 0.05)
    up = Upstream()

    async def hang(request: httpx2.Request) -> httpx2.Response:
        if b"server/discover" in request.content:
            await asyncio.sleep(10)
        return up.handle(request)

    session = PlainSession("up", URL, httpx2.AsyncClient(transport=httpx2.MockTransport(hang)), era=None)
    await session.open()
    assert session.negotiated() == ("legacy", None)
    assert up.methods() == ["POST initialize", "POST notifications/initialized"]


async def test_a_cancel_notice_that_fails_after_its_wait_leaves_no_unread_task_exception(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The notice of an abandoned call outlives its bounded wait; when its POST then fails (a body cut
    mid-stream), the failure is read, not logged by asyncio as "Task exception was never retrieved"."""
    from foldgate.upstream import plain_session

    monkeypatch.setattr(plain_session, "_CANCEL_NOTE_S", 0.05)
    up = Upstream()
    started = asyncio.Event()

    async def handle(request: httpx2.Request) -> httpx2.Response:
        msg = json.loads(request.content) if request.content else {}
        if msg.get("method") == "tools/call":
            started.set()
            await asyncio.sleep(30)
        if msg.get("method") == "notifications/cancelled":
            await asyncio.sleep(0.2)  # past the notice's wait
            raise httpx2.ReadError("the body was cut mid-stream")
        return up.handle(request)

    session = PlainSession("up", URL, httpx2.AsyncClient(transport=httpx2.MockTransport(handle)), era=None)
    await session.open()
    call = asyncio.ensure_future(session.request("tools/call", {"name": "t", "arguments": {}}))
    await started.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await asyncio.sleep(0.4)  # the notice fails now
    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
    await session.aclose()


class _HeldStream(httpx2.AsyncByteStream):
    """An event stream that sends its answer, then holds the end of its body until told."""

    def __init__(self, event: bytes) -> None:
        self.event = event
        self.closed = False

    async def __aiter__(self) -> Any:
        yield self.event
        await asyncio.Event().wait()  # the upstream's last bytes never come in this test

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.parametrize("deadline", [False, True])
async def test_an_answer_is_handed_on_before_its_response_is_closed_where_no_deadline_applies(
    deadline: bool,
) -> None:
    """Locally the rest of an answered stream is read after the answer (closing drains it to return
    the connection); under a request deadline (an MCP Lambda) before it, as the loop then freezes."""
    up = Upstream()
    streams: list[_HeldStream] = []

    def held(msg: dict[str, Any], request: httpx2.Request) -> httpx2.Response:
        answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [], "isError": False}}
        streams.append(_HeldStream(b"event: message\ndata: " + json.dumps(answer).encode() + b"\n\n"))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=streams[-1])

    up.answers["tools/call"] = held
    session = up.session()
    await session.open()
    with answering_by(time.monotonic() + 30 if deadline else None):
        result = await session.request("tools/call", {"name": "t", "arguments": {}})
    assert result == {"content": [], "isError": False}
    assert streams[0].closed is deadline
    # Locally the rest is read on in the background (briefly: this stream's end never comes).
    for _ in range(100):
        if streams[0].closed:
            break
        await asyncio.sleep(0.01)
    assert streams[0].closed


async def test_an_answered_stream_is_read_to_its_end_so_no_iterator_is_left_to_the_loop() -> None:
    """An SSE answer read up to its answer is read on to its end when closed: every async iterator
    under it ends by itself instead of being finalized by the event loop (a cross-thread wake-up and
    a task per dropped iterator, on every call)."""
    up = Upstream()

    def ended(msg: dict[str, Any], request: httpx2.Request) -> httpx2.Response:
        answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [], "isError": False}}
        event = b"event: message\ndata: " + json.dumps(answer).encode() + b"\n\n"
        kind = {"content-type": "text/event-stream"}
        return httpx2.Response(200, headers=kind, content=event + b": end\n\n")

    up.answers["tools/call"] = ended
    session = up.session()
    await session.open()
    finalized: list[Any] = []
    hooks = sys.get_asyncgen_hooks()
    assert hooks.finalizer is not None

    def finalizer(agen: Any) -> None:
        finalized.append(agen)
        hooks.finalizer(agen)  # type: ignore[misc]

    # An async generator takes the finalizer current when it is first iterated.
    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalizer)
    try:
        for deadline in (None, time.monotonic() + 30):
            with answering_by(deadline):
                assert await session.request("tools/call", {"name": "t", "arguments": {}}) == {
                    "content": [],
                    "isError": False,
                }
            await asyncio.sleep(0.1)
            gc.collect()
    finally:
        sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=hooks.finalizer)
        await session.aclose()
    assert [getattr(agen, "__qualname__", agen) for agen in finalized] == []
