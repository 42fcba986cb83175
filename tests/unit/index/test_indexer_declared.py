"""A ``per_user`` server's declared tool list (``auth: {kind: per_user, tools: [...]}``) in the indexer.

Pins: with no shared grant (the upstream refuses the shared subject with UpstreamConsentError) the
declared tools are published and the server is marked ``declared``; a real listing replaces them once a
shared grant exists, and the mark goes even when the real tools equal the declared ones; other failures,
and servers that declare nothing or are not per_user, keep the usual "last good tools, unhealthy" rule;
a declared entry the MCP types refuse is skipped with a reason, as a fetched one would be.
"""

from __future__ import annotations

from typing import Any

from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.errors import UpstreamConsentError, UpstreamError
from foldgate.index.indexer import Indexer
from foldgate.model.catalog import CatalogVersion
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import Listing, UpstreamClient

DECLARED = [
    {"name": "whoami", "description": "Who the upstream thinks you are.", "inputSchema": {"type": "object"}},
    {
        "name": "read",
        "description": "Read a file.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        "annotations": {"readOnlyHint": True},
    },
]


def config(auth: dict[str, Any]) -> TenantConfig:
    return parse_tenant_config(
        {"servers": [{"name": "files", "url": "https://files.example/mcp", "auth": auth}]}
    )


class Upstream(UpstreamClient):
    """Lists ``tools`` once ``shared`` is connected; refuses for consent before."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = False
        self.failure: UpstreamError | None = None
        self.tools: list[dict[str, Any]] = [{"name": "whoami", "inputSchema": {"type": "object"}}]

    async def list_tools(self, server: ServerConfig) -> Listing:
        if self.failure is not None:
            raise self.failure
        if not self.shared:
            raise UpstreamConsentError(f"{server.name}: not connected; an operator connects it")
        return Listing(tools=[dict(t) for t in self.tools])

    async def list_offerings(self, server: ServerConfig) -> Any:
        raise UpstreamError(f"{server.name}: no offerings here")


async def run(upstream: Upstream, cfg: TenantConfig, store: SqliteStore) -> CatalogVersion:
    await Indexer(store, upstream).index_tenant("t", cfg)
    catalog = store.load_current("t")
    assert catalog is not None
    return catalog


async def test_declared_tools_are_published_until_a_shared_grant_lists_the_real_ones() -> None:
    store, upstream = SqliteStore(":memory:"), Upstream()
    cfg = config({"kind": "per_user", "tools": DECLARED})
    first = await run(upstream, cfg, store)
    assert [t.tool.name for t in first.tools] == ["whoami", "read"]
    status = first.servers["files"]
    assert status.healthy
    assert status.declared
    assert first.tools[1].tool.input_schema["required"] == ["path"]

    upstream.shared = True
    upstream.tools = [
        {"name": "whoami", "inputSchema": {"type": "object"}},
        {"name": "write", "inputSchema": {"type": "object"}},
    ]
    second = await run(upstream, cfg, store)
    assert [t.tool.name for t in second.tools] == ["whoami", "write"]
    assert not second.servers["files"].declared


async def test_a_real_listing_equal_to_the_declaration_still_drops_the_mark() -> None:
    store, upstream = SqliteStore(":memory:"), Upstream()
    cfg = config({"kind": "per_user", "tools": DECLARED})
    first = await run(upstream, cfg, store)
    assert first.servers["files"].declared
    upstream.shared = True
    upstream.tools = [dict(d) for d in DECLARED]  # what the operator declared is exactly the truth
    second = await run(upstream, cfg, store)
    assert second.version != first.version
    assert not second.servers["files"].declared


async def test_other_failures_and_undeclared_servers_keep_the_usual_rule() -> None:
    store, upstream = SqliteStore(":memory:"), Upstream()
    undeclared = await run(upstream, config({"kind": "per_user"}), SqliteStore(":memory:"))
    assert undeclared.tools == ()
    assert not undeclared.servers["files"].healthy
    assert not undeclared.servers["files"].declared

    upstream.failure = UpstreamError("files: connection refused")  # not a consent refusal
    down = await run(upstream, config({"kind": "per_user", "tools": DECLARED}), store)
    assert down.tools == ()
    assert not down.servers["files"].healthy


async def test_a_declared_entry_the_mcp_types_refuse_is_skipped_with_a_reason() -> None:
    store, upstream = SqliteStore(":memory:"), Upstream()
    odd = {"name": "odd", "inputSchema": {"type": "object", "properties": "not an object"}}
    catalog = await run(upstream, config({"kind": "per_user", "tools": [DECLARED[0], odd]}), store)
    assert [t.tool.name for t in catalog.tools] == ["whoami"]
    assert [name for name, _ in catalog.servers["files"].skipped] == ["odd"]
