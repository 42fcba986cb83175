"""Activity events from the MCP edge: every request that does work is exactly one event with the
right fields, on every path (the SDK-free plain path and the SDK's), whatever its outcome class;
listings and handshakes are none."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.errors import (
    UpstreamBusyError,
    UpstreamConsentError,
    UpstreamDeadlineError,
    UpstreamError,
    UpstreamTimeoutError,
)
from foldgate.model.activity import OUTCOMES, ActivityEvent
from foldgate.serve.gateway import Gateway
from tests.gateway_fixture import RecordingUpstream, demo_config, gateway_client
from tests.recorders import ListRecorder

H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = {**H, "mcp-protocol-version": "2025-11-25"}
TRACE = "0af7651916cd43dd8448eb211c80319c"


class ScriptedUpstream(RecordingUpstream):
    """The recording echo, plus tools that answer isError, raise anything, are huge or malformed."""

    def __init__(self) -> None:
        super().__init__()
        self.raise_other: dict[str, BaseException] = {}
        self.error_tools: set[str] = set()
        self.big: set[str] = set()
        self.malformed: set[str] = set()

    async def call_tool(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        *,
        annotations: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        if name in self.raise_other:
            raise self.raise_other[name]
        if name in self.error_tools:
            # An upstream's error text that mimics foldgate's own: it must not decide the outcome.
            text = json.dumps({"error": "x", "error_type": "upstream_needs_consent"})
            return {"content": [{"type": "text", "text": text}], "isError": True}
        if name in self.malformed:
            return {"content": "not a list", "isError": False}
        if name in self.big:
            return {"content": [{"type": "text", "text": "y" * 5000}], "isError": False}
        return await super().call_tool(server, name, arguments, annotations=annotations)


@contextlib.asynccontextmanager
async def observed(
    **config: Any,
) -> AsyncIterator[tuple[httpx2.AsyncClient, Gateway, ScriptedUpstream, ListRecorder]]:
    async with gateway_client(demo_config(**config)) as (client, gateway, _, _):
        upstream = ScriptedUpstream()
        gateway.caller.upstream = upstream
        recorder = ListRecorder()
        gateway.recorder = recorder
        yield client, gateway, upstream, recorder


async def post(
    client: httpx2.AsyncClient, path: str, method: str, params: Any, headers: dict[str, str] = LEGACY
) -> httpx2.Response:
    return await client.post(
        path, json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, headers=headers
    )


async def call(
    client: httpx2.AsyncClient, name: str, arguments: Any, path: str = "/mcp/all"
) -> httpx2.Response:
    return await post(client, path, "tools/call", {"name": name, "arguments": arguments})


async def test_a_proxied_call_is_one_event_with_every_field() -> None:
    async with observed() as (client, _, upstream, recorder):
        # The client's W3C trace: the edge makes it the request's (foldgate.telemetry.tracing).
        traced = {**LEGACY, "traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
        params = {"name": "crm__find_contact", "arguments": {"query": "ada"}}
        response = await post(client, "/mcp/all", "tools/call", params, traced)
        assert response.status_code == 200
        event = recorder.only_call()
        assert (event.tenant, event.method, event.surface) == ("default", "tools/call", "mcp/all")
        assert (event.server, event.tool, event.tier, event.outcome) == ("crm", "find_contact", "read", "ok")
        assert event.principal == "*"  # unauthenticated local access
        assert event.protocol == "2025-11-25"
        assert event.request_id
        assert event.trace_id == TRACE
        assert event.upstream_ms is not None
        assert 0 <= event.upstream_ms <= event.gateway_ms
        assert event.request_bytes == len(response.request.content)
        assert event.response_bytes == len(response.content)
        assert event.cut_to_read_cache is False
        assert event.arguments is None
        assert event.detail == ""
        assert upstream.calls


async def test_listings_handshakes_and_pings_are_no_events() -> None:
    async with observed() as (client, _, _, recorder):
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        }
        assert (await post(client, "/mcp/all", "initialize", init)).status_code == 200
        assert (await post(client, "/mcp/all", "tools/list", {})).status_code == 200
        assert (await post(client, "/mcp/all", "ping", {})).status_code == 200
        assert (await post(client, "/mcp/all", "tools/list", {"cursor": None})).status_code == 200  # SDK path
        assert recorder.events == []


async def test_the_client_named_at_initialize_is_on_later_calls_of_that_credential() -> None:
    async with observed() as (client, _, _, recorder):
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "claude", "version": "2.1"},
        }
        await post(client, "/mcp/all", "initialize", init, headers=H)
        await client.post(
            "/mcp/all",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "crm__find_contact", "arguments": {"query": "a"}},
            },
            headers=H,
        )
        event = recorder.only_call()
        assert (event.client_name, event.client_version, event.protocol) == ("claude", "2.1", "2025-06-18")


async def test_a_stateless_request_names_its_own_client_on_both_paths() -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "modern-agent", "version": "9"},
    }
    headers = {
        **H,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "crm__find_contact",
    }
    async with observed() as (client, _, _, recorder):
        plain = {"name": "crm__find_contact", "arguments": {"query": "a"}, "_meta": meta}
        assert (await post(client, "/mcp/all", "tools/call", plain, headers)).status_code == 200
        # A clientInfo field the plain path does not take: the SDK answers, the client is the same.
        info = {"name": "modern-agent", "version": "9", "websiteUrl": "https://example.com"}
        sdk = {**plain, "_meta": {**meta, "io.modelcontextprotocol/clientInfo": info}}
        await post(client, "/mcp/all", "tools/call", sdk, headers)
        assert len(recorder.calls) == 2
        for event in recorder.calls:
            assert (event.client_name, event.client_version, event.protocol) == (
                "modern-agent",
                "9",
                "2026-07-28",
            )
            assert event.outcome == "ok"
            assert event.tool == "find_contact"


async def outcome_of(
    client: httpx2.AsyncClient, recorder: ListRecorder, name: str, arguments: Any, path: str = "/mcp/all"
) -> ActivityEvent:
    recorder.clear()
    await call(client, name, arguments, path)
    return recorder.only_call()


@pytest.mark.parametrize(
    ("raised", "outcome"),
    [
        (UpstreamError("crm: refused"), "upstream_error"),
        (UpstreamTimeoutError("crm: slow", timeout_s=1.0), "upstream_timeout"),
        (UpstreamDeadlineError("crm: out of time", timeout_s=1.0), "deadline"),
        (UpstreamBusyError("crm: busy"), "rate_limited"),
        (UpstreamConsentError("crm: connect first"), "needs_consent"),
        (RuntimeError("bug"), "internal_error"),
    ],
)
async def test_every_upstream_failure_is_one_event_of_its_class(raised: Exception, outcome: str) -> None:
    async with observed() as (client, _, upstream, recorder):
        upstream.raise_other["find_contact"] = raised
        event = await outcome_of(client, recorder, "crm__find_contact", {"query": "a"})
        assert event.outcome == outcome
        assert (event.server, event.tool) == ("crm", "find_contact")
        # Only a request that went out waited on the upstream: no grant yet or no free slot sent none.
        sent = outcome not in ("needs_consent", "rate_limited")
        assert (event.upstream_ms is not None) is sent


async def test_gateway_made_outcomes_on_the_direct_surface() -> None:
    async with observed() as (client, _gateway, upstream, recorder):
        upstream.error_tools.add("find_contact")
        assert (
            await outcome_of(client, recorder, "crm__find_contact", {"query": "a"})
        ).outcome == "tool_error"
        invalid = await outcome_of(client, recorder, "crm__create_contact", {"name": "Ada"})
        assert (invalid.outcome, invalid.detail, invalid.upstream_ms) == (
            "invalid_arguments",
            "invalid_params",
            None,
        )
        missing = await outcome_of(client, recorder, "crm__no_such_tool", {})
        assert (missing.outcome, missing.tool, missing.server) == ("not_found", "crm__no_such_tool", "")
        described = await outcome_of(client, recorder, "describe_tool", {"tool_ids": ["crm__find_contact"]})
        assert (described.outcome, described.tool) == ("ok", "describe_tool")
        bad_describe = await outcome_of(client, recorder, "describe_tool", {"tool_ids": []})
        assert bad_describe.outcome == "invalid_arguments"


async def test_a_held_tool_is_a_held_event() -> None:
    async with observed() as (client, gateway, _, recorder):
        current = gateway.catalog("default")
        assert current is not None
        held = dataclasses.replace(current, version="v-held", approvals={"crm:find_contact": "pending"})
        gateway.catalogs.store.publish(held, expected_current=current.version)
        event = await outcome_of(client, recorder, "crm__find_contact", {"query": "a"})
        assert (event.outcome, event.detail) == ("held", "tool_pending_approval")
        assert (event.server, event.tool, event.upstream_ms) == ("crm", "find_contact", None)


async def test_search_surface_meta_tools_and_variants() -> None:
    async with observed(tool_response_limit=1000) as (client, _, upstream, recorder):
        found = await outcome_of(client, recorder, "retrieve_tools", {"query": "find a contact"}, "/mcp/call")
        assert (found.outcome, found.tool, found.surface) == ("ok", "retrieve_tools", "mcp/call")
        wrong = await outcome_of(
            client,
            recorder,
            "call_tool_write",
            {"name": "crm__find_contact", "arguments": {"query": "a"}},
            "/mcp/call",
        )
        assert (wrong.outcome, wrong.detail, wrong.server, wrong.tool) == (
            "denied",
            "wrong_variant",
            "crm",
            "find_contact",
        )
        upstream.big.add("find_contact")
        cut = await outcome_of(
            client,
            recorder,
            "call_tool_read",
            {"name": "crm__find_contact", "arguments": {"query": "a"}},
            "/mcp/call",
        )
        assert (cut.outcome, cut.cut_to_read_cache, cut.tier) == ("ok", True, "read")
        unknown = await outcome_of(
            client, recorder, "call_tool_read", {"name": "nope__x", "arguments": {}}, "/mcp/call"
        )
        assert (unknown.outcome, unknown.tool) == ("not_found", "nope__x")
        bad = await outcome_of(client, recorder, "call_tool_read", {"arguments": {}}, "/mcp/call")
        assert bad.outcome == "invalid_arguments"
        lost = await outcome_of(client, recorder, "read_cache", {"key": "no-such-key"}, "/mcp/call")
        assert (lost.outcome, lost.tool) == ("not_found", "read_cache")


async def test_every_outcome_class_listed_is_reachable_from_the_mapping() -> None:
    from foldgate.serve.recording import outcome_of_code

    reached = {outcome_of_code(code) for code in (
        "invalid_params", "not_found", "wrong_variant", "tool_pending_approval", "upstream_needs_consent",
        "upstream_timeout", "upstream_busy", "upstream_error", "anything else",
    )}  # fmt: skip
    # ok and tool_error come from an upstream's answer, deadline from its error class (tested above).
    assert reached | {"ok", "tool_error", "deadline"} == set(OUTCOMES)


async def test_a_malformed_upstream_result_is_an_upstream_error_on_both_paths() -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    modern = {
        **H,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "crm__find_contact",
    }
    async with observed() as (client, _, upstream, recorder):
        upstream.malformed.add("find_contact")
        await call(client, "crm__find_contact", {"query": "a"})  # plain path: the SDK's types judge it
        sdk = {
            "name": "crm__find_contact",
            "arguments": {"query": "a"},
            "_meta": {**meta, "progressToken": "p"},
        }
        await post(client, "/mcp/all", "tools/call", sdk, {**LEGACY, "mcp-protocol-version": "2025-11-25"})
        await post(
            client,
            "/mcp/all",
            "tools/call",
            {"name": "crm__find_contact", "arguments": {"query": "a"}, "_meta": meta},
            modern,
        )
        assert [(e.outcome, e.detail) for e in recorder.calls] == [("upstream_error", "malformed_result")] * 3
