"""The code-execution surface through the gateway: agent JavaScript in the real sandbox, every
call_tool through the normal call path (scope, validation with the self-healing schema, upstream)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from foldgate.code.sandbox import Sandbox
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import TenantConfig
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.principal import Principal
from foldgate.model.tool import Tool
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools
from tests.helpers import error_of


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    configs = StaticConfigSource({"default": demo_config(routing_mode="code_execution")})
    gw = Gateway(store, configs, RecordingUpstream(), catalog_ttl=60, sandbox=Sandbox)
    yield gw
    await gw.aclose()


def configure(gw: Gateway, config: TenantConfig) -> None:
    assert isinstance(gw.configs, StaticConfigSource)
    gw.configs.configs["default"] = config


async def run(gw: Gateway, code: str, who: str | Principal = "default") -> dict[str, Any]:
    result = await gw.call(who, "code_execution", {"code": code}, "code")
    body: dict[str, Any] = error_of(result) if result.get("isError") else result["structuredContent"]
    return body


def test_the_surface_lists_the_code_tool_with_the_callers_catalog(gateway: Gateway) -> None:
    tools = json.loads(gateway.listing_json("default", "code"))
    assert [t["name"] for t in tools] == ["code_execution", "retrieve_tools", "describe_tool"]
    assert "crm.create_contact(name*:str, email*:str" in tools[0]["description"]
    assert json.loads(gateway.listing_json("default", "routed")) == tools  # routing_mode code_execution
    scoped = Principal("default", frozenset({"tickets"}), "read", "t1")
    assert "crm." not in json.loads(gateway.listing_json(scoped, "code"))[0]["description"]


async def test_an_inline_object_in_the_catalog_is_the_object_the_program_passes(gateway: Gateway) -> None:
    description = json.loads(gateway.listing_json("default", "code"))[0]["description"]
    line = (
        "crm.create_contact(name*:str, email*:str, address:{city:str, country:str}, "
        "tags:[enum[lead|customer|partner]])"
    )
    assert line in description.splitlines()
    body = await run(
        gateway,
        """
        const who = {name: "Ada", email: "ada@example.com"};
        await call_tool("crm", "create_contact", {...who, address: {city: "London", country: "UK"}});
        try { await call_tool("crm", "create_contact", {...who, address: {city: 5}}); }
        catch (e) { return e.error.error_type; }
        return "accepted";
    """,
    )
    assert body["value"] == "invalid_params"
    assert isinstance(gateway.upstream, RecordingUpstream)
    assert [c[2]["address"] for c in gateway.upstream.calls] == [{"city": "London", "country": "UK"}]


async def test_one_run_makes_many_calls_and_returns_only_the_answer(gateway: Gateway) -> None:
    body = await run(
        gateway,
        """
        const names = ["ada", "grace", "alan"];
        const found = await Promise.all(names.map(q => call_tool("crm", "find_contact", {query: q})));
        console.log("looked up", found.length);
        return found.map(r => JSON.parse(r).echo.query).filter(q => q.length > 3);
    """,
    )
    assert body["value"] == ["grace", "alan"]
    assert body["console"] == ["looked up 3"]
    assert [c["ok"] for c in body["calls"]] == [True, True, True]
    assert isinstance(gateway.upstream, RecordingUpstream)
    assert sorted(c[2]["query"] for c in gateway.upstream.calls) == ["ada", "alan", "grace"]


async def test_invalid_arguments_reject_with_the_real_schema(gateway: Gateway) -> None:
    body = await run(
        gateway,
        """
        try { await call_tool("crm", "create_contact", {name: "Ada"}); return "called"; }
        catch (e) { return {type: e.error.error_type, required: e.error.input_schema.required}; }
    """,
    )
    assert body["value"] == {"type": "invalid_params", "required": ["name", "email"]}
    assert isinstance(gateway.upstream, RecordingUpstream)
    assert gateway.upstream.calls == []


async def test_out_of_scope_calls_are_not_found_like_nonexistent_ones(gateway: Gateway) -> None:
    scoped = Principal("default", frozenset({"tickets"}), "destructive", "t1")
    probe = """
        const out = [];
        for (const [s, t] of [["crm", "find_contact"], ["crm", "no_such_tool"]]) {
          try { await call_tool(s, t, {query: "x"}); out.push("called"); }
          catch (e) { out.push(JSON.stringify(e.error).replace(t, "<tool>")); }
        }
        return out;
    """
    body = await run(gateway, probe, scoped)
    hidden, missing = body["value"]
    assert hidden == missing
    assert "not_found" in hidden


async def test_errors_the_agent_can_act_on(gateway: Gateway) -> None:
    syntax = await run(gateway, "return (1 + ;")
    assert syntax["error_type"] == "syntax"
    assert syntax["line"] == 1
    thrown = await run(gateway, "throw new Error('boom')")
    assert thrown["error_type"] == "exception"
    assert "boom" in thrown["error"]
    assert "Traceback" not in json.dumps(thrown)
    spin = await gateway.call(
        "default", "code_execution", {"code": "while (true) {}", "timeout_ms": 300}, "code"
    )
    assert error_of(spin)["error_type"] == "timeout"
    again = await run(gateway, "return 41 + 1")
    assert again["value"] == 42  # a fresh worker took over


async def test_disabled_per_tenant_is_listed_nowhere_and_refused(gateway: Gateway) -> None:
    configure(gateway, demo_config(routing_mode="code_execution", code_execution={"enabled": False}))
    tools = [t["name"] for t in json.loads(gateway.listing_json("default", "code"))]
    assert "code_execution" not in tools
    refused = await gateway.call("default", "code_execution", {"code": "return 1"}, "code")
    assert error_of(refused)["error_type"] == "not_found"


async def test_bad_arguments(gateway: Gateway) -> None:
    for args, message in (({}, "code must be"), ({"code": "return 1", "timeout_ms": 999_999}, "timeout_ms"),
                          ({"code": "return 1", "lang": "py"}, "does not take lang")):  # fmt: skip
        result = await gateway.call("default", "code_execution", args, "code")
        assert result["isError"] is True
        assert message in error_of(result)["error"]


async def test_a_process_that_runs_no_code_never_offers_it() -> None:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    configs = StaticConfigSource({"default": demo_config(routing_mode="code_execution")})
    gw = Gateway(store, configs, RecordingUpstream(), catalog_ttl=60)  # like the cloud's McpFunction
    assert [t["name"] for t in json.loads(gw.listing_json("default", "code"))] == [
        "retrieve_tools",
        "describe_tool",
    ]
    assert gw.surface_of("default", "routed") == "call"
    refused = await gw.call("default", "code_execution", {"code": "return 1"}, "code")
    assert error_of(refused)["error_type"] == "not_found"


async def test_the_host_is_not_dumpable_once_agent_code_can_run(gateway: Gateway) -> None:
    import ctypes

    await run(gateway, "return 1")
    pr_get_dumpable = 3
    assert ctypes.CDLL(None).prctl(pr_get_dumpable, 0, 0, 0, 0) == 0


async def test_agent_code_is_refused_when_the_host_cannot_be_made_non_dumpable(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foldgate.code import hardening

    # prctl "succeeds" but the flag stays set: the credentials would stay readable to the worker.
    monkeypatch.setattr(hardening, "_libc", lambda: lambda option, *_: 0 if option == 4 else 1)
    body = await run(gateway, "return 1")
    assert body["error_type"] == "sandbox_unavailable"
    assert "non-dumpable" in body["error"]
    assert gateway.code._sandbox is None  # no worker was started


_NODES = {"type": "array", "items": {"$ref": "#/$defs/node"}}
_STALL = {
    "$defs": {"node": {"anyOf": [_NODES, {**_NODES, "minItems": 0}]}},
    "type": "object",
    "properties": {"x": {"$ref": "#/$defs/node"}},
}
HOSTILE_SCHEMAS = [
    Tool("crm", "tag_rows", "Tags rows.", {"type": "object", "properties": {"rows": {"uniqueItems": True}}}),
    Tool("crm", "stall", "Looks harmless.", _STALL),
]


async def test_calls_from_code_are_validated_within_the_same_bounds() -> None:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", [*demo_tools(), *HOSTILE_SCHEMAS]), expected_current=None)
    configs = StaticConfigSource({"default": demo_config(routing_mode="code_execution")})
    gw = Gateway(store, configs, RecordingUpstream(), catalog_ttl=60, sandbox=Sandbox)
    try:
        body = await run(
            gw,
            """
            const rows = [];
            for (let i = 0; i < 3000; i++) rows.push({id: i, tag: "ab"});
            const ok = JSON.parse(await call_tool("crm", "tag_rows", {rows})).echo.rows.length;
            let dup, stall, x = "leaf";
            for (let i = 0; i < 14; i++) x = [x];
            try { await call_tool("crm", "tag_rows", {rows: [...rows, {tag: "ab", id: 7}]}); }
            catch (e) { dup = e.error.error; }
            try { await call_tool("crm", "stall", {x}); }
            catch (e) { stall = [e.error.error_type, e.error.error]; }
            return {ok, dup, stall};
        """,
        )
    finally:
        await gw.aclose()
    assert body["value"]["ok"] == 3000  # 3,000 distinct objects: checked in n log n, not pairwise
    assert "items 7 and 3000 are equal" in body["value"]["dup"]
    error_type, error = body["value"]["stall"]
    assert error_type == "invalid_params"
    assert "took longer than 1 s" in error
