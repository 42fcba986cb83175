"""Generated enrichment is searchable but never reaches an agent as the upstream's words: a query
that only the generated hint or queries answer finds the tool, and no listing, search hit or
describe_tool answer carries the generated text."""

from __future__ import annotations

import json

from foldgate.config.source import StaticConfigSource
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.enrichment import Enrichment
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

HINT = "Use when a glorptastic rolodex lookup is needed, unlike create_contact."
QUERIES = ("snarfle my address book", "who is quibbleworth")


def enriched_gateway() -> Gateway:
    tools = demo_tools()
    target = next(t for t in tools if t.key == "crm:find_contact")
    made = {target.key: Enrichment(HINT, QUERIES, target.content_hash, "fixed:v1")}
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", tools, enrichments=made), expected_current=None)
    configs = StaticConfigSource({"default": demo_config()})
    return Gateway(store, configs, RecordingUpstream(), catalog_ttl=60)


async def search(gateway: Gateway, query: str) -> tuple[list[str], str]:
    result = await gateway.call("default", "retrieve_tools", {"query": query, "limit": 3}, "call")
    text = result["content"][0]["text"]
    return [h["name"] for h in json.loads(text)["tools"]], text


async def test_words_only_in_the_generated_queries_find_the_tool() -> None:
    gateway = enriched_gateway()
    names, _ = await search(gateway, "quibbleworth")
    assert names[:1] == ["crm__find_contact"]
    names, _ = await search(gateway, "snarfle")
    assert names[:1] == ["crm__find_contact"]


async def test_the_generated_text_is_in_no_listing_hit_or_description() -> None:
    gateway = enriched_gateway()
    _, hits = await search(gateway, "quibbleworth")
    described = await gateway.call("default", "describe_tool", {"tool_ids": ["crm__find_contact"]}, "call")
    shown = [
        hits,
        json.dumps(described),
        gateway.listing_json("default", "direct"),
        gateway.listing_json("default", "call"),
    ]
    for text in shown:
        assert "glorptastic" not in text
        assert "quibbleworth" not in text
