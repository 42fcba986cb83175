"""The indexer publishes a ``publish: bare`` server's tools, prompts and resources under their own names
and URIs, and a call by the bare name reaches that server with the upstream's name; a name another
server also claims falls back to the prefixed form, and a prefixed server beside it is unchanged."""

from __future__ import annotations

from typing import Any, ClassVar

import httpx2

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.edge.app import create_app
from foldgate.index.indexer import Indexer
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import Listing, Offerings
from tests.gateway_fixture import RecordingUpstream

H = {"accept": "application/json", "content-type": "application/json", "mcp-protocol-version": "2025-11-25"}


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": f"{name} it.", "inputSchema": {"type": "object"}}


class Fleet(RecordingUpstream):
    """Two bare servers and a prefixed one, listing overlapping names."""

    LISTS: ClassVar[dict[str, list[str]]] = {
        "conf": ["test_simple_text", "search", "git__status", "read_cache"],
        "more": ["search", "more_only"],
        "git": ["status", "search"],
    }

    async def list_tools(self, server: ServerConfig) -> Listing:
        return Listing(tools=[tool(n) for n in self.LISTS[server.name]])

    async def list_offerings(self, server: ServerConfig) -> Offerings:
        if server.name != "conf":
            return Offerings()
        return Offerings(
            items={
                "prompt": [{"name": "test_simple_prompt"}],
                "resource": [{"uri": "test://static-text", "name": "t"}],
            }
        )


def config() -> TenantConfig:
    servers: list[dict[str, Any]] = [
        {
            "name": name,
            "url": f"http://127.0.0.1:9/{name}/mcp",
            **({"publish": "bare"} if name != "git" else {}),
        }
        for name in ("conf", "more", "git")
    ]
    return parse_tenant_config({"servers": servers})


async def test_bare_names_are_published_and_calls_route_back_by_them() -> None:
    store, upstream = SqliteStore(":memory:"), Fleet()
    await Indexer(store, upstream).index_tenant("default", config())
    catalog = store.load_current("default")
    assert catalog is not None
    names = {(t.tool.server, t.tool.name): (t.published, t.renamed) for t in catalog.tools}
    assert names[("conf", "test_simple_text")] == ("test_simple_text", None)
    assert names[("more", "more_only")] == ("more_only", None)
    assert names[("git", "status")] == ("git__status", None)
    assert names[("git", "search")] == ("git__search", None)
    # Claimed twice, claimed by a prefixed name, or foldgate's own: prefixed, saying why.
    for pair in (("conf", "search"), ("more", "search"), ("conf", "git__status"), ("conf", "read_cache")):
        published, renamed = names[pair]
        assert published.startswith(f"{pair[0]}__"), pair
        assert str(renamed).startswith("bare name refused"), pair
    assert sorted(i.published for i in catalog.offerings) == ["test://static-text", "test_simple_prompt"]

    gateway = Gateway(store, StaticConfigSource({"default": config()}), upstream, catalog_ttl=0.0)
    app = create_app(gateway)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
            listed = await client.post(
                "/mcp/all", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=H
            )
            assert "test_simple_text" in [t["name"] for t in listed.json()["result"]["tools"]]
            call = {"name": "test_simple_text", "arguments": {}}
            r = await client.post(
                "/mcp/all",
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
                headers=H,
            )
            assert r.json()["result"]["isError"] is False
            refused = {"name": "conf__read_cache", "arguments": {}}
            await client.post(
                "/mcp/all",
                json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": refused},
                headers=H,
            )
    assert upstream.calls == [("conf", "test_simple_text", {}), ("conf", "read_cache", {})]


def test_the_scan_reads_sentence_vectors_only_with_the_local_search_encoder() -> None:
    # Pinned: the indexer lends the poisoning scan the encoder it already has open for search (and
    # no other): the semantic scorer's vector head was trained on the local model's vectors.
    import functools

    from foldgate.guard.poison_scan import scan_findings
    from foldgate.index.indexer import _with_vectors
    from foldgate.search.embed import NoEmbedder

    class Local:
        name = "local"
        model_id = "all-MiniLM-L6-v2-int8@x"
        dim = 384

        def encode(self, text: str) -> list[float]:
            return [0.0] * 384

    local = Local()
    lent = _with_vectors(scan_findings, local)  # type: ignore[arg-type]
    assert isinstance(lent, functools.partial)
    assert lent.keywords == {"encoder": local}
    assert _with_vectors(scan_findings, NoEmbedder()) is scan_findings
    assert _with_vectors(scan_findings, None) is scan_findings
    assert _with_vectors(None, local) is None  # type: ignore[arg-type]
