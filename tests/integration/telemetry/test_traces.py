"""One trace from an MCP client through foldgate to a real upstream, and nothing secret in it.

The official MCP client calls foldgate over HTTP inside a span of its own (it sends that span's
``traceparent`` in ``_meta``); foldgate (the local wiring, in this process, its spans kept by the SDK's
in-memory exporter) calls an upstream that keeps the ``traceparent`` each request carried. Then with
OTLP export configured the standard way (``OTEL_EXPORTER_OTLP_*``), the spans reach a real OTLP/HTTP
receiver.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import use_span

from foldgate.app.local import LocalGateway, build_local
from foldgate.auth.authority import TokenAuthority
from foldgate.config.settings import Settings
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.model.agent_token import TokenHasher
from foldgate.store.tokens.sqlite import SqliteTokenStore
from foldgate.telemetry import tracing
from foldgate.telemetry.traceparent import parse_traceparent
from tests.integration.telemetry.conftest import OtlpReceiver, TracedUpstream, serving
from tests.tracing import by_name, recording_spans, span_hex, span_text, trace_hex

TOKEN_SECRET = "t" * 32
OPERATOR = "o" * 32
# Planted where a careless span would pick them up: a call's argument, the upstream's own credential.
ARGUMENT_CANARY = "canary-argument-5f1c0d"
UPSTREAM_SECRET = "canary-upstream-secret-77aa"


@dataclass
class Fleet:
    local: LocalGateway
    url: str  # foldgate's /mcp/all
    token: str
    upstream: TracedUpstream


@pytest.fixture
def upstream() -> Iterator[tuple[TracedUpstream, str]]:
    app = TracedUpstream()
    with serving(app, lifespan="off") as base:
        yield app, f"{base}/mcp"


@contextlib.asynccontextmanager
async def fleet(
    tmp_path: Path, upstream: tuple[TracedUpstream, str], settings: Settings
) -> AsyncIterator[Fleet]:
    """foldgate (local wiring, agent tokens required) over the traced upstream, served over HTTP."""
    app, url = upstream
    server = {"name": "traced", "url": url, "headers": {"x-api-key": UPSTREAM_SECRET}}
    configs = StaticConfigSource({"acme": parse_tenant_config({"servers": [server]})})
    local = build_local(configs, settings)
    await local.index_all()
    authority = TokenAuthority(SqliteTokenStore(settings.sqlite_path), TokenHasher(TOKEN_SECRET.encode()))
    token = authority.issue("acme", tier="destructive", expires_in=3600)[0]
    with serving(local.app) as base:
        yield Fleet(local, f"{base}/mcp/all", token, app)


def _settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(
        sqlite_path=str(tmp_path / "fg.sqlite3"),
        auth_required=True,
        token_secret=TOKEN_SECRET,
        operator_key=OPERATOR,
        embedding_provider="none",
        **extra,
    )


async def _call_as_agent(fleet: Fleet, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Make ``calls`` with the official MCP client over HTTP, with the agent's token."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    results = []
    headers = {"authorization": f"Bearer {fleet.token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(fleet.url, http_client=http), cache=None) as client,
    ):
        for name, arguments in calls:
            results.append(await client.call_tool(name, arguments))
    return results


async def test_one_trace_id_from_the_client_through_foldgate_to_the_upstream(
    tmp_path: Path, upstream: tuple[TracedUpstream, str]
) -> None:
    agent = TracerProvider()  # the agent's own tracing, apart from foldgate's
    with recording_spans() as exporter:
        async with fleet(tmp_path, upstream, _settings(tmp_path)) as running:
            client_span = agent.get_tracer("agent").start_span("agent task")
            with use_span(client_span, end_on_exit=True):
                (result,) = await _call_as_agent(running, [("traced__echo", {"text": "hello"})])
        assert result.content[0].text == "hello"
        spans = by_name(exporter.get_finished_spans())
    trace_id = f"{client_span.get_span_context().trace_id:032x}"

    # foldgate's spans: the call's request, auth, view, call, validation and upstream spans, one trace.
    call_request = next(
        s
        for s in spans["foldgate.request"]
        if dict(s.attributes or {}).get("mcp.method.name") == "tools/call"
    )
    assert trace_hex(call_request) == trace_id
    ours = [s for group in spans.values() for s in group if trace_hex(s) == trace_id]
    assert {s.name for s in ours} >= {
        "foldgate.request",
        "foldgate.auth",
        "foldgate.view",
        "foldgate.validation",
        "foldgate.upstream",
    }
    (upstream_span,) = [s for s in ours if s.name == "foldgate.upstream"]
    assert dict(upstream_span.attributes or {}) == {
        "foldgate.server": "traced",
        "foldgate.tool": "echo",
        "mcp.method.name": "tools/call",
        "foldgate.outcome": "ok",
    }
    (checked,) = [s for s in ours if s.name == "foldgate.validation"]
    assert dict(checked.attributes or {})["foldgate.outcome"] == "ok"
    # Every span of the call is a child of its request span, which is the client span's child.
    assert call_request.parent is not None
    assert f"{call_request.parent.span_id:016x}" == f"{client_span.get_span_context().span_id:016x}"
    assert all(s.parent is not None for s in ours)
    tenants = {
        dict(s.attributes or {}).get("foldgate.tenant") for s in ours if s.name != "foldgate.validation"
    }
    assert tenants - {None} == {"acme"}

    # The upstream's tools/call carried the same trace, naming foldgate's upstream span as its parent,
    # in the HTTP header and in _meta alike.
    (seen,) = [s for s in running.upstream.seen if s.method == "tools/call"]
    header = parse_traceparent(seen.traceparent)
    assert header is not None
    assert (header.trace_id, header.span_id) == (trace_id, span_hex(upstream_span))
    assert seen.meta["traceparent"] == seen.traceparent


async def test_without_tracing_the_upstream_still_gets_the_clients_trace(
    tmp_path: Path, upstream: tuple[TracedUpstream, str]
) -> None:
    assert not tracing.tracing_on()
    agent = TracerProvider()
    async with fleet(tmp_path, upstream, _settings(tmp_path)) as running:
        client_span = agent.get_tracer("agent").start_span("agent task")
        with use_span(client_span, end_on_exit=True):
            await _call_as_agent(running, [("traced__echo", {"text": "hello"})])
    (seen,) = [s for s in running.upstream.seen if s.method == "tools/call"]
    header = parse_traceparent(seen.traceparent)
    assert header is not None
    ctx = client_span.get_span_context()
    # Forwarded as it came: foldgate records no span, so the client's span stays the parent.
    assert (header.trace_id, header.span_id) == (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")


async def test_no_token_or_argument_value_in_any_span(
    tmp_path: Path, upstream: tuple[TracedUpstream, str]
) -> None:
    """Under the default settings: the agent token, the upstream's credential and argument values
    appear in no span's name, attributes, events or status, on success or on any failure."""
    with recording_spans() as exporter:
        async with fleet(tmp_path, upstream, _settings(tmp_path)) as running:
            results = await _call_as_agent(
                running,
                [
                    ("traced__echo", {"text": ARGUMENT_CANARY}),  # the result quotes it
                    ("traced__fail", {"text": ARGUMENT_CANARY}),  # the upstream's error quotes it
                    ("traced__echo", {"text": 7, "note": ARGUMENT_CANARY}),  # invalid: the answer quotes it
                    ("traced__nope", {"text": ARGUMENT_CANARY}),  # no such tool
                ],
            )
            # A wrong token too: refused at auth.
            async with httpx2.AsyncClient(timeout=30) as http:
                refused = await http.post(
                    running.url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={
                        "authorization": f"Bearer {running.token}x",
                        "accept": "application/json, text/event-stream",
                        "content-type": "application/json",
                    },
                )
        spans = exporter.get_finished_spans()
    assert refused.status_code == 401
    assert [r.is_error for r in results] == [False, True, True, True]
    outcomes = {str(dict(s.attributes or {}).get("foldgate.outcome")) for s in spans}
    assert {"ok", "upstream_error", "invalid_arguments", "denied"} <= outcomes
    assert any(s.headers.get("x-api-key") == UPSTREAM_SECRET for s in running.upstream.seen)
    for s in spans:
        text = span_text(s)
        for canary in (ARGUMENT_CANARY, running.token, UPSTREAM_SECRET, TOKEN_SECRET, OPERATOR):
            assert canary not in text, (s.name, canary)


