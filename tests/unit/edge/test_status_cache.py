"""The status endpoint shows this instance's cache budget: the budget, bytes held, hit rate and
evictions, as plain numbers (what a metrics exporter reads)."""

from __future__ import annotations

import httpx2

from foldgate.config.source import StaticConfigSource
from foldgate.edge.admin import admin_router
from foldgate.edge.app import create_app
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.lru import MemoryBudget
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

OPERATOR = "operator-key-for-tests"


async def test_status_reports_the_instance_cache_in_numbers() -> None:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    memory = MemoryBudget(8 * 1024 * 1024)
    gateway = Gateway(
        store, StaticConfigSource({"default": demo_config()}), RecordingUpstream(), memory=memory
    )
    app = create_app(gateway, admin=admin_router(gateway, operator_secret=OPERATOR.encode()))
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
        headers = {"authorization": f"Bearer {OPERATOR}"}
        await client.get("/api/v1/status?tenant=default", headers=headers)
        r = await client.get("/api/v1/status?tenant=default", headers=headers)
    assert r.status_code == 200
    cache = r.json()["instance_cache"]
    assert cache["budget_bytes"] == 8 * 1024 * 1024
    assert 0 < cache["bytes"] <= cache["budget_bytes"]
    assert cache["hits"] > 0
    assert 0 < cache["hit_rate"] <= 1
    assert cache["evictions"] == 0
    assert cache["kinds"]["catalog"]["entries"] == 1
    assert all(isinstance(v, int | float) for k in cache["kinds"].values() for v in k.values())
