"""What foldgate does when a real protected upstream refuses a grant: oidc-provider and the SDK's resource
server, whose ``--tool-scopes`` tools need scope of their own (a 403 ``insufficient_scope`` per call).

Pins: requests that meet a revoked grant at once send its dead refresh token once; a grant another
instance marked ``needs_consent`` is never refreshed; a 403 naming scope the grant holds is the tool's
authorization failure (no reconnect); a step-up one tool needs leaves the other tools working while the
consent is pending, and the consent that follows asks for the union; identical step-ups stop after a
bound.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.edge.connect import auth_states
from foldgate.errors import UpstreamConsentError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller, calling_as
from foldgate.store.grants.base import UpstreamGrant
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.consent import disconnect, finish_consent, start_consent
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.provider import REVOKED_REASON, TokenProvider
from foldgate.upstream.oauth.step_up import STEP_UP_LIMIT
from tests.oauth_provider import consent, oidc_provider
from tests.upstream_oauth import REDIRECT, UPSTREAM_SCOPE, grant_store, oauth_context, protected_server

TENANT = "acme"
KEY = (TENANT, "files", SHARED_SUBJECT)


class _Configs:
    """The one thing auth_states asks of a gateway: the tenant's config."""

    def __init__(self, server: ServerConfig) -> None:
        self._config = TenantConfig(servers=[server])

    def config(self, tenant: str) -> TenantConfig:
        return self._config


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("tool-scopes")
    with (
        oidc_provider(tmp, f"{UPSTREAM_SCOPE} files:write") as provider,
        protected_server(tmp, provider.issuer, tool_scopes=True) as (url, _),
    ):
        yield url


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    with grant_store(tmp_path) as grants:
        yield grants


@pytest.fixture
def server(upstream: str) -> ServerConfig:
    # The first consent asks for files:read only: write_note needs a step-up.
    config = {"name": "files", "url": upstream, "auth": {"kind": "oauth", "scopes": ["files:read"]}}
    return parse_tenant_config({"servers": [config]}).servers[0]


async def connect(ctx: OAuthContext, server: ServerConfig, extra_scope: str | None = None) -> UpstreamGrant:
    url = await start_consent(ctx, TENANT, server, SHARED_SUBJECT, extra_scope=extra_scope)
    answer = await consent(url, REDIRECT)
    await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
    grant = ctx.store.get_grant(*KEY)
    assert grant is not None
    return grant


async def call(client: UpstreamClient, server: ServerConfig, tool: str, **arguments: Any) -> dict[str, Any]:
    with calling_as(TENANT):
        result = await client.call_tool(server, tool, arguments)
    assert not result.get("isError"), result
    return result


def held(store: SqliteGrantStore) -> UpstreamGrant:
    grant = store.get_grant(*KEY)
    assert grant is not None
    return grant


async def test_requests_meeting_a_revoked_grant_at_once_send_its_refresh_token_once(
    server: ServerConfig, store: SqliteGrantStore
) -> None:
    ctx = oauth_context(store)
    grant = await connect(ctx, server)
    # The person revoked foldgate at the authorization server; the access token is refused too.
    await disconnect(ctx, TENANT, server, SHARED_SUBJECT)
    assert store.put_grant(replace(grant, access_token="revoked", version=0)) is not None
    provider = TokenProvider(oauth_context(store))
    client = UpstreamClient(allow_private=True, auth=provider)
    try:
        with calling_as(TENANT):
            answers = await asyncio.gather(
                client.call_tool(server, "whoami", {}),
                client.call_tool(server, "whoami", {}),
                return_exceptions=True,
            )
    finally:
        await client.aclose()
    assert all(isinstance(a, UpstreamConsentError) for a in answers), answers
    assert provider.refreshes == 1  # the request behind the lock saw needs_consent and sent nothing
    assert held(store).state == "needs_consent"


