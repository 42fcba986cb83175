"""Trace context to upstreams: inside a request every POST of the plain session carries the request's
``traceparent`` header, and every request's params carry it in ``_meta`` (beside any ``_meta`` of its
own, and the modern era's envelope); outside a request (the indexer) neither is sent."""

from __future__ import annotations

from foldgate.telemetry import tracing
from foldgate.telemetry.traceparent import TraceParent
from tests.tracing import by_name, recording_spans, span_hex
from tests.unit.upstream.test_plain_session import Upstream, ok

CLIENT = TraceParent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", sampled=True)


async def test_inside_a_request_every_post_and_every_request_carries_its_trace() -> None:
    up = Upstream()
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": [], "isError": False})
    session = up.session()
    with tracing.request_trace(CLIENT):
        await session.open()
        await session.request(
            "tools/call", {"name": "t", "arguments": {"x": 1}, "_meta": {"progressToken": 3}}
        )
    posts = [(msg, headers) for verb, msg, headers in up.seen if verb == "POST"]
    methods = [m["method"] for m, _ in posts]  # type: ignore[index]
    assert methods == ["server/discover", "initialize", "notifications/initialized", "tools/call"]
    assert {h.get("traceparent") for _, h in posts} == {CLIENT.header()}
    call = posts[-1][0]
    assert call is not None
    assert call["params"]["_meta"] == {"progressToken": 3, "traceparent": CLIENT.header()}
    assert call["params"]["arguments"] == {"x": 1}
    await session.aclose()


async def test_a_modern_session_keeps_its_envelope_beside_the_trace() -> None:
    up = Upstream(modern=True)
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": [], "resultType": "complete"})
    session = up.session()
    with tracing.request_trace(CLIENT):
        await session.open()
        await session.request("tools/call", {"name": "t", "arguments": {}})
    _, call, headers = up.seen[-1]
    assert call is not None
    meta = call["params"]["_meta"]
    assert meta["traceparent"] == headers["traceparent"] == CLIENT.header()
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    await session.aclose()


async def test_with_tracing_on_the_upstream_is_told_the_current_span() -> None:
    up = Upstream()
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": [], "isError": False})
    session = up.session()
    with recording_spans() as exporter:
        with tracing.request_trace(CLIENT), tracing.span("foldgate.upstream", "client"):
            await session.open()
            await session.request("tools/call", {"name": "t", "arguments": {}})
        (upstream_span,) = by_name(exporter.get_finished_spans())["foldgate.upstream"]
    assert up.seen[-1][2]["traceparent"] == f"00-{CLIENT.trace_id}-{span_hex(upstream_span)}-01"
    await session.aclose()


async def test_outside_a_request_no_trace_is_sent() -> None:
    up = Upstream()
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": [], "isError": False})
    session = up.session()
    await session.open()
    await session.request("tools/call", {"name": "t", "arguments": {}})
    assert all("traceparent" not in headers for _, _, headers in up.seen)
    call = up.seen[-1][1]
    assert call is not None
    assert "_meta" not in call["params"]
    await session.aclose()
