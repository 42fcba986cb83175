"""Every operator action on the admin API is one audit event of the operator key (by its id, never
the key) and the caller's address: reindexes, approvals and rejections (per tool recorded, one refused
event for a refused request)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.admin import admin_router
from foldgate.edge.app import create_app
from foldgate.edge.operator_audit import operator_key_id
from foldgate.index.indexer import Indexer, catalog_from_tools
from foldgate.index.triggers import local_reindexer
from foldgate.serve.gateway import Gateway
from foldgate.store.approvals.sqlite import SqliteApprovalStore
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools
from tests.recorders import ListRecorder
from tests.upstreams.listing import ListingUpstream

OPERATOR = "operator-key-CANARY-3f9a"
OP = {"authorization": f"Bearer {OPERATOR}"}
SCHEMA = {"type": "object"}


@pytest.fixture
async def admin() -> AsyncIterator[tuple[httpx2.AsyncClient, ListRecorder]]:
    """An untrusted crm server listing two new tools (held pending), a recorder on the gateway."""
    store, approvals, upstream = SqliteStore(":memory:"), SqliteApprovalStore(":memory:"), ListingUpstream()
    doc = {"servers": [{"name": "crm", "url": "http://127.0.0.1:9/mcp", "trusted": False}]}
    configs = StaticConfigSource({"default": parse_tenant_config(doc)})
    indexer = Indexer(store, upstream, approvals=approvals)
    upstream.tools = [
        {"name": "find", "description": "Find a customer.", "inputSchema": SCHEMA},
        {"name": "list", "description": "List customers.", "inputSchema": SCHEMA},
    ]
    await indexer.index_tenant("default", configs.get("default"))
    recorder = ListRecorder()
    gateway = Gateway(store, configs, upstream, catalog_ttl=0.0, recorder=recorder)
    reindex = local_reindexer(indexer, configs, published=gateway.invalidate)
    router = admin_router(gateway, operator_secret=OPERATOR.encode(), approvals=approvals, reindex=reindex)
    transport = httpx2.ASGITransport(app=create_app(gateway, admin=router), client=("198.51.100.7", 4000))
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield http, recorder


async def held(http: httpx2.AsyncClient) -> dict[str, str]:
    r = await http.get("/api/v1/approvals", params={"tenant": "default"}, headers=OP)
    return {a["key"]: a["hash"] for a in r.json()["awaiting"]}


async def test_reindex_approve_and_reject_are_events_of_the_operator_key(
    admin: tuple[httpx2.AsyncClient, ListRecorder], caplog: pytest.LogCaptureFixture
) -> None:
    http, recorder = admin
    caplog.set_level(logging.DEBUG)
    hashes = await held(http)
    assert (await http.post("/api/v1/reindex", json={"tenant": "default"}, headers=OP)).status_code == 202
    both: dict[str, Any] = {"tenant": "default", "tools": [{"id": k, "hash": h} for k, h in hashes.items()]}
    stale: dict[str, Any] = {"tenant": "default", "tools": [{"id": "crm:find", "hash": "0" * 64}]}
    assert (await http.post("/api/v1/approvals", json=stale, headers=OP)).status_code == 409
    assert (await http.post("/api/v1/approvals", json=both, headers=OP)).status_code == 200
    assert (await http.post("/api/v1/approvals/reject", json=stale, headers=OP)).status_code in (404, 409)
    events = recorder.audits
    assert [(e.action, e.target, e.outcome) for e in events] == [
        ("index.reindex", "default", "ok"),
        ("approval.approve", "crm:find", "refused"),
        ("approval.approve", "crm:find", "ok"),
        ("approval.approve", "crm:list", "ok"),
        ("approval.reject", "crm:find", "refused"),
    ]
    assert {e.tenant for e in events} == {"default"}
    assert {(e.actor.via, e.actor.who, e.actor.source) for e in events} == {
        ("operator_key", operator_key_id(OPERATOR.encode()), "198.51.100.7")
    }
    assert events[0].detail == "done"
    assert events[2].detail == "content " + hashes["crm:find"][:12]
    assert recorder.calls == []  # the admin API is not agent activity
    assert OPERATOR not in recorder.text()
    assert OPERATOR not in "\n".join(r.getMessage() for r in caplog.records)


async def test_a_wrong_operator_credential_is_a_refused_sign_in_and_acts_on_nothing(
    admin: tuple[httpx2.AsyncClient, ListRecorder],
) -> None:
    http, recorder = admin
    wrong = {"authorization": "Bearer not-the-key-CANARY"}
    assert (await http.post("/api/v1/reindex", json={"tenant": "default"}, headers=wrong)).status_code == 401
    [event] = recorder.audits
    assert (event.tenant, event.action, event.outcome) == ("*", "console.sign_in_refused", "refused")
    assert (event.actor.via, event.actor.who, event.actor.source) == ("operator_key", "", "198.51.100.7")
    assert "not-the-key-CANARY" not in recorder.text()


async def test_the_apps_recorder_takes_agents_calls_and_operators_actions_alike() -> None:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    gateway = Gateway(store, StaticConfigSource({"default": demo_config()}), RecordingUpstream())
    recorder = ListRecorder()
    router = admin_router(gateway, operator_secret=OPERATOR.encode(), reindex=None)
    app = create_app(gateway, admin=router, recorder=recorder)
    assert app.state.recorder is recorder
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "crm__find_contact", "arguments": {"query": "a"}}}  # fmt: skip
    headers = {"accept": "application/json", "content-type": "application/json"}
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as http:
        assert (await http.post("/mcp/all", json=call, headers=headers)).status_code == 200
        assert (await http.post("/api/v1/reindex", json={"tenant": "default"}, headers=OP)).status_code == 503
    assert [e.outcome for e in recorder.calls] == ["ok"]
    assert [(e.action, e.outcome) for e in recorder.audits] == [("index.reindex", "refused")]
