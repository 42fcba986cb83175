"""A bare server's prompts and resources as a caller sees them: published under their upstream names
and URIs, and every read, prompt and completion routed to the server that listed them, while a
prefixed server beside it keeps its ``foldgate://`` URIs; a URI two bare servers share stays prefixed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import NotFoundError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.offerings import publish_items
from foldgate.serve.gateway import Gateway
from foldgate.serve.offerings import Offered, _matches
from foldgate.store.catalog.sqlite import SqliteStore
from tests.unit.serve.test_offerings import OfferingUpstream

BARE = {"conf", "more"}


def setup() -> tuple[Offered, OfferingUpstream]:
    servers = [
        {
            "name": name,
            "url": f"http://127.0.0.1:9/{name}/mcp",
            **({"publish": "bare"} if name in BARE else {}),
        }
        for name in ("conf", "more", "crm")
    ]
    config = parse_tenant_config({"servers": servers})
    items = []
    for kind, entries in (
        ("prompt", [("conf", {"name": "test_simple_prompt"}), ("crm", {"name": "brief"})]),
        (
            "resource",
            [
                ("conf", {"uri": "test://static-text", "name": "t"}),
                ("conf", {"uri": "mem://shared", "name": "s"}),
                ("more", {"uri": "mem://shared", "name": "s"}),
                ("crm", {"uri": "test://static-text", "name": "t"}),
            ],
        ),
        ("template", [("conf", {"uriTemplate": "test://template/{id}/data", "name": "tpl"}),
                      ("crm", {"uriTemplate": "mem://{id}", "name": "byid"})]),
    ):  # fmt: skip
        items += publish_items(kind, entries, bare=config.bare_servers)  # type: ignore[arg-type]
    catalog = replace(catalog_from_tools("t", []), offerings=tuple(items))
    store = SqliteStore(":memory:")
    store.publish(catalog, expected_current=None)
    upstream = OfferingUpstream()
    gateway = Gateway(store, StaticConfigSource({"t": config}), upstream, catalog_ttl=0.0)
    return gateway.offerings("t", "direct"), upstream


def test_bare_entries_keep_their_identity_and_shared_uris_stay_prefixed() -> None:
    offered, _ = setup()
    assert [p["name"] for p in offered.listing("prompt")] == ["test_simple_prompt", "crm__brief"]
    assert [r["uri"] for r in offered.listing("resource")] == [
        "test://static-text",
        "foldgate://conf/mem%3A%2F%2Fshared",
        "foldgate://more/mem%3A%2F%2Fshared",
        "foldgate://crm/test%3A%2F%2Fstatic-text",
    ]
    assert [t["uriTemplate"] for t in offered.listing("template")] == [
        "test://template/{id}/data",
        "foldgate://crm/mem%3A%2F%2F{id}",
    ]


async def test_reads_route_to_the_server_that_published_the_uri() -> None:
    offered, upstream = setup()
    listed = await offered.read_resource(upstream, "test://static-text")
    expanded = await offered.read_resource(upstream, "test://template/123/data")
    prefixed = await offered.read_resource(upstream, "foldgate://crm/test%3A%2F%2Fstatic-text")
    shared = await offered.read_resource(upstream, "foldgate://more/mem%3A%2F%2Fshared")
    assert [(s, p["uri"]) for s, _, p in upstream.requests] == [
        ("conf", "test://static-text"),
        ("conf", "test://template/123/data"),
        ("crm", "test://static-text"),
        ("more", "mem://shared"),
    ]
    # Contents come back under the URI the caller reads them by.
    assert listed["contents"][0]["uri"] == "test://static-text"
    assert expanded["contents"][0]["uri"] == "test://template/123/data"
    assert prefixed["contents"][0]["uri"] == "foldgate://crm/test%3A%2F%2Fstatic-text"
    assert shared["contents"][0]["uri"] == "foldgate://more/mem%3A%2F%2Fshared"


@pytest.mark.parametrize(
    "uri", ["mem://shared", "test://template/1/2/data", "test://other", "mem://7", "foldgate://ghost/x"]
)
async def test_a_uri_nobody_published_bare_is_not_found(uri: str) -> None:
    offered, upstream = setup()
    with pytest.raises(NotFoundError) as info:
        await offered.read_resource(upstream, uri)
    assert info.value.details == {"uri": uri}
    assert upstream.requests == []


async def test_prompts_and_completions_of_a_bare_server_route_by_their_own_names() -> None:
    offered, upstream = setup()
    await offered.get_prompt(upstream, "test_simple_prompt", None)
    done = await offered.complete(
        upstream,
        {"type": "ref/resource", "uri": "test://template/{id}/data"},
        {"name": "id", "value": "1"},
        None,
    )
    assert done["completion"]["values"] == ["conf-test://template/{id}/data"]
    assert [(s, m) for s, m, _ in upstream.requests] == [
        ("conf", "prompts/get"),
        ("conf", "completion/complete"),
    ]
    # Resource links in a bare server's prompt keep their URIs (the upstream's own, published bare).
    result = await offered.get_prompt(upstream, "test_simple_prompt", None)
    assert result["messages"][0]["content"]["uri"] == "mem://note"


def test_template_matching_is_literal_outside_expressions_and_linear_on_hostile_templates() -> None:
    assert _matches("test://template/{id}/data", "test://template/123/data")
    assert not _matches("test://template/{id}/data", "test://template/1/2/data")
    assert _matches("file:///{+path}", "file:///a/b/c")
    assert _matches("x://s{?q,r}", "x://s?q=1&r=2")
    assert _matches("x://s{?q}", "x://s")
    assert not _matches("x://a.b", "x://aXb")  # a literal dot is a dot, not a regex wildcard
    # Many wide expressions and a literal that never comes: a backtracking matcher takes ages here.
    assert not _matches("{+a}{+b}{+c}{+d}{+e}{+f}x", "a" * 8000)
