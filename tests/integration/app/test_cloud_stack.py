"""The deployed shape on loopback: both Lambda handlers wired to DynamoDB + Parameter Store (moto_server),
the table created from template.yaml, tenant config put in SSM, upstreams that are replays of recorded
catalogs plus the real npm server-everything over Streamable HTTP.

The indexer is driven with the real EventBridge/invoke events in events/, the MCP function with API
Gateway v2 events and with the official mcp client through the same app.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import random
import string
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from foldgate.dev.bench.moto import patched_environ
from tests.aws import create_table_from_template
from tests.helpers import error_of
from tests.lambdas import LambdaContext, event, load_function, sqs_event
from tests.procs import Replay, everything_server, replay

ACME = {"direct_tool_response_mode": "deferred", "tool_response_limit": 1000}
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def big_catalog(path: Path) -> Path:
    """One tool whose input schema is ~300 KB of poorly compressible JSON (chunked in the store)."""
    rng = random.Random(7)
    props = {
        f"field_{i}": {
            "type": "string",
            # Random words, not one run of base62 noise: that is what the poisoning scan holds as an
            # encoded blob, and this tool must publish. Still poorly compressible.
            "description": " ".join(
                "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(40)
            ),
        }
        for i in range(1000)
    }
    schema = {"type": "object", "properties": props, "required": ["field_0"]}
    row = {"server": "huge", "name": "giant_form", "description": "A 300 KB schema.", "inputSchema": schema}
    path.write_text(json.dumps(row) + "\n")
    assert len(json.dumps(schema)) > 300_000
    return path


@dataclass
class Stack:
    indexer: Handler
    mcp: Handler
    app: Any
    ssm: Any
    prefix: str
    table: str
    crm: Replay
    everything_url: str


def put(ssm: Any, name: str, value: Any) -> None:
    ssm.put_parameter(Name=name, Value=json.dumps(value), Type="String", Overwrite=True)


@pytest.fixture(scope="module")
def stack(moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("cloud")
    table = f"foldgate-{uuid.uuid4().hex[:8]}"
    prefix = f"/foldgate-{uuid.uuid4().hex[:6]}"
    create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), table)
    ssm = boto3.client("ssm", region_name="us-east-1")
    with contextlib.ExitStack() as stack:
        crm = stack.enter_context(replay())
        huge = stack.enter_context(replay(big_catalog(tmp / "huge.jsonl")))
        everything = stack.enter_context(everything_server())
        put(ssm, f"{prefix}/tenants/acme/config", ACME)
        put(ssm, f"{prefix}/tenants/acme/servers/crm", {"url": crm.urls["crm"]})
        put(ssm, f"{prefix}/tenants/acme/servers/tickets", {"url": crm.urls["tickets"]})
        put(ssm, f"{prefix}/tenants/acme/servers/everything", {"url": everything})
        beta = {"defer_schema_chars": 20_000, "servers": [{"name": "huge", "url": huge.urls["huge"]}]}
        put(ssm, f"{prefix}/tenants/beta/config", beta)
        env = {
            "FOLDGATE_STORE": "dynamodb",
            "FOLDGATE_TABLE_NAME": table,
            "FOLDGATE_CONFIG_SOURCE": "ssm",
            "FOLDGATE_CONFIG_PREFIX": prefix,
            "FOLDGATE_DEFAULT_TENANT": "acme",
            "FOLDGATE_CATALOG_CACHE_SECONDS": "0",
            "FOLDGATE_CONFIG_CACHE_SECONDS": "0",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_NAMESPACE": "foldgate",
        }
        with patched_environ(env):
            # The env stays set for the module: cold instances loaded by later tests read it too.
            indexer = load_function("indexer", "indexer_function_app")
            mcp = load_function("mcp", "mcp_function_app_cloud")
            yield Stack(indexer.handler, mcp.handler, mcp.handler.app, ssm, prefix, table, crm, everything)


@pytest.fixture(scope="module")
def indexed(stack: Stack) -> dict[str, Any]:
    # Every tenant, directly (the schedule fans out through the index queue: test_index_fanout.py).
    result = stack.indexer({"action": "reindex", "tenants": ["acme", "beta"]}, LambdaContext())
    assert result["errors"] == {}, result
    return result


def invoke(
    stack: Stack, name: str, headers: dict[str, str] | None = None, handler: Handler | None = None
) -> tuple[int, dict[str, Any]]:
    ev = event(name)
    ev["headers"].update(headers or {})
    return call_mcp(handler or stack.mcp, ev)


def call_mcp(handler: Handler, ev: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    # Mangum asks for the thread's current loop, as on Lambda; an async test before may have left none.
    try:
        asyncio.get_event_loop()
    except RuntimeError:
        asyncio.set_event_loop(asyncio.new_event_loop())
    response = handler(ev, LambdaContext())
    body = json.loads(response["body"]) if response.get("body") else {}
    return int(response["statusCode"]), body


def listed(stack: Stack, tenant: str = "acme", handler: Handler | None = None) -> dict[str, dict[str, Any]]:
    status, body = invoke(stack, "mcp_tools_list.json", {"x-foldgate-tenant": tenant}, handler)
    assert status == 200, body
    return {t["name"]: t for t in body["result"]["tools"]}


def test_a_reindex_indexes_every_named_tenant_into_dynamodb(stack: Stack, indexed: dict[str, Any]) -> None:
    acme, beta = indexed["tenants"]["acme"], indexed["tenants"]["beta"]
    assert acme["changed"]
    assert acme["failed_servers"] == 0
    assert acme["servers"]["crm"]["tools"] == 3
    assert acme["servers"]["everything"]["tools"] >= 10
    assert beta["tools"] == 1
    pointer = boto3.client("dynamodb", region_name="us-east-1").get_item(
        TableName=stack.table, Key={"pk": {"S": "TENANT#acme"}, "sk": {"S": "CURRENT"}}
    )
    assert pointer["Item"]["version"]["S"] == acme["version"]


def test_tools_list_event_serves_the_deferred_catalog(stack: Stack, indexed: dict[str, Any]) -> None:
    tools = listed(stack)
    assert tools["crm__create_contact"]["inputSchema"] == {"type": "object"}
    assert tools["crm__create_contact"]["description"].endswith(
        "create_contact(name*:str, email*:str, address:{city:str, country:str}, "
        "tags:[enum[lead|customer|partner]])"
    )
    assert "everything__echo" in tools
    assert next(iter(tools)) == "describe_tool"


def test_describe_and_validated_calls_through_api_gateway_events(
    stack: Stack, indexed: dict[str, Any]
) -> None:
    status, body = invoke(stack, "mcp_describe_tool.json")
    assert status == 200
    rows = body["result"]["structuredContent"]["tools"]
    assert rows[0]["input_schema"]["required"] == ["name", "email"]
    stack.crm.clear()
    status, body = invoke(stack, "mcp_tools_call_invalid.json")
    assert body["result"]["isError"] is True
    assert error_of(body["result"])["error_type"] == "invalid_params"
    assert stack.crm.calls() == []
    status, body = invoke(stack, "mcp_tools_call.json")
    assert body["result"]["isError"] is False
    assert [c["tool"] for c in stack.crm.calls()] == ["find_contact"]


async def test_official_client_through_the_same_app(stack: Stack, indexed: dict[str, Any]) -> None:
    transport = httpx2.ASGITransport(app=stack.app)
    async with httpx2.AsyncClient(transport=transport, base_url="https://api.example", timeout=30) as http:
        mcp = streamable_http_client("https://api.example/mcp/all", http_client=http)
        async with Client(mcp) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["everything__echo"].input_schema == {"type": "object"}
            described = await client.call_tool("describe_tool", {"tool_ids": ["everything:echo"]})
            row = described.structured_content["tools"][0]  # type: ignore[index]
            assert row["input_schema"]["properties"]["message"]["type"] == "string"
            echoed = await client.call_tool("everything__echo", {"message": "via dynamodb"})
            assert not echoed.is_error
            assert "via dynamodb" in echoed.content[0].text  # type: ignore[union-attr]
            bad = await client.call_tool("everything__echo", {"message": 5})
            assert bad.is_error


async def mcp_client_call(stack: Stack, tenant: str, path: str, name: str, args: dict[str, Any]) -> Any:
    transport = httpx2.ASGITransport(app=stack.app)
    headers = {"x-foldgate-tenant": tenant}
    async with (
        httpx2.AsyncClient(transport=transport, base_url="https://api.example", headers=headers) as http,
        Client(streamable_http_client(f"https://api.example{path}", http_client=http)) as client,
    ):
        return await client.call_tool(name, args)


async def test_search_surface_and_read_cache_on_dynamodb(stack: Stack, indexed: dict[str, Any]) -> None:
    found = await mcp_client_call(stack, "acme", "/mcp/call", "retrieve_tools", {"query": "echo message"})
    # retrieve_tools answers in JSON text only (no structuredContent doubling the hits).
    hits = json.loads(found.content[0].text)["tools"]  # type: ignore[union-attr]
    echo = next(h for h in hits if h["name"] == "everything__echo")
    message = "m" * 3000
    args = {"name": "everything__echo", "arguments": {"message": message}}
    cut = await mcp_client_call(stack, "acme", "/mcp/call", echo["call_with"], args)
    text = cut.content[0].text
    key = text.split('key "', 1)[1].split('"', 1)[0]
    parts, offset = [], 0
    while offset is not None:  # pages are at most tool_response_limit (1000) characters
        args = {"key": key, "offset": offset, "limit": 5000}
        page = (await mcp_client_call(stack, "acme", "/mcp/call", "read_cache", args)).structured_content
        assert len(page["text"]) <= 1000
        parts.append(page["text"])
        offset = page["next_offset"]
    assert message in "".join(parts)
    foreign = await mcp_client_call(stack, "beta", "/mcp/call", "read_cache", {"key": key})
    missing = await mcp_client_call(stack, "beta", "/mcp/call", "read_cache", {"key": "nope"})
    assert foreign.is_error
    assert foreign.structured_content == missing.structured_content


def test_a_300_kb_schema_is_stored_and_described_whole(stack: Stack, indexed: dict[str, Any]) -> None:
    tools = listed(stack, "beta")
    assert tools["huge__giant_form"]["inputSchema"] == {"type": "object"}  # deferred by size
    ev = event("mcp_describe_tool.json")
    body = json.loads(ev["body"])
    body["params"]["arguments"] = {"tool_ids": ["huge__giant_form"]}
    ev["body"] = json.dumps(body)
    ev["headers"]["x-foldgate-tenant"] = "beta"
    _, response = call_mcp(stack.mcp, ev)
    schema = response["result"]["structuredContent"]["tools"][0]["input_schema"]
    assert len(schema["properties"]) == 1000
    assert len(json.dumps(schema)) > 300_000


def test_parameter_change_reindexes_only_that_tenant(stack: Stack, indexed: dict[str, Any]) -> None:
    name = f"{stack.prefix}/tenants/acme/servers/tickets"
    stack.ssm.delete_parameter(Name=name)
    try:
        change = event("ssm_change.json")
        change["detail"]["name"] = name
        result = stack.indexer(change, LambdaContext())
        assert list(result["tenants"]) == ["acme"]
        assert result["tenants"]["acme"]["changed"]
        assert not any(n.startswith("tickets__") for n in listed(stack))
    finally:
        put(stack.ssm, name, {"url": stack.crm.urls["tickets"]})
        stack.indexer(event("reindex_invoke.json"), LambdaContext())
    assert "tickets__list_tickets" in listed(stack)


def test_an_invalid_config_is_rejected_and_the_last_catalog_keeps_serving(
    stack: Stack, indexed: dict[str, Any]
) -> None:
    name = f"{stack.prefix}/tenants/acme/config"
    before = listed(stack)
    put(stack.ssm, name, {"direct_tool_response_mode": "sometimes"})
    try:
        change = event("ssm_change.json")
        change["detail"]["name"] = name
        result = stack.indexer(change, LambdaContext())
        # A warm indexer holds the last good config: it reports the rejection and changes nothing.
        assert "direct_tool_response_mode" in result["errors"]["acme"]
        assert result["tenants"]["acme"]["changed"] is False
        # A cold one never saw a good document: it refuses to index the tenant at all.
        cold = load_function("indexer", "indexer_function_app_cold")
        result = cold.handler(change, LambdaContext())
        assert result["tenants"] == {}
        assert "direct_tool_response_mode" in result["errors"]["acme"]
        assert listed(stack) == before  # a warm MCP instance keeps its last good config and catalog
        # A cold instance never saw a good document: it serves with the config stored with the catalog.
        cold = load_function("mcp", "mcp_function_app_cold")
        assert listed(stack, handler=cold.handler) == before
    finally:
        put(stack.ssm, name, ACME)


def test_an_unreachable_upstream_keeps_its_last_tools(stack: Stack, indexed: dict[str, Any]) -> None:
    name = f"{stack.prefix}/tenants/acme/servers/everything"
    put(stack.ssm, name, {"url": "http://127.0.0.1:9/mcp", "timeout_s": 3})
    try:
        result = stack.indexer(event("reindex_invoke.json"), LambdaContext())
        report = result["tenants"]["acme"]
        assert report["failed_servers"] == 1
        assert report["servers"]["everything"]["healthy"] is False
        assert "everything__echo" in listed(stack)
    finally:
        put(stack.ssm, name, {"url": stack.everything_url})
        stack.indexer(event("reindex_invoke.json"), LambdaContext())


def test_unknown_events_are_refused_without_indexing(stack: Stack) -> None:
    result = stack.indexer({"hello": "world"}, LambdaContext())
    assert result["error"]["code"] == "invalid_request"


def test_the_deployed_settings_require_agent_tokens(stack: Stack, indexed: dict[str, Any]) -> None:
    """template.yaml sets FOLDGATE_AUTH_REQUIRED=true: secrets from Parameter Store, tokens in DynamoDB."""
    from foldgate.auth.authority import TokenAuthority
    from foldgate.model.agent_token import TokenHasher
    from foldgate.store.tokens.dynamodb import DynamoTokenStore

    for name, value in (("token-hmac-key", "k" * 32), ("operator-key", "o" * 32)):
        stack.ssm.put_parameter(
            Name=f"{stack.prefix}/secrets/{name}", Value=value, Type="SecureString", Overwrite=True
        )
    env = {"FOLDGATE_AUTH_REQUIRED": "true", "FOLDGATE_ALLOW_TENANT_HEADER": "false"}
    secured = load_function("mcp", "mcp_function_app_secured", env).handler
    authority = TokenAuthority(DynamoTokenStore(stack.table), TokenHasher(b"k" * 32))
    token = authority.issue("acme", servers=["crm"], tier="read", expires_in=600)[0]
    status, _ = invoke(stack, "mcp_tools_list.json", {"x-foldgate-tenant": "acme"}, secured)
    assert status == 401
    status, body = invoke(stack, "mcp_tools_list.json", {"authorization": f"Bearer {token}"}, secured)
    assert status == 200
    assert [t["name"] for t in body["result"]["tools"]] == ["describe_tool", "crm__find_contact"]
    # The admin API is AdminFunction's (events/admin_status.json is what API Gateway hands it).
    operator = load_function("admin", "admin_function_app_secured", env).handler
    admin = event("admin_status.json", rawQueryString="tenant=acme")
    admin["headers"].pop("authorization")
    assert call_mcp(operator, admin)[0] == 401
    admin["headers"]["authorization"] = "Bearer " + "o" * 32
    assert call_mcp(secured, admin)[0] == 404  # not McpFunction's any more
    status, body = call_mcp(operator, admin)
    assert status == 200
    assert body["servers"]["crm"]["healthy"] is True


def test_server_and_freshness_events_reindex_only_what_changed(stack: Stack, indexed: dict[str, Any]) -> None:
    result = stack.indexer(event("server_change_invoke.json"), LambdaContext())
    assert result["trigger"] == "server_change"
    assert list(result["tenants"]) == ["acme"]
    assert set(result["tenants"]["acme"]["servers"]) == {"crm", "tickets", "everything"}
    assert result["tenants"]["acme"]["changed"] is False  # crm's listing is what the catalog holds
    pointer = boto3.client("dynamodb", region_name="us-east-1").get_item(
        TableName=stack.table, Key={"pk": {"S": "TENANT#acme"}, "sk": {"S": "CURRENT"}}
    )["Item"]["version"]["S"]
    # The freshness schedule's message for acme, as the index queue delivers it.
    body = json.dumps({"tenant": "acme", "trigger": "freshness", "window": "2026-11-29T21:05:00Z"})
    message = {"MessageId": str(uuid.uuid4()), "ReceiptHandle": "r", "Body": body, "MD5OfBody": "m"}
    fresh = stack.indexer(sqs_event([message]), LambdaContext())
    assert fresh == {"batchItemFailures": []}
    after = boto3.client("dynamodb", region_name="us-east-1").get_item(
        TableName=stack.table, Key={"pk": {"S": "TENANT#acme"}, "sk": {"S": "CURRENT"}}
    )["Item"]["version"]["S"]
    assert after == pointer  # nothing changed upstream: nothing published


def hook_event(tenant: str, server: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    ev = event("mcp_tools_list.json")
    path = f"/api/v1/hooks/{tenant}/{server}"
    ev["routeKey"] = ev["requestContext"]["routeKey"] = "ANY /api/v1/{proxy+}"
    ev["rawPath"] = ev["requestContext"]["http"]["path"] = path
    ev["headers"] = {"host": ev["headers"]["host"], "content-type": "application/json", **headers}
    ev["body"] = body.decode()
    return ev


def test_a_signed_webhook_through_api_gateway_is_accepted_and_a_forged_one_refused(
    stack: Stack, indexed: dict[str, Any]
) -> None:
    secret = "s" * 64
    stack.ssm.put_parameter(
        Name=f"{stack.prefix}/tenants/acme/hooks/crm", Value=secret, Type="SecureString", Overwrite=True
    )
    # AdminFunction mounts the webhook where it can invoke the indexer (the template sets the name).
    mcp = load_function(
        "admin", "admin_function_app_hooks", {"FOLDGATE_INDEXER_FUNCTION": "foldgate-indexer"}
    )
    body, ts = b'{"event":"deploy"}', str(int(time.time()))
    mac = hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    good = {"x-foldgate-timestamp": ts, "x-foldgate-signature": f"sha256={mac}"}
    status, answer = call_mcp(mcp.handler, hook_event("acme", "crm", body, good))
    assert (status, answer["accepted"]) == (202, True)
    refused = [
        call_mcp(mcp.handler, hook_event("acme", "crm", body, good)),  # replayed
        call_mcp(mcp.handler, hook_event("acme", "crm", body, {**good, "x-foldgate-signature": "sha256=00"})),
        call_mcp(mcp.handler, hook_event("acme", "tickets", body, good)),  # no secret issued
        call_mcp(mcp.handler, hook_event("nobody", "crm", body, good)),  # unknown tenant
    ]
    assert {r[0] for r in refused} == {401}
    assert len({json.dumps(r[1]) for r in refused}) == 1
