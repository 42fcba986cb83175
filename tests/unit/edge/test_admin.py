"""The admin API checks the operator credential first, on every route: an anonymous caller learns
nothing from body validation, and the OpenAPI document and docs page stay behind the credential. Wrong
credentials are limited per client address like the console's sign-in, and the key is compared as
digests of equal length."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.edge.admin import admin_router
from foldgate.edge.app import create_app
from foldgate.edge.console.login_limit import LoginLimit
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

OPERATOR = "operator-key-for-tests"
OP = {"authorization": f"Bearer {OPERATOR}"}
ANONYMOUS: list[dict[str, str]] = [{}, {"authorization": "Bearer wrong"}, {"authorization": OPERATOR}]


async def admin_clients(
    secret: bytes | None, limit: LoginLimit | None = None, addresses: tuple[str, ...] = ("127.0.0.1",)
) -> AsyncIterator[list[httpx2.AsyncClient]]:
    """Clients of one admin API, one per client address (``operator_limit`` as given)."""
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    gateway = Gateway(store, StaticConfigSource({"default": demo_config()}), RecordingUpstream())
    limited = {"operator_limit": limit} if limit is not None else {}
    app = create_app(gateway, admin=admin_router(gateway, operator_secret=secret, **limited))
    clients = [
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app, client=(a, 50000)), base_url="http://testserver"
        )
        for a in addresses
    ]
    try:
        yield clients
    finally:
        for c in clients:
            await c.aclose()


async def admin_client(secret: bytes | None) -> AsyncIterator[httpx2.AsyncClient]:
    async for (client,) in admin_clients(secret):
        yield client


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async for c in admin_client(OPERATOR.encode()):
        yield c


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"tenant": "../etc", "extra": 1}', b"[]", b'{"tools": []}'],
)
@pytest.mark.parametrize("path", ["/api/v1/reindex", "/api/v1/approvals", "/api/v1/approvals/reject"])
async def test_malformed_bodies_from_anonymous_callers_get_401_not_422(
    client: httpx2.AsyncClient, path: str, body: bytes
) -> None:
    for headers in ANONYMOUS:
        r = await client.post(path, content=body, headers=headers | {"content-type": "application/json"})
        assert r.status_code == 401, r.text
        assert r.json() == {"detail": "operator credential required"}
        assert r.headers["www-authenticate"] == "Bearer"
    # With the credential, the same body is validated as before.
    r = await client.post(path, content=body, headers=OP | {"content-type": "application/json"})
    assert r.status_code == 422


@pytest.mark.parametrize("path", ["/api/v1/openapi.json", "/api/v1/docs", "/api/v1/status?tenant=default"])
async def test_openapi_and_docs_need_the_credential(client: httpx2.AsyncClient, path: str) -> None:
    for headers in ANONYMOUS:
        assert (await client.get(path, headers=headers)).status_code == 401
    assert (await client.get(path, headers=OP)).status_code == 200


async def test_the_openapi_document_lists_the_admin_routes_only(client: httpx2.AsyncClient) -> None:
    spec = (await client.get("/api/v1/openapi.json", headers=OP)).json()
    assert {"/api/v1/status", "/api/v1/tools", "/api/v1/approvals", "/api/v1/reindex"} <= set(spec["paths"])
    assert not any(p.startswith("/mcp") or p.endswith(("openapi.json", "/docs")) for p in spec["paths"])
    page = await client.get("/api/v1/docs", headers=OP)
    assert "/api/v1/openapi.json" in page.text


async def test_the_old_unauthenticated_paths_are_gone(client: httpx2.AsyncClient) -> None:
    for path in ("/openapi.json", "/docs", "/redoc"):
        assert (await client.get(path)).status_code == 404


async def test_without_an_operator_credential_configured_everything_is_503() -> None:
    async for c in admin_client(None):
        for path in ("/api/v1/openapi.json", "/api/v1/status?tenant=default"):
            assert (await c.get(path, headers=OP)).status_code == 503
        r = await c.post("/api/v1/reindex", content=b"{bad", headers={"content-type": "application/json"})
        assert r.status_code == 503


async def test_wrong_credentials_are_limited_per_address_with_429_and_retry_after_right_ones_are_not() -> (
    None
):
    async for c, other in admin_clients(OPERATOR.encode(), LoginLimit(2, 100), ("192.0.2.1", "192.0.2.2")):
        for _ in range(4):
            assert (await c.get("/api/v1/status?tenant=default", headers=OP)).status_code == 200
        for headers in ANONYMOUS[:2]:
            assert (await c.get("/api/v1/status?tenant=default", headers=headers)).status_code == 401
        # Over the limit even the right key is not checked (a guesser learns nothing from a hit), and a
        # forwarded-for header the caller writes does not make it another address.
        for headers in (OP, OP | {"x-forwarded-for": "203.0.113.9"}):
            r = await c.get("/api/v1/status?tenant=default", headers=headers)
            assert r.status_code == 429
            assert r.headers["retry-after"] == "30"
            assert r.json() == {"detail": "too many wrong operator credentials; retry in 30 seconds"}
        # Refused before the body is read, like the 401.
        r = await c.post(
            "/api/v1/reindex", content=b"{bad", headers=OP | {"content-type": "application/json"}
        )
        assert r.status_code == 429
        # Another address keeps its own attempts.
        assert (await other.get("/api/v1/status?tenant=default", headers=OP)).status_code == 200


async def test_the_key_is_compared_as_digests_of_equal_length(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[int, int]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    async for c in admin_client(OPERATOR.encode()):
        for presented in ("x", "wrong" * 40, OPERATOR[:-1], OPERATOR):
            await c.get("/api/v1/status?tenant=default", headers={"authorization": f"Bearer {presented}"})
    # Whatever was presented, the comparison never sees the key's length or the guess's.
    assert compared == [(32, 32)] * 4
