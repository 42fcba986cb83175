"""The cloud change trigger: one async invoke of the IndexerFunction per server per window, with the
server reindex event; a failed invoke does not block the next ping. The local reindexer's answer (the
admin API's, the console's) names each server that failed to list, why, and that its tools keep serving."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.edge.admin import admin_router
from foldgate.edge.app import create_app
from foldgate.errors import UpstreamError
from foldgate.index.indexer import Indexer
from foldgate.index.triggers import lambda_server_trigger, local_reindexer
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import Listing, UpstreamClient


class Lambda:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.invokes: list[dict[str, Any]] = []

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        if self.fail:
            raise RuntimeError("throttled")
        self.invokes.append({**kwargs, "Payload": json.loads(kwargs["Payload"])})
        return {"StatusCode": 202}


async def test_one_invoke_per_server_per_window() -> None:
    client, now = Lambda(), [0.0]
    trigger = lambda_server_trigger("Indexer", client=client, window_s=2.0, clock=lambda: now[0])
    for _ in range(100):
        await trigger("acme", "crm")
    await trigger("acme", "mail")
    now[0] = 2.5
    await trigger("acme", "crm")
    assert [i["Payload"] for i in client.invokes] == [
        {"action": "reindex", "tenant": "acme", "server": "crm"},
        {"action": "reindex", "tenant": "acme", "server": "mail"},
        {"action": "reindex", "tenant": "acme", "server": "crm"},
    ]
    assert {i["InvocationType"] for i in client.invokes} == {"Event"}
    assert {i["FunctionName"] for i in client.invokes} == {"Indexer"}


async def test_a_failed_invoke_lets_the_next_ping_try_at_once() -> None:
    client = Lambda(fail=True)
    trigger = lambda_server_trigger("Indexer", client=client, clock=lambda: 0.0)
    await trigger("acme", "crm")
    client.fail = False
    await trigger("acme", "crm")
    assert len(client.invokes) == 1


class Flaky(UpstreamClient):
    """Lists two tools of crm and one of mail; ``down`` servers fail to list."""

    def __init__(self) -> None:
        super().__init__()
        self.down: dict[str, str] = {}

    async def list_tools(self, server: ServerConfig) -> Listing:
        if server.name in self.down:
            raise UpstreamError(f"{server.name}: tools/list failed: {self.down[server.name]}")
        count = 2 if server.name == "crm" else 1
        tools = [
            {"name": f"t{i}", "description": "d", "inputSchema": {"type": "object"}} for i in range(count)
        ]
        return Listing(tools=tools)


async def test_the_admin_reindex_answer_names_a_failed_server_and_that_its_tools_keep_serving() -> None:
    """POST /api/v1/reindex answered "done" with "error": null when a server failed to list (main)."""
    doc = {"servers": [{"name": s, "url": f"http://127.0.0.1:9/{s}"} for s in ("crm", "mail")]}
    configs = StaticConfigSource({"acme": parse_tenant_config(doc)})
    store, upstream = SqliteStore(":memory:"), Flaky()
    reindex = local_reindexer(Indexer(store, upstream), configs)
    gateway = Gateway(store, configs, upstream)
    app = create_app(gateway, admin=admin_router(gateway, operator_secret=b"o" * 32, reindex=reindex))
    headers = {"authorization": "Bearer " + "o" * 32}
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as client:
        first = (await client.post("/api/v1/reindex", json={"tenant": "acme"}, headers=headers)).json()
        assert (first["reindex"], first["failed_servers"]) == ("done", [])
        upstream.down["crm"] = "502 " + "x" * 5000
        answer = await client.post("/api/v1/reindex", json={"tenant": "acme"}, headers=headers)
    assert answer.status_code == 202
    [failed] = answer.json()["failed_servers"]
    assert failed["server"] == "crm"
    assert failed["error"].startswith("crm: tools/list failed: 502 xxx")
    assert failed["error"].endswith("bytes cut)")  # the upstream's text, bounded
    assert failed["kept_tools"] == 2
    assert failed["serving"] == "its last good 2 tools keep serving"
    assert answer.json()["tools"] == 3  # served from the last good catalog
