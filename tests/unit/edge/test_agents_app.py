"""The agents-only app (Starlette, no FastAPI at init) answers every path as the full app does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from fastapi import APIRouter
from starlette.applications import Starlette

from foldgate.config.source import StaticConfigSource
from foldgate.edge.access import Access
from foldgate.edge.app import create_agents_app, create_app
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = {**H, "mcp-protocol-version": "2025-11-25"}


def _gateway() -> Gateway:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    configs = StaticConfigSource({"default": demo_config()})
    return Gateway(store, configs, RecordingUpstream(), catalog_ttl=0.0)


def _extra() -> APIRouter:
    router = APIRouter()

    @router.get("/oauth/ping")
    def ping(n: int) -> dict[str, int]:
        return {"n": n}

    return router


@asynccontextmanager
async def _client(agents_only: bool) -> AsyncIterator[httpx2.AsyncClient]:
    gateway = _gateway()
    access = Access(default_tenant="default", allow_tenant_header=True)
    app: Starlette
    if agents_only:
        app = create_agents_app(gateway, access=access, lazy={"/oauth": _extra})
    else:
        app = full = create_app(gateway, access=access)
        full.include_router(_extra())
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/healthz", None),
        ("GET", "/nowhere", None),
        ("POST", "/healthz", None),
        ("GET", "/.well-known/oauth-protected-resource/mcp/all", None),
        ("GET", "/oauth/ping?n=3", None),
        ("GET", "/oauth/ping?n=x", None),
        ("GET", "/oauth/elsewhere", None),
        ("GET", "/mcp/all", None),
        ("POST", "/mcp/all", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'),
    ],
)
async def test_the_agents_app_answers_like_the_full_app(method: str, path: str, body: bytes | None) -> None:
    answers = []
    for agents_only in (False, True):
        async with _client(agents_only) as client:
            r = await client.request(method, path, content=body, headers=LEGACY)
            answers.append((r.status_code, r.headers.get("content-type"), r.content))
    assert answers[0] == answers[1]


async def test_the_lazy_routes_load_on_their_first_request() -> None:
    async with _client(True) as client:
        r = await client.get("/oauth/ping?n=2")
    assert r.json() == {"n": 2}
