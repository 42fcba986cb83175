"""Activity events of a ``/mcp/code`` run in the real sandbox: one event per call the run makes (with
the run's caller, request id and surface), none for the run itself."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from foldgate.code.sandbox import Sandbox
from foldgate.config.source import StaticConfigSource
from foldgate.edge.app import create_app
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools
from tests.recorders import ListRecorder

H = {"accept": "application/json", "content-type": "application/json", "mcp-protocol-version": "2025-11-25"}


@pytest.fixture
async def served() -> AsyncIterator[tuple[httpx2.AsyncClient, ListRecorder]]:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    configs = StaticConfigSource({"default": demo_config(routing_mode="code_execution")})
    recorder = ListRecorder()
    gateway = Gateway(store, configs, RecordingUpstream(), catalog_ttl=60, sandbox=Sandbox, recorder=recorder)
    app = create_app(gateway)
    try:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as client:
            yield client, recorder
    finally:
        await gateway.aclose()


async def test_each_call_of_a_run_is_one_event_and_the_run_none(
    served: tuple[httpx2.AsyncClient, ListRecorder],
) -> None:
    client, recorder = served
    code = """
        const ask = q => call_tool("crm", "find_contact", {query: q});
        const found = await Promise.all(["ada", "grace"].map(ask));
        try { await call_tool("crm", "create_contact", {name: "Ada"}); } catch (e) {}
        try { await call_tool("crm", "no_such_tool", {}); } catch (e) {}
        return found.length;
    """
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "code_execution", "arguments": {"code": code}},
    }
    response = await client.post("/mcp/code", json=call, headers=H)
    assert response.json()["result"]["structuredContent"]["value"] == 2
    events = recorder.calls
    assert len(events) == 4
    assert {e.surface for e in events} == {"mcp/code"}
    assert len({e.request_id for e in events}) == 1
    assert events[0].request_id
    outcomes = sorted((e.tool, e.outcome) for e in events)
    assert outcomes == [
        ("create_contact", "invalid_arguments"),
        ("crm:no_such_tool", "not_found"),
        ("find_contact", "ok"),
        ("find_contact", "ok"),
    ]
    ok = next(e for e in events if e.outcome == "ok")
    assert ok.server == "crm"
    assert ok.upstream_ms is not None
    assert ok.request_bytes > 0
    assert ok.response_bytes > 0
    # The run's retrieve_tools on the same surface is an event of its own.
    recorder.clear()
    search = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "retrieve_tools", "arguments": {"query": "contact"}},
    }
    assert (await client.post("/mcp/code", json=search, headers=H)).status_code == 200
    assert [(e.tool, e.outcome) for e in recorder.calls] == [("retrieve_tools", "ok")]


async def test_a_run_that_makes_no_call_is_no_event(served: tuple[httpx2.AsyncClient, ListRecorder]) -> None:
    client, recorder = served
    for code in ("return 1 +", "return 42;"):
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "code_execution", "arguments": {"code": code}},
        }
        assert (await client.post("/mcp/code", json=call, headers=H)).status_code == 200
    assert recorder.events == []
