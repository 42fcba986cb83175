"""The search playground reads the agent's answer back (tail lines of a compact page become hits too)
and scores it as the token's agents rank: over the tools the token sees."""

from __future__ import annotations

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.console.playground import EngineScores, tail_entry
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.principal import Principal
from foldgate.model.tool import Tool
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream


def test_the_playground_reads_a_compact_pages_tail_lines_back_as_hits() -> None:
    """The playground shows every hit of the answer: the tail comes as one line per tool, and a
    description holding the separator characters stays whole."""
    assert tail_entry("crm__find_contact (read): Find a contact (by name): fast.") == {
        "name": "crm__find_contact",
        "call_with": "call_tool_read",
        "description": "Find a contact (by name): fast.",
    }


def _gateway(hidden_word: str) -> Gateway:
    tools = [
        Tool(server="alpha", name="tool_one", description="Forecast for a city, hourly."),
        Tool(server="alpha", name="tool_two", description="Tides for a harbour, hourly."),
        *(Tool(server="beta", name=f"archive_{i}", description=f"{hidden_word} {i}") for i in range(6)),
    ]
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", tools), expected_current=None)
    servers = [{"name": s, "url": f"http://127.0.0.1:9/{s}/mcp"} for s in ("alpha", "beta")]
    configs = StaticConfigSource({"default": parse_tenant_config({"servers": servers})})
    return Gateway(store, configs, RecordingUpstream(), catalog_ttl=60)


def test_a_tokens_scores_come_from_the_tools_it_sees() -> None:
    """The operator sees a scoped token's scores as its agents rank by them: words in servers the
    token cannot see change none of them."""
    who = Principal("default", frozenset({"alpha"}), "destructive", "t1")
    keys = ["alpha:tool_one", "alpha:tool_two"]
    shown = []
    for word in ("forecast", "tides"):
        gateway = _gateway(word)
        shown.append(EngineScores(gateway).scores(gateway.view(who), "forecast tides", keys))
    assert shown[0] == shown[1]
    assert all(shown[0][k]["lexical"] for k in keys)