async def test_a_grant_another_instance_marked_needs_consent_is_never_refreshed(
    server: ServerConfig, store: SqliteGrantStore
) -> None:
    grant = await connect(oauth_context(store), server)
    # A 45 s token 46 s old: the next use refreshes first.
    now = time.time()
    stored = store.put_grant(replace(grant, issued_at=now - 46, expires_at=now - 1))
    assert stored is not None
    provider = TokenProvider(oauth_context(store))  # instance B: it has read the grant (its memo)
    assert provider.ctx.grant(*KEY) == stored
    # Instance A met the revoked refresh token meanwhile and marked the grant.
    assert store.put_grant(replace(stored, state="needs_consent", reason=REVOKED_REASON)) is not None
    with pytest.raises(UpstreamConsentError, match="revoked"):
        await provider.authorization(server, UpstreamCaller(TENANT))
    assert provider.refreshes == 0


async def test_a_403_naming_scope_the_grant_holds_is_a_tool_error_not_a_reconnect(
    server: ServerConfig, store: SqliteGrantStore
) -> None:
    ctx = oauth_context(store)
    await connect(ctx, server)
    provider = TokenProvider(ctx)
    client = UpstreamClient(allow_private=True, auth=provider)
    try:
        for _ in range(3):
            with calling_as(TENANT), pytest.raises(UpstreamError, match="already holds") as refused:
                await client.call_tool(server, "locked", {})
            assert not isinstance(refused.value, UpstreamConsentError)
            assert "/connect" not in refused.value.message
        assert (held(store).state, held(store).step_up) == ("connected", None)
        assert provider.refreshes == 0
        await call(client, server, "whoami")
    finally:
        await client.aclose()


async def test_a_step_up_for_one_tool_keeps_the_other_tools_working_until_the_consent(
    server: ServerConfig, store: SqliteGrantStore
) -> None:
    ctx = oauth_context(store)
    await connect(ctx, server)
    client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
    try:
        for _ in range(2):
            with calling_as(TENANT), pytest.raises(UpstreamConsentError, match="files:write") as needs:
                await client.call_tool(server, "write_note", {"text": "hi"})
            assert "/api/v1/servers/files/connect" in needs.value.message
        pending = held(store)
        assert pending.state == "connected"
        assert pending.step_up == "files:read files:write"
        # The status route tells the operator a consent is pending while the connection serves.
        status = auth_states(ctx, _Configs(server), TENANT)["files"]  # type: ignore[arg-type]
        assert status["state"] == "connected"
        assert status["step_up"] == "the upstream needs more scope"
        assert "reason" not in status
        # Everyone's other tools keep working on the held token, and so does listing.
        assert json.loads((await call(client, server, "whoami"))["content"][0]["text"])["subject"] == "alice"
        with calling_as(TENANT):
            assert "write_note" in {t["name"] for t in (await client.list_tools(server)).tools}
        # The operator's next consent asks for the union; then the tool works.
        await connect(ctx, server, extra_scope=pending.consent_scope())
        after = held(store)
        assert set((after.scope or "").split()) >= {"files:read", "files:write"}
        assert after.step_up is None
        ctx.remember(KEY, None)
        assert (await call(client, server, "write_note", text="hi"))["content"][0]["text"] == "noted: hi"
    finally:
        await client.aclose()


async def test_identical_step_ups_stop_after_a_bound(server: ServerConfig, store: SqliteGrantStore) -> None:
    ctx = oauth_context(store)
    await connect(ctx, server)
    client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
    try:
        for _ in range(STEP_UP_LIMIT):
            for _ in range(2):  # refused again while pending: the same step-up, not counted again
                with calling_as(TENANT), pytest.raises(UpstreamConsentError, match="files:admin"):
                    await client.call_tool(server, "admin_report", {})
            # The operator consents, but the authorization server does not grant files:admin: the new
            # grant holds what the old one did.
            stored = store.put_grant(replace(held(store), state="connected", step_up=None, reason=None))
            ctx.remember(KEY, stored)
        with calling_as(TENANT), pytest.raises(UpstreamError, match="does not grant it") as stopped:
            await client.call_tool(server, "admin_report", {})
        assert not isinstance(stopped.value, UpstreamConsentError)
        assert held(store).step_up is None
        await call(client, server, "whoami")
    finally:
        await client.aclose()
