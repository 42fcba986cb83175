"""An in-process gateway with the console mounted: demo catalog, sqlite stores in memory, a token
authority, a recording reindexer, and an httpx client on loopback (so the session cookie is not Secure)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from foldgate.auth.authority import TokenAuthority
from foldgate.config.source import ConfigSource, StaticConfigSource
from foldgate.edge.app import create_app
from foldgate.edge.console.routes import ConsoleDeps, console_router
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.agent_token import TokenHasher
from foldgate.serve.gateway import Gateway
from foldgate.store.approvals.sqlite import SqliteApprovalStore
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

OPERATOR_KEY = "op-" + "k" * 40
BASE = "http://127.0.0.1:8080"


@dataclass
class Console:
    """The client (not signed in), the gateway and what the console was wired with."""

    client: httpx2.AsyncClient
    gateway: Gateway
    deps: ConsoleDeps
    tokens: TokenAuthority
    store: SqliteStore
    reindexed: list[str] = field(default_factory=list)

    async def login(self) -> str:
        """Sign in with the operator key; returns the CSRF token of the session's pages."""
        r = await self.client.post("/console/login", data={"operator_key": OPERATOR_KEY})
        assert r.status_code == 303, r.text
        return await self.csrf("/console/fleet")

    async def csrf(self, path: str) -> str:
        """The CSRF token a page embeds."""
        page = await self.client.get(path)
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found is not None, page.text[:500]
        return found.group(1)


@pytest.fixture
def make_console() -> Callable[..., Any]:
    """Build a console; ``connector``, ``auth_states``, ``tools``, ``config`` (or a whole ``configs``
    source) and any other ConsoleDeps field as the test needs."""

    def build(**deps_kw: Any) -> Any:
        tools = deps_kw.pop("tools", None) or demo_tools()
        config = deps_kw.pop("config", None) or demo_config()
        configs_given: ConfigSource | None = deps_kw.pop("configs", None)

        async def opened() -> AsyncIterator[Console]:
            store = SqliteStore(":memory:")
            store.publish(catalog_from_tools("default", tools), expected_current=None)
            configs = configs_given or StaticConfigSource({"default": config})
            gateway = Gateway(store, configs, RecordingUpstream(), catalog_ttl=0.0)
            tokens = TokenAuthority(SqliteTokenStore(":memory:"), TokenHasher(b"t" * 32))
            reindexed: list[str] = []

            async def reindex(tenant: str) -> dict[str, Any]:
                reindexed.append(tenant)
                return {"reindex": "done", "changed": False}

            deps = ConsoleDeps(
                gateway,
                OPERATOR_KEY.encode(),
                approvals=SqliteApprovalStore(":memory:"),
                reindex=reindex,
                tokens=tokens,
                **deps_kw,
            )
            app = create_app(gateway, console=console_router(deps))
            async with app.router.lifespan_context(app):
                transport = httpx2.ASGITransport(app=app)
                async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
                    yield Console(client, gateway, deps, tokens, store, reindexed)

        return opened()

    return build
