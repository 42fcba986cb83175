"""retrieve_tools on the hybrid path: the indexer stores vectors with the catalog, the gateway fuses
them with lexical scores, and a caller's scope still decides what can be found."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from foldgate.config.source import StaticConfigSource
from foldgate.edge.app import create_app
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.principal import Principal
from foldgate.search.hybrid import HybridSearcher
from foldgate.search.multi import MultiIntentSearcher
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools
from tests.unit.search.fakes import local_model

H = {"accept": "application/json", "content-type": "application/json", "mcp-protocol-version": "2025-11-25"}


def hybrid_gateway() -> Gateway:
    model = local_model()
    store = SqliteStore(":memory:")
    catalog = catalog_from_tools("default", demo_tools(), embedder=model)
    assert catalog.dense is not None
    assert catalog.dense["model_id"] == model.model_id
    store.publish(catalog, expected_current=None)
    configs = StaticConfigSource({"default": demo_config()})
    return Gateway(store, configs, RecordingUpstream(), catalog_ttl=60, embedder=lambda: model)


async def retrieve(gateway: Gateway, query: str, **headers: str) -> list[dict[str, Any]]:
    app = create_app(gateway)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as client:
        msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "retrieve_tools", "arguments": {"query": query, "limit": 3}}}  # fmt: skip
        r = await client.post("/mcp/call", content=json.dumps(msg), headers={**H, **headers})
        hits: list[dict[str, Any]] = json.loads(r.json()["result"]["content"][0]["text"])["tools"]
        return hits


async def test_a_paraphrase_finds_the_tool_through_the_dense_signal() -> None:
    gateway = hybrid_gateway()
    catalog = gateway.catalog("default")
    assert catalog is not None
    searcher = gateway.searchers.get(catalog)
    # Served through the multi-intent wrapper, which delegates single-need queries to the hybrid searcher.
    assert isinstance(searcher, MultiIntentSearcher)
    assert isinstance(searcher.inner, HybridSearcher)
    assert searcher.mode == "hybrid"
    hits = await retrieve(gateway, "someone at a company I want to reach by email")
    assert hits[0]["name"] in {"crm__find_contact", "crm__create_contact"}


async def test_hybrid_search_still_only_scores_what_the_caller_sees() -> None:
    gateway = hybrid_gateway()
    scoped = Principal("default", frozenset({"tickets"}), "destructive", "t1")
    hits = await gateway.call(scoped, "retrieve_tools", {"query": "delete a contact for good"}, "call")
    names = [h["name"] for h in json.loads(hits["content"][0]["text"])["tools"]]
    assert names
    assert all(n.startswith("tickets__") for n in names)
