"""Activity events for requests that never reach the gateway (a credential refused, a rate limit, a
token store that cannot answer) and for prompts/get and resources/read; and canaries: a token, a
secret header value and an argument value are in no event and no log line under default settings."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest

from foldgate.auth.authority import TokenAuthority
from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.edge.access import Access
from foldgate.edge.ratelimit import RateLimiter
from foldgate.errors import StoreError, UpstreamError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.agent_token import TokenHasher, new_token
from foldgate.model.catalog import new_version_id
from foldgate.model.offerings import publish_items
from foldgate.model.uris import publish_uri
from foldgate.serve.gateway import Gateway
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools, gateway_client
from tests.recorders import ListRecorder

H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = {**H, "mcp-protocol-version": "2025-11-25"}
SECRET = b"s" * 32
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "crm__find_contact", "arguments": {"query": "a"}},
}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def bearer(token: str) -> dict[str, str]:
    return {**LEGACY, "authorization": f"Bearer {token}"}


@contextlib.asynccontextmanager
async def guarded(
    tmp_path: Path, **access: Any
) -> AsyncIterator[tuple[httpx2.AsyncClient, TokenAuthority, ListRecorder]]:
    authority = TokenAuthority(SqliteTokenStore(tmp_path / "t.sqlite3"), TokenHasher(SECRET), cache_seconds=0)
    gate = Access(authority=authority, auth_required=True, **access)
    async with gateway_client(access=gate) as (client, gateway, _, _):
        recorder = ListRecorder()
        gateway.recorder = recorder
        yield client, authority, recorder


async def test_a_refused_credential_is_a_denied_event_under_the_default_tenant(tmp_path: Path) -> None:
    async with guarded(tmp_path) as (client, _, recorder):
        refused = await client.post("/mcp/call", json=CALL, headers=bearer(new_token()))
        assert refused.status_code == 401
        event = recorder.only_call()
        assert (event.tenant, event.outcome, event.detail, event.principal) == (
            "default",
            "denied",
            "unauthorized",
            "",
        )
        # Named as a served call is: its server and the upstream's tool name (never the published name).
        assert (event.method, event.server, event.tool, event.surface) == (
            "tools/call",
            "crm",
            "find_contact",
            "mcp/call",
        )
        assert event.request_bytes == len(refused.request.content)
        assert event.request_id
        # A refused listing asked for no work: no event.
        recorder.clear()
        assert (await client.post("/mcp/call", json=LIST, headers=bearer(new_token()))).status_code == 401
        assert recorder.events == []


async def test_a_rate_limited_caller_is_a_rate_limited_event_of_that_caller(tmp_path: Path) -> None:
    async with guarded(tmp_path, limiter=RateLimiter(per_minute=1, burst=1)) as (
        client,
        authority,
        recorder,
    ):
        token, grant = authority.issue("default", expires_in=None)
        assert (await client.post("/mcp/all", json=CALL, headers=bearer(token))).status_code == 200
        assert (await client.post("/mcp/all", json=CALL, headers=bearer(token))).status_code == 429
        first, limited = recorder.calls
        assert (first.outcome, first.principal) == ("ok", grant.token_id)
        assert (limited.outcome, limited.principal, limited.tenant) == (
            "rate_limited",
            grant.token_id,
            "default",
        )
        assert (limited.server, limited.tool) == (first.server, first.tool) == ("crm", "find_contact")
        assert limited.upstream_ms is None


async def test_a_refused_call_of_a_bare_servers_tool_names_its_server(tmp_path: Path) -> None:
    bare = parse_tenant_config(
        {"servers": [{"name": "crm", "url": "http://127.0.0.1:9/crm/mcp", "publish": "bare"}]}
    )
    authority = TokenAuthority(SqliteTokenStore(tmp_path / "t.sqlite3"), TokenHasher(SECRET), cache_seconds=0)
    gate = Access(authority=authority, auth_required=True, limiter=RateLimiter(per_minute=1, burst=1))
    async with gateway_client(bare, access=gate) as (client, gateway, _, _):
        current = gateway.catalog("default")
        assert current is not None
        published = catalog_from_tools("default", demo_tools(), bare={"crm"})
        gateway.catalogs.store.publish(published, expected_current=current.version)
        recorder = ListRecorder()
        gateway.recorder = recorder
        token, _ = authority.issue("default", expires_in=None)
        call = {**CALL, "params": {"name": "find_contact", "arguments": {"query": "a"}}}
        assert (await client.post("/mcp/all", json=call, headers=bearer(token))).status_code == 200
        assert (await client.post("/mcp/all", json=call, headers=bearer(token))).status_code == 429
        unknown = {**CALL, "params": {"name": "no_such_tool", "arguments": {}}}
        assert (await client.post("/mcp/all", json=unknown, headers=bearer(new_token()))).status_code == 401
        served, limited, refused = recorder.calls
        assert (served.outcome, limited.outcome, refused.outcome) == ("ok", "rate_limited", "denied")
        assert (served.server, served.tool) == (limited.server, limited.tool) == ("crm", "find_contact")
        # A name the tenant does not publish is kept as sent, with no server.
        assert (refused.server, refused.tool) == ("", "no_such_tool")


async def test_an_anonymous_flood_is_bounded_and_a_token_store_outage_is_an_event(tmp_path: Path) -> None:
    async with guarded(tmp_path, source_limiter=RateLimiter(per_minute=1, burst=1)) as (
        client,
        authority,
        recorder,
    ):
        assert (await client.post("/mcp/all", json=CALL, headers=bearer(new_token()))).status_code == 401
        assert (await client.post("/mcp/all", json=CALL, headers=bearer(new_token()))).status_code == 429
        for _ in range(5):
            assert (await client.post("/mcp/all", json=CALL, headers=bearer(new_token()))).status_code == 429
        # The refusal within the source's budget is recorded; the address over it, nobody known, is not.
        assert [(e.outcome, e.principal, e.server, e.tool, e.upstream_ms) for e in recorder.calls] == [
            ("denied", "", "crm", "find_contact", None)
        ]

    class DownStore(SqliteTokenStore):
        def get(self, token_id: str) -> Any:
            raise StoreError("the table is gone")

    authority = TokenAuthority(DownStore(":memory:"), TokenHasher(SECRET), cache_seconds=0)
    async with gateway_client(access=Access(authority=authority, auth_required=True)) as (
        client,
        gateway,
        _,
        _,
    ):
        recorder = ListRecorder()
        gateway.recorder = recorder
        token, _ = TokenAuthority(SqliteTokenStore(":memory:"), TokenHasher(SECRET)).issue(
            "default", expires_in=None
        )
        assert (await client.post("/mcp/all", json=CALL, headers=bearer(token))).status_code == 503
        event = recorder.only_call()
        assert (event.outcome, event.detail) == ("internal_error", "token_store_unavailable")
        assert (event.server, event.tool, event.upstream_ms) == ("crm", "find_contact", None)


class DownStore(SqliteTokenStore):
    def get(self, token_id: str) -> Any:
        raise StoreError("the table is gone")


class BrokenRecorder(ListRecorder):
    def record(self, event: Any) -> None:
        raise AttributeError("'NoneType' object has no attribute 'recorder'")


@pytest.mark.parametrize("recorder", [ListRecorder(), BrokenRecorder()], ids=["recorded", "recorder_fails"])
async def test_a_token_store_outage_refuses_every_request_without_a_traceback(
    recorder: ListRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    """Each refusal is a 503 and a log line or two: no traceback per request, whether the event is
    recorded or its recorder fails after the answer is out."""
    authority = TokenAuthority(DownStore(":memory:"), TokenHasher(SECRET), cache_seconds=0)
    async with gateway_client(access=Access(authority=authority, auth_required=True)) as (
        client,
        gateway,
        _,
        _,
    ):
        gateway.recorder = recorder
        token, _ = TokenAuthority(SqliteTokenStore(":memory:"), TokenHasher(SECRET)).issue(
            "default", expires_in=None
        )
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                answer = await client.post("/mcp/all", json=CALL, headers=bearer(token))
                assert answer.status_code == 503
                assert answer.headers["retry-after"]
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(caplog.records) <= 6
    if isinstance(recorder, BrokenRecorder):
        assert len(tracebacks) <= 1  # a broken recorder's first failure of the process, at most
    else:
        assert tracebacks == []
        assert [e.detail for e in recorder.calls] == ["token_store_unavailable"] * 3


async def test_a_huge_refused_body_is_recorded_by_its_method_without_parsing(tmp_path: Path) -> None:
    big = {**CALL, "params": {"name": "crm__find_contact", "arguments": {"q": "x" * 100_000}}}
    async with guarded(tmp_path) as (client, _, recorder):
        assert (await client.post("/mcp/all", json=big, headers=bearer(new_token()))).status_code == 401
        event = recorder.only_call()
        assert (event.method, event.tool, event.outcome) == ("tools/call", "", "denied")


class OfferingUpstream(RecordingUpstream):
    """Answers resources/read and prompts/get (or fails them on ``fail_reads``)."""

    fail_reads = False

    async def request(self, server: ServerConfig, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.fail_reads:
            raise UpstreamError(f"{server.name}: down")
        if method == "resources/read":
            return {"contents": [{"uri": params["uri"], "text": "note"}]}
        return {"messages": [{"role": "user", "content": {"type": "text", "text": "brief"}}]}


def add_offerings(gateway: Gateway) -> None:
    current = gateway.catalog("default")
    assert current is not None
    items = publish_items("prompt", [("crm", {"name": "brief", "description": "d"})])
    items += publish_items("resource", [("crm", {"uri": "mem://note", "name": "note"})])
    gateway.catalogs.store.publish(
        replace(current, version=new_version_id(), offerings=tuple(items)), expected_current=current.version
    )


async def test_resources_read_and_prompts_get_are_events_with_their_outcomes() -> None:
    async with gateway_client() as (client, gateway, _, _):
        upstream = OfferingUpstream()
        gateway.caller.upstream = upstream
        add_offerings(gateway)
        recorder = ListRecorder()
        gateway.recorder = recorder
        uri = publish_uri("crm", "mem://note")

        async def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
            r = await client.post(
                "/mcp/all",
                json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                headers=LEGACY,
            )
            body: dict[str, Any] = r.json()
            return body

        assert "result" in await rpc("resources/read", {"uri": uri})
        assert "result" in await rpc("prompts/get", {"name": "crm__brief"})
        assert "error" in await rpc("prompts/get", {"name": "crm__nope"})
        upstream.fail_reads = True
        assert "error" in await rpc("resources/read", {"uri": uri})
        read, got, missing, failed = recorder.calls
        assert (read.method, read.server, read.tool, read.outcome) == (
            "resources/read",
            "crm",
            "mem://note",
            "ok",
        )
        assert read.upstream_ms is not None
        assert read.response_bytes > 0
        assert (got.method, got.server, got.tool, got.outcome) == ("prompts/get", "crm", "brief", "ok")
        assert (missing.outcome, missing.tool) == ("not_found", "crm__nope")
        assert (failed.outcome, failed.server) == ("upstream_error", "crm")


async def test_no_token_secret_header_or_argument_value_in_any_event_or_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    canary_arg = "CANARY-ARG-5b1f0e"
    canary_header = "CANARY-HEADER-77ad2c"
    authority = TokenAuthority(SqliteTokenStore(tmp_path / "t.sqlite3"), TokenHasher(SECRET), cache_seconds=0)
    token, _ = authority.issue("default", tier="destructive", expires_in=None)
    servers = [
        {"name": "crm", "url": "http://127.0.0.1:9/crm/mcp", "headers": {"x-api-key": canary_header}},
        {"name": "tickets", "url": "http://127.0.0.1:9/tickets/mcp"},
    ]
    access = Access(authority=authority, auth_required=True)
    caplog.set_level(logging.DEBUG)
    async with gateway_client(demo_config(servers=servers), access=access) as (client, gateway, upstream, _):
        recorder = ListRecorder()
        gateway.recorder = recorder
        upstream.fail["create_contact"] = UpstreamError("crm: refused")
        for name, args in (
            ("crm__find_contact", {"query": canary_arg}),
            ("crm__create_contact", {"name": canary_arg, "email": f"{canary_arg}@example.com"}),
            ("crm__create_contact", {"name": canary_arg}),  # invalid: answered with the schema
        ):
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": name, "arguments": args},
            }
            assert (await client.post("/mcp/all", json=call, headers=bearer(token))).status_code == 200
        wrong = token[:-4] + "AAAA"
        assert (await client.post("/mcp/all", json=CALL, headers=bearer(wrong))).status_code == 401
    assert [e.outcome for e in recorder.calls] == ["ok", "upstream_error", "invalid_arguments", "denied"]
    recorded = recorder.text()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for canary in (token, wrong, canary_header, canary_arg, SECRET.decode()):
        assert canary not in recorded
        assert canary not in logged
    assert json.loads(recorded.splitlines()[0])["arguments"] is None
