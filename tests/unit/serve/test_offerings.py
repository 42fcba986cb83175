"""What a caller sees of upstream prompts, resources and templates, and the proxied reads: a
quarantined, disabled or out-of-scope server's entries answer exactly like ones that never existed,
URIs map back to the right upstream and forward again in results, a changed prompt is not fetched."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.errors import FoldgateError, UpstreamError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.offerings import publish_items
from foldgate.model.principal import Principal
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream


class OfferingUpstream(RecordingUpstream):
    """Answers resources/read, prompts/get and completion/complete with what it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str, dict[str, Any]]] = []

    async def request(self, server: ServerConfig, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append((server.name, method, params))
        if method == "resources/read":
            return {"contents": [{"uri": params["uri"], "text": f"{server.name} says hi"}]}
        if method == "prompts/get":
            link = {"type": "resource_link", "uri": "mem://note", "name": "note"}
            embedded = {"type": "resource", "resource": {"uri": "mem://doc", "text": "doc"}}
            return {"messages": [{"role": "user", "content": link}, {"role": "user", "content": embedded}]}
        if params["argument"]["value"] == "boom":
            raise UpstreamError(f"{server.name}: completion failed")
        return {
            "completion": {"values": [f"{server.name}-{params['ref'].get('name') or params['ref']['uri']}"]}
        }


def config(**server_overrides: dict[str, Any]) -> TenantConfig:
    servers = [
        {"name": name, "url": f"http://127.0.0.1:9/{name}/mcp", **server_overrides.get(name, {})}
        for name in ("crm", "vault")
    ]
    return parse_tenant_config({"servers": servers})


def gateway(cfg: TenantConfig, withheld: dict[str, Any] | None = None) -> tuple[Gateway, OfferingUpstream]:
    items = []
    for server in ("crm", "vault"):
        items += publish_items("prompt", [(server, {"name": "brief", "description": f"{server} brief"})])
        items += publish_items("resource", [(server, {"uri": "mem://note", "name": "note"})])
        items += publish_items("template", [(server, {"uriTemplate": "mem://{id}", "name": "byid"})])
    catalog = replace(catalog_from_tools("t", []), offerings=tuple(items), withheld=withheld or {})
    store = SqliteStore(":memory:")
    store.publish(catalog, expected_current=None)
    upstream = OfferingUpstream()
    return Gateway(store, StaticConfigSource({"t": cfg}), upstream, catalog_ttl=0.0), upstream


async def outcome(run: Any) -> tuple[str, str]:
    """What a caller learns from a lookup: the error kind and message (or the result)."""
    try:
        return "ok", repr(await run)
    except FoldgateError as exc:
        return type(exc).__name__, exc.message


def test_listings_are_namespaced_and_scoped() -> None:
    gw, _ = gateway(config())
    everything = gw.offerings("t", "direct")
    assert [p["name"] for p in everything.listing("prompt")] == ["crm__brief", "vault__brief"]
    assert [r["uri"] for r in everything.listing("resource")] == [
        "foldgate://crm/mem%3A%2F%2Fnote",
        "foldgate://vault/mem%3A%2F%2Fnote",
    ]
    scoped = gw.offerings(Principal("t", servers=frozenset({"crm"}), key="tok"), "direct")
    assert [p["name"] for p in scoped.listing("prompt")] == ["crm__brief"]
    assert gw.offerings("t", "call").empty  # the search surface serves tools only


@pytest.mark.parametrize(
    ("cfg", "principal"),
    [
        (config(vault={"quarantined": True}), Principal("t")),
        (config(vault={"enabled": False}), Principal("t")),
        (config(), Principal("t", servers=frozenset({"crm"}), key="tok")),
    ],
    ids=["quarantined", "disabled", "out-of-scope"],
)
async def test_an_invisible_server_answers_like_a_nonexistent_one(
    cfg: TenantConfig, principal: Principal
) -> None:
    gw, upstream = gateway(cfg)
    offered = gw.offerings(principal, "direct")
    assert [i["name"] for i in offered.listing("prompt")] == ["crm__brief"]
    assert all(
        "vault" not in r.get("uri", r.get("uriTemplate"))
        for r in offered.listing("resource") + offered.listing("template")
    )

    hidden = await outcome(offered.read_resource(upstream, "foldgate://vault/mem%3A%2F%2Fnote"))
    missing = await outcome(offered.read_resource(upstream, "foldgate://nosuch/mem%3A%2F%2Fnote"))
    assert hidden[0] == missing[0] == "NotFoundError"
    assert hidden[1].replace("vault", "X") == missing[1].replace("nosuch", "X")

    hidden = await outcome(offered.get_prompt(upstream, "vault__brief", None))
    missing = await outcome(offered.get_prompt(upstream, "nosuch__brief", None))
    assert hidden[0] == missing[0] == "NotFoundError"
    assert hidden[1].replace("vault", "X") == missing[1].replace("nosuch", "X")

    ref = {"type": "ref/prompt", "name": "vault__brief"}
    assert await offered.complete(upstream, ref, {"name": "a", "value": "x"}, None) == {
        "completion": {"values": []}
    }
    ref = {"type": "ref/resource", "uri": "foldgate://vault/mem%3A%2F%2F{id}"}
    assert await offered.complete(upstream, ref, {"name": "id", "value": "x"}, None) == {
        "completion": {"values": []}
    }
    assert upstream.requests == []  # nothing reached the invisible server


async def test_reads_map_back_to_the_upstream_and_forward_again() -> None:
    gw, upstream = gateway(config())
    offered = gw.offerings("t", "direct")
    result = await offered.read_resource(upstream, "foldgate://vault/mem%3A%2F%2F42")  # expanded template
    assert upstream.requests[-1] == ("vault", "resources/read", {"uri": "mem://42"})
    assert result["contents"][0]["uri"] == "foldgate://vault/mem%3A%2F%2F42"

    prompt = await offered.get_prompt(upstream, "crm__brief", {"topic": "x"})
    assert upstream.requests[-1] == ("crm", "prompts/get", {"name": "brief", "arguments": {"topic": "x"}})
    contents = [m["content"] for m in prompt["messages"]]
    assert contents[0]["uri"] == "foldgate://crm/mem%3A%2F%2Fnote"
    assert contents[1]["resource"]["uri"] == "foldgate://crm/mem%3A%2F%2Fdoc"

    ref = {"type": "ref/resource", "uri": "foldgate://crm/mem%3A%2F%2F{id}"}
    done = await offered.complete(upstream, ref, {"name": "id", "value": "4"}, None)
    assert done == {"completion": {"values": ["crm-mem://{id}"]}}
    failing = await offered.complete(upstream, ref, {"name": "id", "value": "boom"}, None)
    assert failing == {"completion": {"values": []}}


@pytest.mark.parametrize("state", ["changed", "rejected"])
async def test_a_changed_or_rejected_prompt_keeps_its_listing_but_is_not_fetched(state: str) -> None:
    held = {"crm#prompt:brief": {"state": state, "server": "crm", "kind": "prompt", "hash": "h2"}}
    gw, upstream = gateway(config(), withheld=held)
    offered = gw.offerings("t", "direct")
    assert "crm__brief" in [p["name"] for p in offered.listing("prompt")]
    kind, message = await outcome(offered.get_prompt(upstream, "crm__brief", None))
    assert kind == "PromptChangedError"
    assert "operator" in message
    assert upstream.requests == []


def test_list_hints_are_the_cache_bound_and_private() -> None:
    gw, _ = gateway(config())
    gw.catalogs.ttl = 7.5
    assert gw.list_hint() == (7500, "private")
