"""The console given to the app as a factory is built on its first request, once, and then answers
exactly as the eagerly included console does (same routes, same validation error shape)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from fastapi import APIRouter

from foldgate.edge.app import create_app
from foldgate.edge.console.routes import ConsoleDeps, console_router
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, StaticConfigSource, demo_config


@pytest.fixture
async def lazy_app() -> AsyncIterator[tuple[httpx2.AsyncClient, list[int]]]:
    gateway = Gateway(
        SqliteStore(":memory:"), StaticConfigSource({"default": demo_config()}), RecordingUpstream()
    )
    builds: list[int] = []

    def factory() -> APIRouter:
        builds.append(1)
        return console_router(ConsoleDeps(gateway, b"k" * 32))

    app = create_app(gateway, console=factory)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client, builds


async def test_nothing_is_built_until_the_first_console_request(lazy_app: Any) -> None:
    client, builds = lazy_app
    assert (await client.get("/healthz")).status_code == 200
    assert builds == []
    login = await client.get("/console/login")
    assert login.status_code == 200
    assert "content-security-policy" in login.headers
    assert builds == [1]


async def test_the_built_console_is_reused_and_routes_as_the_eager_one(lazy_app: Any) -> None:
    client, builds = lazy_app
    home = await client.get("/console")
    assert home.status_code in (303, 307)  # to the fleet page, or the login form first
    assert (await client.get("/console/static/console.css")).status_code == 200
    assert (await client.get("/console/static/../../etc/passwd")).status_code == 404
    assert (await client.get("/console/fleet")).status_code in (303, 307)  # no session: to the login
    assert builds == [1]
