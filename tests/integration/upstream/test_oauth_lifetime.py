"""Upstream OAuth under real-world token lifetimes: oidc-provider minting 45-second access tokens for the
SDK's protected resource server, foldgate's real upstream client with a change listener that lists the
server again (as local mode's reindex does).

Pins: an idle gateway with short-lived tokens makes no upstream requests (no refresh, no re-list, no
new session); a refreshed token is sent on the session already open (no new session, no new listen
stream, no re-list); the margin scales with the token's lifetime.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller, calling_as
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.consent import finish_consent, start_consent
from foldgate.upstream.oauth.provider import TokenProvider
from tests.oauth_provider import consent
from tests.upstream_oauth import REDIRECT, Protected, grant_store, oauth_context, protected_upstream

TENANT = "acme"
TTL = 45  # seconds: shorter than the old fixed 60 s refresh margin
IDLE_SECONDS = 3.0  # how long the idle gateway is watched for any upstream activity


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    with protected_upstream(tmp_path_factory.mktemp("short-lived"), access_ttl=TTL) as running:
        yield running


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    with grant_store(tmp_path) as grants:
        yield grants


def files(url: str) -> ServerConfig:
    return parse_tenant_config(
        {"servers": [{"name": "files", "url": url, "auth": {"kind": "oauth"}}]}
    ).servers[0]


class Relister:
    """The change listener of local mode: every ``list_changed`` (or listen acknowledgement) lists the
    server again. Counts what it did and lets a test wait for the next one."""

    def __init__(self, server: ServerConfig) -> None:
        self.server = server
        self.client: UpstreamClient | None = None
        self.told = 0
        self.listed = 0
        self.changed = asyncio.Event()
        self.done = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()

    def __call__(self, name: str) -> None:
        self.told += 1
        self.changed.set()
        task = asyncio.get_running_loop().create_task(self._relist())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _relist(self) -> None:
        assert self.client is not None
        try:
            with calling_as(TENANT):
                await self.client.list_tools(self.server)
            self.listed += 1
        finally:
            self.done.set()

    async def next_change(self, seconds: float) -> bool:
        """Whether the listener is told of another change within ``seconds``."""
        self.changed.clear()
        try:
            await asyncio.wait_for(self.changed.wait(), seconds)
        except TimeoutError:
            return False
        return True


async def connected(upstream: Protected, store: SqliteGrantStore, server: ServerConfig) -> TokenProvider:
    ctx = oauth_context(store)
    url = await start_consent(ctx, TENANT, server, SHARED_SUBJECT)
    answer = await consent(url, REDIRECT)
    await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
    return TokenProvider(ctx)


async def whoami(client: UpstreamClient, server: ServerConfig) -> dict[str, Any]:
    with calling_as(TENANT):
        result = await client.call_tool(server, "whoami", {})
    assert not result.get("isError"), result
    answer: dict[str, Any] = json.loads(result["content"][0]["text"])
    return answer


async def test_an_idle_gateway_with_45_second_tokens_makes_no_upstream_requests(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    server = files(upstream.url)
    provider = await connected(upstream, store, server)
    relister = Relister(server)
    client = relister.client = UpstreamClient(allow_private=True, auth=provider, on_change=relister)
    try:
        with calling_as(TENANT):
            listing = await client.list_tools(server)
        assert {t["name"] for t in listing.tools} == {"whoami", "echo"}
        # The first listen stream is acknowledged: local mode lists once more (the stream has no replay).
        await asyncio.wait_for(relister.done.wait(), 20)
        opened, refreshes, told = client._pool.opened, provider.refreshes, relister.told
        # Idle from here on: no change notification, so no re-list, refresh or session.
        assert not await relister.next_change(IDLE_SECONDS)
        assert (relister.told, relister.listed) == (told, 1)
        assert provider.refreshes == refreshes == 0  # a 45 s token is fresh for ~34 s
        assert client._pool.opened == opened == 1
        assert client._pool.live() == 1
    finally:
        await client.aclose()


async def test_a_refreshed_token_is_sent_on_the_session_already_open(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    server = files(upstream.url)
    provider = await connected(upstream, store, server)
    relister = Relister(server)
    client = relister.client = UpstreamClient(allow_private=True, auth=provider, on_change=relister)
    try:
        assert (await whoami(client, server))["subject"] == "alice"
        await asyncio.wait_for(relister.done.wait(), 20)  # the listen stream is up and acknowledged
        grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
        assert grant is not None
        # A 45 s token 40 s old is within its margin: the next request refreshes first.
        now = time.time()
        assert store.put_grant(replace(grant, issued_at=now - 40, expires_at=now + 5)) is not None
        provider.ctx.remember((TENANT, "files", SHARED_SUBJECT), None)
        before = len(upstream.calls())
        assert (await whoami(client, server))["subject"] == "alice"
        assert provider.refreshes == 1
        assert len(upstream.calls()) == before + 1
        # Same session, same listen stream: nothing re-listed.
        assert client._pool.opened == 1
        assert not await relister.next_change(1.0)
        assert relister.listed == 1
    finally:
        await client.aclose()


async def test_a_token_refused_mid_call_is_sent_again_on_the_same_session(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    server = files(upstream.url)
    provider = await connected(upstream, store, server)
    client = UpstreamClient(allow_private=True, auth=provider)
    try:
        assert (await whoami(client, server))["subject"] == "alice"
        grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
        assert grant is not None
        # The upstream stops accepting the token before its stated expiry (revoked, clock skew).
        assert store.put_grant(replace(grant, access_token=grant.access_token[:-4] + "AAAA")) is not None
        provider.ctx.remember((TENANT, "files", SHARED_SUBJECT), None)
        before = len(upstream.calls())
        assert (await whoami(client, server))["subject"] == "alice"
        assert provider.refreshes == 1
        assert len(upstream.calls()) == before + 1  # refused once (ran nothing), then ran once
        assert client._pool.opened == 1  # the refusal was the token's, not the session's
    finally:
        await client.aclose()


async def test_a_listen_stream_opened_again_does_not_re_list(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    server = files(upstream.url)
    provider = await connected(upstream, store, server)
    relister = Relister(server)
    client = relister.client = UpstreamClient(allow_private=True, auth=provider, on_change=relister)
    try:
        with calling_as(TENANT):
            await client.list_tools(server)
        await asyncio.wait_for(relister.done.wait(), 20)
        assert relister.told == 1  # the first stream's acknowledgement (no replay before it)
        # The session goes (idle, or the process let it go); the next use opens and listens again.
        await client._pool.aclose()
        with calling_as(TENANT):
            await client.list_tools(server)
        assert client._pool.opened == 2
        (reopened,) = client._pool._current().sessions.values()
        await asyncio.wait_for(reopened.listening.wait(), 20)
        # Acknowledged without a re-list: only a list_changed from the upstream would make one.
        assert (relister.told, relister.listed) == (1, 1)
    finally:
        await client.aclose()


async def test_a_45_second_client_credentials_token_is_reused_not_fetched_per_request(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    ctx = oauth_context(store, {"/fg/machine": upstream.provider.machine_secret})
    auth = {"kind": "client_credentials", "issuer": upstream.provider.issuer, "client_id": "machine-agent",
            "client_secret_secret": "/fg/machine", "scopes": ["files:read"]}  # fmt: skip
    server = parse_tenant_config({"servers": [{"name": "files", "url": upstream.url, "auth": auth}]}).servers[
        0
    ]
    provider = TokenProvider(ctx)
    first = await provider.authorization(server, UpstreamCaller(TENANT))
    assert first is not None
    assert claims(first)["exp"] - claims(first)["iat"] == TTL
    assert await provider.authorization(server, UpstreamCaller(TENANT)) == first


def claims(authorization: str) -> dict[str, Any]:
    payload = authorization.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return decoded
