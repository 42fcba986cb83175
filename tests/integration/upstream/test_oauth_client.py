"""foldgate as an OAuth client of a real protected upstream (the SDK's resource server, oidc-provider as
its authorization server), through the real upstream client.

Pins: discovery from a bare 401; dynamic registration and a pre-registered client; the code flow with
PKCE and the resource indicator (the token's audience is the upstream); refresh before expiry with
rotation; a token refused mid-call is refreshed and the call sent once more; a lost rotation race
re-reads the winner; a revoked grant becomes ``needs_consent`` without a retry loop; client
credentials; a grant is never used for another subject.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamConsentError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, calling_as
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.consent import disconnect, finish_consent, start_consent
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import discover, probe_challenge
from foldgate.upstream.oauth.provider import TokenProvider
from tests.oauth_provider import consent
from tests.upstream_oauth import (
    REDIRECT,
    Protected,
    grant_store,
    oauth_context,
    protected_server,
    protected_upstream,
)

TENANT = "acme"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    with protected_upstream(tmp_path_factory.mktemp("protected")) as running:
        yield running


def server_config(url: str, auth: dict[str, Any]) -> ServerConfig:
    return parse_tenant_config({"servers": [{"name": "files", "url": url, "auth": auth}]}).servers[0]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    with grant_store(tmp_path) as grants:
        yield grants


def context(store: SqliteGrantStore, secrets: dict[str, str] | None = None) -> OAuthContext:
    return oauth_context(store, secrets)


async def connect(
    ctx: OAuthContext, server: ServerConfig, subject: str = SHARED_SUBJECT, login: str = "alice"
) -> None:
    url = await start_consent(ctx, TENANT, server, subject)
    answer = await consent(url, REDIRECT, login)
    await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return decoded


async def whoami(
    client: UpstreamClient, server: ServerConfig, subject: str = SHARED_SUBJECT
) -> dict[str, Any]:
    with calling_as(TENANT, subject):
        result = await client.call_tool(server, "whoami", {})
    assert not result.get("isError"), result
    answer: dict[str, Any] = json.loads(result["content"][0]["text"])
    return answer


async def test_discovery_starts_from_a_bare_401(upstream: Protected) -> None:
    challenge = await probe_challenge(upstream.url, allow_private=True)
    assert challenge is not None
    assert challenge.resource_metadata is not None
    found = await discover(upstream.url, allow_private=True)
    assert found.issuer == upstream.provider.issuer
    assert found.resource == upstream.url
    assert found.endpoint("registration_endpoint") is not None
    assert "files:read" in (found.scope or "").split()


async def test_code_flow_with_dcr_reaches_the_tools_with_a_token_for_this_resource(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    server = server_config(upstream.url, {"kind": "oauth"})
    authorize = await start_consent(ctx, TENANT, server, SHARED_SUBJECT)
    assert "code_challenge_method=S256" in authorize
    assert "resource=" in authorize
    answer = await consent(authorize, REDIRECT)
    await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
    grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert grant is not None
    assert grant.state == "connected"
    assert grant.refresh_token
    assert claims(grant.access_token)["aud"] == upstream.url  # RFC 8707: minted for this upstream only
    assert store.get_client(TENANT, "files", upstream.provider.issuer) is not None  # registered once
    # The state is single use: replaying the callback is refused.
    with pytest.raises(Exception, match="unknown or expired consent"):
        await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
    upstream_client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
    try:
        who = await whoami(upstream_client, server)
        assert who["subject"] == "alice"
        listing = None
        with calling_as(TENANT):
            listing = await upstream_client.list_tools(server)
        assert {t["name"] for t in listing.tools} == {"whoami", "echo"}
    finally:
        await upstream_client.aclose()


async def test_a_preregistered_client_is_used_as_configured(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    # Register out of band (as an operator would at the provider's console), then configure it.
    metadata = {
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
    }
    r = httpx2.post(upstream.provider.issuer + "/reg", json=metadata, timeout=10)
    assert r.status_code == 201, r.text
    registered = r.json()
    ctx = context(store, {"/fg/files/secret": registered["client_secret"]})
    server = server_config(upstream.url, {"kind": "oauth", "client_id": registered["client_id"],
                                          "client_secret_secret": "/fg/files/secret"})  # fmt: skip
    await connect(ctx, server)
    assert store.get_client(TENANT, "files", upstream.provider.issuer) is None  # none registered
    grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert grant is not None
    assert claims(grant.access_token)["client_id"] == registered["client_id"]


async def test_refresh_before_expiry_rotates_the_refresh_token(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    server = server_config(upstream.url, {"kind": "oauth"})
    await connect(ctx, server)
    before = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert before is not None
    # A skew longer than the token's life: every use refreshes first.
    provider = TokenProvider(ctx, skew_s=10_000, margin_share=1)
    upstream_client = UpstreamClient(allow_private=True, auth=provider)
    try:
        assert (await whoami(upstream_client, server))["subject"] == "alice"
    finally:
        await upstream_client.aclose()
    after = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert after is not None
    assert provider.refreshes == 1
    assert after.access_token != before.access_token
    assert after.refresh_token != before.refresh_token  # rotated
    assert after.version == before.version + 1


async def test_a_token_refused_mid_call_is_refreshed_and_the_call_sent_once_more(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    server = server_config(upstream.url, {"kind": "oauth"})
    await connect(ctx, server)
    grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert grant is not None
    # The upstream stops accepting the token before its stated expiry (revoked access token, clock skew).
    store.put_grant(replace(grant, access_token=grant.access_token[:-4] + "AAAA"))
    provider = TokenProvider(context(store))  # another instance: it reads the store, not ctx's memo
    upstream_client = UpstreamClient(allow_private=True, auth=provider)
    ran_before = len(upstream.calls())
    try:
        assert (await whoami(upstream_client, server))["subject"] == "alice"
    finally:
        await upstream_client.aclose()
    assert provider.refreshes == 1
    assert len(upstream.calls()) == ran_before + 1  # refused once (ran nothing), then ran once


async def test_the_loser_of_a_rotation_race_uses_the_winners_tokens(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    server = server_config(upstream.url, {"kind": "oauth"})
    await connect(ctx, server)
    stale = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert stale is not None
    winner = await TokenProvider(ctx)._refresh(server, stale)  # instance A rotates first
    # Instance B read the grant before A wrote; its refresh token is now spent at the server.
    used = await TokenProvider(ctx)._refresh(server, stale)
    assert used.access_token == winner.access_token
    current = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert current is not None
    assert current.state == "connected"
    assert current.refresh_token == winner.refresh_token


async def test_a_revoked_grant_needs_consent_and_is_not_retried(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    server = server_config(upstream.url, {"kind": "oauth"})
    await connect(ctx, server)
    grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert grant is not None
    # The person revoked foldgate at the authorization server; the access token is refused too.
    await disconnect(ctx, TENANT, server, SHARED_SUBJECT)
    assert store.put_grant(replace(grant, access_token="revoked", version=0)) is not None
    provider = TokenProvider(context(store))  # another instance: it reads the store, not ctx's memo
    upstream_client = UpstreamClient(allow_private=True, auth=provider)
    try:
        for _ in range(3):
            with calling_as(TENANT), pytest.raises(UpstreamConsentError, match="/connect"):
                await upstream_client.call_tool(server, "whoami", {})
    finally:
        await upstream_client.aclose()
    assert provider.refreshes == 1  # one refused refresh, then no more attempts
    marked = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert marked is not None
    assert marked.state == "needs_consent"


async def test_disconnect_revokes_at_the_authorization_server(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    server = server_config(upstream.url, {"kind": "oauth"})
    await connect(ctx, server)
    grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert grant is not None
    assert grant.refresh_token
    assert await disconnect(ctx, TENANT, server, SHARED_SUBJECT) == {"disconnected": True, "revoked": True}
    assert store.get_grant(TENANT, "files", SHARED_SUBJECT) is None
    # The revoked refresh token no longer works at the server.
    registered = store.get_client(TENANT, "files", upstream.provider.issuer)
    assert registered is not None
    client_id = registered.client_id
    form = {"grant_type": "refresh_token", "refresh_token": grant.refresh_token, "client_id": client_id}
    r = httpx2.post(upstream.provider.issuer + "/token", data=form, timeout=10)
    assert r.status_code == 400
    assert r.json()["error"] == "invalid_grant"


async def test_client_credentials_needs_no_person(upstream: Protected, store: SqliteGrantStore) -> None:
    ctx = context(store, {"/fg/machine": upstream.provider.machine_secret})
    server = server_config(upstream.url, {"kind": "client_credentials", "issuer": upstream.provider.issuer,
                                          "client_id": "machine-agent", "client_secret_secret": "/fg/machine",
                                          "scopes": ["files:read"]})  # fmt: skip
    upstream_client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
    try:
        assert (await whoami(upstream_client, server))["client"] == "machine-agent"
    finally:
        await upstream_client.aclose()


async def test_per_user_grants_are_never_shared(upstream: Protected, store: SqliteGrantStore) -> None:
    ctx = context(store)
    server = server_config(upstream.url, {"kind": "per_user"})
    await connect(ctx, server, "user-a", login="alice")
    upstream_client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
    try:
        assert (await whoami(upstream_client, server, "user-a"))["subject"] == "alice"
        with calling_as(TENANT, "user-b"), pytest.raises(UpstreamConsentError, match="not connected"):
            await upstream_client.call_tool(server, "whoami", {})
        await connect(ctx, server, "user-b", login="bob")
        assert (await whoami(upstream_client, server, "user-b"))["subject"] == "bob"
        assert (await whoami(upstream_client, server, "user-a"))["subject"] == "alice"
    finally:
        await upstream_client.aclose()


async def test_an_oauth_server_without_a_caller_is_refused(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    server = server_config(upstream.url, {"kind": "oauth"})
    upstream_client = UpstreamClient(allow_private=True, auth=TokenProvider(context(store)))
    try:
        with pytest.raises(UpstreamError, match="on behalf of a tenant"):
            await upstream_client.call_tool(server, "whoami", {})
    finally:
        await upstream_client.aclose()


async def test_insufficient_scope_asks_for_consent_with_the_larger_scope(
    upstream: Protected, store: SqliteGrantStore, tmp_path: Path
) -> None:
    ctx = context(store)
    with protected_server(tmp_path, upstream.provider.issuer, "files:read files:write") as (url, _):
        server = server_config(url, {"kind": "oauth", "scopes": ["files:read"]})
        await connect(ctx, server)
        upstream_client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
        try:
            with calling_as(TENANT), pytest.raises(UpstreamConsentError, match="needs more scope"):
                await upstream_client.call_tool(server, "whoami", {})
            marked = store.get_grant(TENANT, "files", SHARED_SUBJECT)
            assert marked is not None
            # A pending step-up: the grant stays usable for what it holds (tests/.../test_oauth_refusals).
            assert (marked.state, marked.scope) == ("connected", "files:read")
            assert set((marked.step_up or "").split()) >= {"files:read", "files:write"}
            # The next consent asks for the union (what the connect route passes for a marked grant).
            extra = marked.consent_scope()
            authorize = await start_consent(ctx, TENANT, server, SHARED_SUBJECT, extra_scope=extra)
            answer = await consent(authorize, REDIRECT)
            await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
            assert (await whoami(upstream_client, server))["subject"] == "alice"
        finally:
            await upstream_client.aclose()


async def test_the_callback_completes_on_another_instance(
    upstream: Protected, store: SqliteGrantStore
) -> None:
    server = server_config(upstream.url, {"kind": "oauth"})
    # Instance A answers the connect request; instance B (a fresh process: no memo, no discovery cache)
    # receives the browser's callback. Everything B needs is in the shared grant store.
    authorize = await start_consent(context(store), TENANT, server, SHARED_SUBJECT)
    answer = await consent(authorize, REDIRECT)
    other = context(store)
    await finish_consent(other, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
    upstream_client = UpstreamClient(allow_private=True, auth=TokenProvider(context(store)))
    try:
        assert (await whoami(upstream_client, server))["subject"] == "alice"
    finally:
        await upstream_client.aclose()
