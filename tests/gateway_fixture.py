"""An in-process gateway over a fixed catalog, with an upstream double that records calls.

For tests of the HTTP/MCP layer without sockets; real upstreams are covered by integration and e2e.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx2

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.dev.corpus import load_catalog
from foldgate.edge.app import create_app
from foldgate.errors import UpstreamError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.param_headers import HeaderParam
from foldgate.model.tool import Tool
from foldgate.serve.gateway import Gateway
from foldgate.serve.paging import ResultPager
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.results.sqlite import SqliteResultStore
from foldgate.upstream.client import UpstreamClient

DEMO_CATALOG = Path(__file__).resolve().parents[1] / "demo" / "catalog.jsonl"


class RecordingUpstream(UpstreamClient):
    """Answers calls with an echo and records them; ``fail`` makes a tool's calls raise."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.fail: dict[str, UpstreamError] = {}
        # The x-mcp-header arguments each call was told to mirror in Mcp-Param-* headers, by tool.
        self.header_params: dict[str, tuple[HeaderParam, ...]] = {}

    async def call_tool(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        *,
        annotations: Mapping[str, Any] | None = None,
        header_params: tuple[HeaderParam, ...] = (),
    ) -> dict[str, Any]:
        self.calls.append((server.name, name, arguments))
        if header_params:
            self.header_params[name] = header_params
        if name in self.fail:
            raise self.fail[name]
        text = json.dumps({"echo": arguments})
        return {"content": [{"type": "text", "text": text}], "isError": False}


def demo_config(**overrides: Any) -> TenantConfig:
    servers = [{"name": s, "url": f"http://127.0.0.1:9/{s}/mcp"} for s in ("crm", "tickets")]
    return parse_tenant_config({"servers": servers, **overrides})


def demo_tools() -> list[Tool]:
    return load_catalog(DEMO_CATALOG)


@contextlib.asynccontextmanager
async def gateway_client(
    config: TenantConfig | None = None, tools: list[Tool] | None = None, **app_kw: Any
) -> AsyncIterator[tuple[httpx2.AsyncClient, Gateway, RecordingUpstream, StaticConfigSource]]:
    """An httpx2 client bound to the app (lifespan entered), plus its gateway, upstream and configs."""
    store = SqliteStore(":memory:")
    store.publish(
        catalog_from_tools("default", tools if tools is not None else demo_tools()), expected_current=None
    )
    configs = StaticConfigSource({"default": config or demo_config()})
    upstream = RecordingUpstream()
    results = ResultPager(SqliteResultStore(":memory:"))
    gateway = Gateway(store, configs, upstream, catalog_ttl=0.0, results=results)
    app = create_app(gateway, **app_kw)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client, gateway, upstream, configs
