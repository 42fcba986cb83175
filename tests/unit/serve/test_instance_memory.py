"""Bounded instance memory on the request path: every tenant's catalog, views, searchers and
validators share one byte budget; a tenant evicted and read back serves exactly what it served
before (listing, search, describe, validated calls); the bytes held never pass the budget; a
catalog bigger than the whole budget is served on every request without being kept."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from foldgate.config.source import StaticConfigSource
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.lru import MemoryBudget
from foldgate.model.principal import Principal
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

TENANTS = [f"t{i}" for i in range(6)]


def tenants_gateway(budget: int) -> Gateway:
    store = SqliteStore(":memory:")
    for tenant in TENANTS:
        store.publish(catalog_from_tools(tenant, demo_tools()), expected_current=None)
    configs = StaticConfigSource(dict.fromkeys(TENANTS, demo_config()))
    return Gateway(store, configs, RecordingUpstream(), catalog_ttl=3600, memory=MemoryBudget(budget))


async def answers(gw: Gateway, tenant: str) -> dict[str, Any]:
    """What a tenant's agents get: listings, a whole-catalog and a scoped search, a describe, and a
    validated call refused for a bad argument (its validator compiled, or read from the cache)."""
    scoped = Principal(tenant, frozenset({"tickets"}), "destructive", "token-1")
    query = {"query": "delete a contact for good", "limit": 5}
    return {
        "direct": gw.listing_json(tenant, "direct"),
        "call": gw.listing_json(tenant, "call"),
        "search": await gw.call(tenant, "retrieve_tools", query, "call"),
        "scoped_search": await gw.call(scoped, "retrieve_tools", {**query, "query": "ticket"}, "call"),
        "describe": await gw.call(tenant, "describe_tool", {"tool_ids": ["crm__find_contact"]}, "call"),
        "invalid": await gw.call(tenant, "crm__find_contact", {"query": 42}),
    }


async def test_a_tenant_evicted_and_read_back_serves_the_same_listing_search_and_describe() -> None:
    gw = tenants_gateway(64 * 1024 * 1024)
    before = await answers(gw, "t0")
    assert json.loads(before["search"]["content"][0]["text"])["tools"]
    assert before["invalid"]["isError"]
    # Room for about two tenants: serving the others evicts t0 (and everything built on its catalog).
    gw.memory.budget = int(gw.memory.bytes * 2.5)
    for tenant in TENANTS[1:]:
        await answers(gw, tenant)
    stats = gw.memory_stats()
    assert stats["evictions"] > 0
    assert gw.memory.bytes <= gw.memory.budget
    assert gw.catalogs._catalogs.get("t0") is None
    assert gw.searchers._search.get("t0") is None
    after = await answers(gw, "t0")
    assert after == before


async def test_the_bytes_held_never_pass_the_budget_while_tenants_come_and_go() -> None:
    gw = tenants_gateway(64 * 1024 * 1024)
    await answers(gw, "t0")
    gw.memory.budget = int(gw.memory.bytes * 1.5)
    for round_ in range(3):
        for tenant in TENANTS[round_:] + TENANTS[:round_]:
            await answers(gw, tenant)
            assert gw.memory.bytes <= gw.memory.budget
    kinds = gw.memory_stats()["kinds"]
    assert {"catalog", "view", "searcher", "scope", "validator"} <= set(kinds)
    assert sum(k["evictions"] for k in kinds.values()) > 0


async def test_one_budget_holds_catalogs_views_searchers_scopes_and_validators() -> None:
    gw = tenants_gateway(64 * 1024 * 1024)
    await answers(gw, "t0")
    again = await answers(gw, "t0")
    stats = gw.memory_stats()
    held = {kind: k["entries"] for kind, k in stats["kinds"].items() if k["entries"]}
    assert held == {"catalog": 1, "view": 2, "searcher": 1, "scope": 1, "validator": 1}
    assert stats["bytes"] == sum(k["bytes"] for k in stats["kinds"].values()) > 0
    assert stats["hits"] > stats["misses"]
    assert again["invalid"]["isError"]


async def test_a_catalog_bigger_than_the_whole_budget_is_served_but_not_kept() -> None:
    gw = tenants_gateway(2_000)
    first = await answers(gw, "t0")
    second = await answers(gw, "t0")
    assert first == second
    assert json.loads(first["search"]["content"][0]["text"])["tools"]
    stats = gw.memory_stats()
    assert stats["kinds"]["catalog"]["entries"] == 0
    assert stats["kinds"]["catalog"]["oversize"] >= 2
    assert gw.memory.bytes <= 2_000


@contextmanager
def older_generation_collections() -> Iterator[list[int]]:
    """The generations (1 or 2) of the collections CPython runs inside the block."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] >= 1:
            seen.append(info["generation"])

    gc.collect()
    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)


def test_a_cold_load_collects_its_young_objects_on_its_own_request_and_a_warm_read_does_not() -> None:
    gw = tenants_gateway(64 * 1024 * 1024)
    with older_generation_collections() as cold:
        catalog = gw.catalog("t0")
        assert catalog is not None
        gw.searchers.get(catalog)
    assert cold.count(1) >= 2  # one after the catalog's decode, one after the searcher's build
    with older_generation_collections() as warm:
        gw.catalog("t0")
        gw.searchers.get(catalog)
    assert warm == []
