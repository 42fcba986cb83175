"""``POST /api/v1/approvals/reject`` over a real indexer: the operator rejects exactly the held content
(stale hash 409, a tool not held 404, credential first), the tool then shows as ``rejected`` and stays
withheld, comes back ``changed`` when the upstream's content changes, and approving it publishes it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.admin import admin_router
from foldgate.edge.app import create_app
from foldgate.index.indexer import Indexer
from foldgate.index.triggers import local_reindexer
from foldgate.serve.gateway import Gateway
from foldgate.store.approvals.sqlite import SqliteApprovalStore
from foldgate.store.catalog.sqlite import SqliteStore
from tests.upstreams.listing import ListingUpstream

OPERATOR = "operator-key-for-tests"
OP = {"authorization": f"Bearer {OPERATOR}"}
SCHEMA = {"type": "object"}


@dataclass
class Admin:
    http: httpx2.AsyncClient
    upstream: ListingUpstream
    approvals: SqliteApprovalStore

    async def held(self) -> dict[str, dict[str, Any]]:
        r = await self.http.get("/api/v1/approvals", params={"tenant": "default"}, headers=OP)
        assert r.status_code == 200, r.text
        return {a["key"]: a for a in r.json()["awaiting"]}

    async def post(self, path: str, tool_id: str, digest: str) -> httpx2.Response:
        body = {"tenant": "default", "tools": [{"id": tool_id, "hash": digest}]}
        return await self.http.post(path, json=body, headers=OP)


@pytest.fixture
async def admin() -> AsyncIterator[Admin]:
    """An untrusted crm server listing one new tool (held pending) and one tool approved already."""
    store, approvals, upstream = SqliteStore(":memory:"), SqliteApprovalStore(":memory:"), ListingUpstream()
    doc = {"servers": [{"name": "crm", "url": "http://127.0.0.1:9/mcp", "trusted": False}]}
    configs = StaticConfigSource({"default": parse_tenant_config(doc)})
    indexer = Indexer(store, upstream, approvals=approvals)
    upstream.tools = [
        {"name": "find", "description": "Find a customer.", "inputSchema": SCHEMA},
        {"name": "list", "description": "List customers.", "inputSchema": SCHEMA},
    ]
    await indexer.index_tenant("default", configs.get("default"))
    listed = store.load_current("default")
    assert listed is not None
    approvals.approve("default", {"crm:list": listed.withheld["crm:list"]["hash"]})
    await indexer.index_tenant("default", configs.get("default"))
    gateway = Gateway(store, configs, upstream, catalog_ttl=0.0)
    reindex = local_reindexer(indexer, configs, published=gateway.invalidate)
    router = admin_router(gateway, operator_secret=OPERATOR.encode(), approvals=approvals, reindex=reindex)
    app = create_app(gateway, admin=router)
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield Admin(http, upstream, approvals)


async def test_reject_keeps_the_tool_withheld_as_rejected_until_its_content_changes(admin: Admin) -> None:
    pending = (await admin.held())["crm:find"]
    assert pending["state"] == "pending"
    r = await admin.post("/api/v1/approvals/reject", "crm:find", pending["hash"])
    assert r.status_code == 200, r.text
    assert r.json()["rejected"] == ["crm:find"]
    assert r.json()["reindex"] == "done"
    assert r.json()["awaiting_approval"] == 0  # decided on: it awaits nobody
    status = (await admin.http.get("/api/v1/status", params={"tenant": "default"}, headers=OP)).json()
    assert (status["awaiting_approval"], status["rejected"]) == (0, 1)
    rejected = (await admin.held())["crm:find"]
    assert (rejected["state"], rejected["hash"]) == ("rejected", pending["hash"])
    tools = (await admin.http.get("/api/v1/tools", params={"tenant": "default"}, headers=OP)).json()["tools"]
    assert [t["id"] for t in tools] == ["crm__list"]  # never listed to agents

    admin.upstream.tools[0] = {
        "name": "find",
        "description": "Find a customer by name.",
        "inputSchema": SCHEMA,
    }
    assert (
        await admin.http.post("/api/v1/reindex", json={"tenant": "default"}, headers=OP)
    ).status_code == 202
    changed = (await admin.held())["crm:find"]
    assert changed["state"] == "changed"
    assert changed["hash"] != pending["hash"]

    r = await admin.post("/api/v1/approvals", "crm:find", changed["hash"])
    assert r.status_code == 200, r.text
    assert "crm:find" not in await admin.held()
    assert admin.approvals.rejected("default") == {}


async def test_a_rejected_tool_can_still_be_approved_by_the_same_hash(admin: Admin) -> None:
    digest = (await admin.held())["crm:find"]["hash"]
    assert (await admin.post("/api/v1/approvals/reject", "crm:find", digest)).status_code == 200
    assert (await admin.post("/api/v1/approvals", "crm:find", digest)).status_code == 200
    assert await admin.held() == {}
    tools = (await admin.http.get("/api/v1/tools", params={"tenant": "default"}, headers=OP)).json()["tools"]
    assert sorted(t["id"] for t in tools) == ["crm__find", "crm__list"]


async def test_a_stale_hash_an_unknown_tool_and_a_tool_not_held_are_refused(admin: Admin) -> None:
    digest = (await admin.held())["crm:find"]["hash"]
    stale = await admin.post("/api/v1/approvals/reject", "crm:find", "0" * 64)
    assert stale.status_code == 409, stale.text
    unknown = await admin.post("/api/v1/approvals/reject", "crm:nope", digest)
    assert unknown.status_code == 404
    # An approved, listed tool is not up for review: rejecting it would silently do nothing.
    listed = await admin.post("/api/v1/approvals/reject", "crm__list", "1" * 64)
    assert listed.status_code == 404
    assert "not held" in listed.json()["detail"]
    assert admin.approvals.rejected("default") == {}
    assert (await admin.held())["crm:find"]["state"] == "pending"


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer wrong"}])
async def test_reject_needs_the_operator_credential_before_anything_else(
    admin: Admin, headers: dict[str, str]
) -> None:
    digest = (await admin.held())["crm:find"]["hash"]
    body = {"tenant": "default", "tools": [{"id": "crm:find", "hash": digest}]}
    r = await admin.http.post("/api/v1/approvals/reject", json=body, headers=headers)
    assert r.status_code == 401
    assert admin.approvals.rejected("default") == {}
    spec = (await admin.http.get("/api/v1/openapi.json", headers=OP)).json()
    assert "/api/v1/approvals/reject" in spec["paths"]
