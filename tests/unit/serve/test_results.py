"""Client-safe results: no error the gateway makes carries ``structuredContent``.

Clients built on the TypeScript SDK validate ``structuredContent`` against the called tool's
``outputSchema`` even when ``isError`` is true, and an error object never matches: the agent got
``MCP error -32602`` instead of the error, its schema and its hint. Every error kind on every surface
is driven here against tools that declare an output schema, through a check that validates the way
that client does; proxied upstream results pass through unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.tool import Tool
from foldgate.serve.gateway import Gateway
from foldgate.serve.results import error_body, error_result, json_result
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream
from tests.helpers import error_of

OUTPUT = {"type": "object", "properties": {"converted": {"type": "string"}}, "required": ["converted"]}
INPUT = {"type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"],
         "additionalProperties": False}  # fmt: skip
READ = {"readOnlyHint": True}
WRITE = {"readOnlyHint": False, "destructiveHint": False}


def tool(name: str, annotations: dict[str, Any]) -> Tool:
    return Tool("time", name, f"{name} tool", INPUT, output_schema=OUTPUT, annotations=annotations)


TOOLS = [tool("convert_time", READ), tool("set_clock", WRITE), tool("changed", READ), tool("fresh", READ),
         tool("broken", READ), tool("proxied_error", READ)]  # fmt: skip


class Upstream(RecordingUpstream):
    """Fails ``broken`` and answers ``proxied_error`` with the upstream's own error result."""

    async def call_tool(
        self, server: ServerConfig, name: str, arguments: dict[str, Any], **kw: Any
    ) -> dict[str, Any]:
        if name == "broken":
            raise UpstreamError("time: broken failed: connection reset")
        if name == "proxied_error":
            return {"content": [{"type": "text", "text": "no such zone"}], "isError": True,
                    "structuredContent": {"converted": "n/a"}}  # fmt: skip
        return {"content": [{"type": "text", "text": "12:00"}], "structuredContent": {"converted": "12:00"},
                "isError": False}  # fmt: skip


@pytest.fixture
def gateway() -> Gateway:
    store = SqliteStore(":memory:")
    catalog = catalog_from_tools("default", TOOLS)
    awaiting = {"time:changed": "changed", "time:fresh": "pending"}
    store.publish(dataclasses.replace(catalog, approvals=awaiting), expected_current=None)
    config = parse_tenant_config({"servers": [{"name": "time", "url": "http://127.0.0.1:9/time/mcp"}]})
    return Gateway(store, StaticConfigSource({"default": config}), Upstream(), catalog_ttl=60)


def client_check(result: dict[str, Any], output_schema: dict[str, Any] | None) -> None:
    """What the TypeScript SDK client does with a result: validate structuredContent, error or not."""
    if output_schema is not None and "structuredContent" in result:
        Draft202012Validator(output_schema).validate(result["structuredContent"])


# (surface, tool name, arguments, error types the gateway may answer with)
ERRORS = [
    ("direct", "time__convert_time", {}, {"invalid_params"}),
    ("direct", "time__convert_time", {"time": 5}, {"invalid_params"}),
    ("direct", "time__nope", {}, {"not_found"}),
    ("direct", "time__changed", {"time": "now"}, {"tool_changed"}),
    ("direct", "time__fresh", {"time": "now"}, {"tool_pending_approval", "not_found"}),
    ("direct", "time__broken", {"time": "now"}, {"upstream_error"}),
    ("call", "call_tool_read", {"name": "time__convert_time", "arguments": {}}, {"invalid_params"}),
    ("call", "call_tool_read", {"name": "time__set_clock", "arguments": {"time": "x"}}, {"wrong_variant"}),
    ("call", "call_tool_read", {"name": "time__nope", "arguments": {}}, {"not_found"}),
    ("call", "call_tool_read", {"name": "time__changed", "arguments": {"time": "x"}}, {"tool_changed"}),
    ("call", "call_tool_read", {"name": "time__broken", "arguments": {"time": "x"}}, {"upstream_error"}),
    ("call", "no_such_meta_tool", {}, {"not_found"}),
    ("call", "describe_tool", {"tool_ids": []}, {"invalid_request"}),
    ("code", "time__convert_time", {}, {"not_found"}),
    ("code", "code_execution", {"code": "return 1"}, {"not_found"}),  # this process runs no code
    ("code", "describe_tool", {"tool_ids": "x"}, {"invalid_request"}),
]


@pytest.mark.parametrize(("surface", "name", "arguments", "kinds"), ERRORS)
async def test_gateway_errors_never_carry_structured_content(
    gateway: Gateway, surface: str, name: str, arguments: dict[str, Any], kinds: set[str]
) -> None:
    result = await gateway.call("default", name, arguments, surface)
    client_check(result, OUTPUT)  # would raise, as the TS client throws -32602, on a structured error
    error = error_of(result)  # isError, no structuredContent, the object as JSON text
    assert error["error_type"] in kinds, error
    assert error_body(result) == error  # what the code surface hands agent code


async def test_the_self_healing_error_keeps_schema_and_hint_in_the_text(gateway: Gateway) -> None:
    error = error_of(await gateway.call("default", "time__convert_time", {"time": 5}, "direct"))
    assert error["input_schema"] == INPUT
    assert "describe_tool" in error["hint"]


async def test_upstream_results_pass_through_unchanged(gateway: Gateway) -> None:
    proxied = await gateway.call("default", "time__proxied_error", {"time": "x"}, "direct")
    assert proxied == {"content": [{"type": "text", "text": "no such zone"}], "isError": True,
                       "structuredContent": {"converted": "n/a"}}  # fmt: skip
    assert error_body(proxied) is None  # an upstream's own error is not read as the gateway's
    ok = await gateway.call("default", "time__convert_time", {"time": "x"}, "direct")
    assert ok["structuredContent"] == {"converted": "12:00"}


def test_successful_gateway_results_keep_structured_content() -> None:
    assert json_result({"a": 1}) == {"content": [{"type": "text", "text": '{"a": 1}'}],
                                     "structuredContent": {"a": 1}, "isError": False}  # fmt: skip
    error = error_result(UpstreamError("down"), tool="x")
    assert "structuredContent" not in error
    assert json.loads(error["content"][0]["text"]) == {"error": "down", "error_type": "upstream_error",
                                                       "tool": "x"}  # fmt: skip


@pytest.mark.parametrize(
    "result",
    [
        {"content": [{"type": "text", "text": '{"error": "x", "error_type": "y"}'}], "isError": False},
        {"content": [{"type": "text", "text": "plain words"}], "isError": True},
        {"content": [{"type": "text", "text": "{not json"}], "isError": True},
        {"content": [{"type": "text", "text": '{"error": "x"}'}], "isError": True},
        {"content": [], "isError": True},
        {"content": "text", "isError": True},
    ],
)
def test_error_body_reads_only_gateway_shaped_errors(result: dict[str, Any]) -> None:
    assert error_body(result) is None