async def test_spans_reach_an_otlp_receiver_configured_by_the_standard_variables(
    tmp_path: Path, upstream: tuple[TracedUpstream, str]
) -> None:
    with OtlpReceiver() as receiver:
        env = {
            "FOLDGATE_SQLITE_PATH": str(tmp_path / "fg.sqlite3"),
            "FOLDGATE_AUTH_REQUIRED": "true",
            "FOLDGATE_TOKEN_SECRET": TOKEN_SECRET,
            "FOLDGATE_OPERATOR_KEY": OPERATOR,
            "FOLDGATE_EMBEDDING_PROVIDER": "none",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-collector-key=abc%20def",
            "OTEL_SERVICE_NAME": "foldgate-otlp-test",
        }
        settings = Settings.from_env(env)
        previous = tracing.install(None)
        try:
            async with fleet(tmp_path, upstream, settings) as running:
                assert tracing.tracing_on()  # the wiring installed the OTLP backend
                await _call_as_agent(running, [("traced__echo", {"text": "hello"})])
                tracing.flush()
            received = receiver.wait_for({"foldgate.request", "foldgate.auth", "foldgate.upstream"})
        finally:
            tracing.install(previous)
    (seen,) = [s for s in running.upstream.seen if s.method == "tools/call"]
    sent = parse_traceparent(seen.traceparent)
    assert sent is not None
    (upstream_span,) = [s for s in received if s.name == "foldgate.upstream"]
    assert upstream_span.trace_id.hex() == sent.trace_id
    assert upstream_span.span_id.hex() == sent.span_id
    assert receiver.requests[0]["path"] == "/v1/traces"
    assert receiver.requests[0]["x-collector-key"] == "abc def"
    assert {"service.name": "foldgate-otlp-test"}.items() <= receiver.resources[0].items()
