"""foldgate registers again when the real authorization server (oidc-provider, in-memory) restarts and
forgets the client foldgate registered with it (RFC 7591), through the real upstream client.

Pins: after a restart, a code exchange answered ``invalid_client`` registers again and asks for a new
connect; a refresh answered ``invalid_client`` marks the grant ``needs_consent`` with the
reason and registers a new client, and the next connect (with the new client) reaches the tools again;
a connect sends no token request before the person consents (no probe of the stored client: a
forgotten one is found at the code exchange); a pre-registered
client the server refuses is never replaced and the stored DCR registration is left as it was; a grant
issued to the replaced client needs consent without its (useless) refresh token being sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamConsentError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, calling_as
from foldgate.store.grants.base import UpstreamGrant
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth import tokens
from foldgate.upstream.oauth.consent import finish_consent, start_consent
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.http import post_form
from foldgate.upstream.oauth.provider import TokenProvider
from foldgate.upstream.oauth.renewal import FORGOTTEN_REASON, RenewalPolicy
from tests.oauth_provider import consent
from tests.upstream_oauth import (
    REDIRECT,
    RestartableProvider,
    grant_store,
    oauth_context,
    protected_server,
)

TENANT = "acme"


@pytest.fixture
def auth_server(tmp_path: Path) -> Iterator[RestartableProvider]:
    running = RestartableProvider(tmp_path)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def upstream(auth_server: RestartableProvider, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with protected_server(tmp_path, auth_server.provider.issuer) as (url, calls):
        yield url, calls


@pytest.fixture
def server(upstream: tuple[str, Path]) -> ServerConfig:
    """The protected upstream as an ``auth: oauth`` server (foldgate registers itself: DCR)."""
    return server_config(upstream[0], {"kind": "oauth"})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    with grant_store(tmp_path) as grants:
        yield grants


def context(store: SqliteGrantStore, secrets: dict[str, str] | None = None) -> OAuthContext:
    # No cap between registrations: the test restarts the server seconds after the first one.
    return oauth_context(store, secrets, renewal=RenewalPolicy(every_s=0))


def server_config(url: str, auth: dict[str, Any]) -> ServerConfig:
    return parse_tenant_config({"servers": [{"name": "files", "url": url, "auth": auth}]}).servers[0]


async def connect(ctx: OAuthContext, server: ServerConfig) -> str:
    """Connect as alice; the client_id the authorization URL named."""
    url = await start_consent(ctx, TENANT, server, SHARED_SUBJECT)
    client_id = dict(part.split("=", 1) for part in url.split("?", 1)[1].split("&"))["client_id"]
    answer = await consent(url, REDIRECT)
    await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
    return client_id


async def whoami(provider: TokenProvider, server: ServerConfig) -> dict[str, Any]:
    client = UpstreamClient(allow_private=True, auth=provider)
    try:
        with calling_as(TENANT, SHARED_SUBJECT):
            result = await client.call_tool(server, "whoami", {})
    finally:
        await client.aclose()
    assert not result.get("isError"), result
    answer: dict[str, Any] = json.loads(result["content"][0]["text"])
    return answer


def stored_client_id(store: SqliteGrantStore, issuer: str) -> str:
    registered = store.get_client(TENANT, "files", issuer)
    assert registered is not None
    return registered.client_id


async def test_a_refresh_refused_as_invalid_client_registers_again_and_connecting_works_again(
    auth_server: RestartableProvider, server: ServerConfig, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    first = await connect(ctx, server)
    assert stored_client_id(store, auth_server.provider.issuer) == first
    assert (await whoami(TokenProvider(ctx), server))["client"] == first

    auth_server.restart()
    # A skew longer than the token's life: the next use refreshes, and the refresh meets the amnesia.
    provider = TokenProvider(context(store), skew_s=10_000, margin_share=1)
    with pytest.raises(UpstreamConsentError, match="no longer knows foldgate's client"):
        await whoami(provider, server)
    grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert grant is not None
    assert (grant.state, grant.reason) == ("needs_consent", FORGOTTEN_REASON)
    renewed = stored_client_id(store, auth_server.provider.issuer)
    assert renewed != first  # registered again, at once

    # No retry loop: a grant needing consent is not refreshed again, and later calls (on this or
    # another instance) repeat the reason it was marked with.
    with pytest.raises(UpstreamConsentError, match="no longer knows foldgate's client"):
        await whoami(provider, server)
    with pytest.raises(UpstreamConsentError, match="no longer knows foldgate's client"):
        await whoami(TokenProvider(context(store)), server)
    assert provider.refreshes == 1

    second = await connect(ctx, server)
    assert second == renewed  # the person is sent with the new client, which the server knows
    reconnected = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert reconnected is not None
    assert (reconnected.state, reconnected.reason, reconnected.client_id) == ("connected", None, renewed)
    answer = await whoami(
        TokenProvider(context(store), skew_s=10_000, margin_share=1), server
    )  # refreshes with it too
    assert (answer["subject"], answer["client"]) == ("alice", renewed)


async def test_a_connect_sends_no_token_request_before_consent(
    auth_server: RestartableProvider,
    server: ServerConfig,
    store: SqliteGrantStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No probe of the stored client at the token endpoint: the first token request is the code
    exchange (the suite counts any earlier one as a defect); a forgotten client shows there."""
    ctx = context(store)
    first = await connect(ctx, server)
    auth_server.restart()
    posted: list[str] = []

    async def recorded(url: str, form: dict[str, str], **kwargs: Any) -> Any:
        posted.append(form.get("grant_type", "?"))
        return await post_form(url, form, **kwargs)

    monkeypatch.setattr(tokens, "post_form", recorded)  # every form POST to an authorization server
    await start_consent(context(store), TENANT, server, SHARED_SUBJECT)
    assert posted == []
    assert stored_client_id(store, auth_server.provider.issuer) == first  # nothing learnt, nothing renewed


async def test_a_refused_preregistered_client_is_never_replaced(
    auth_server: RestartableProvider, upstream: tuple[str, Path], store: SqliteGrantStore
) -> None:
    url, _ = upstream
    ctx = context(store)
    await connect(ctx, server_config(url, {"kind": "oauth"}))  # leaves a stored DCR registration
    dcr = store.get_client(TENANT, "files", auth_server.provider.issuer)
    # The operator configures a client the authorization server does not know (or no longer knows).
    server = server_config(url, {"kind": "oauth", "client_id": "configured-but-unknown"})
    held = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert held is not None
    stale = UpstreamGrant(
        TENANT, "files", SHARED_SUBJECT, "old-access", refresh_token="old-refresh", expires_at=1.0,
        issuer=auth_server.provider.issuer, resource=url, client_id="configured-but-unknown",
        version=held.version,
    )  # fmt: skip
    assert store.put_grant(stale) is not None
    provider = TokenProvider(context(store))
    with pytest.raises(UpstreamConsentError, match="configured client"):
        await whoami(provider, server)
    marked = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert marked is not None
    assert marked.state == "needs_consent"
    assert store.get_client(TENANT, "files", auth_server.provider.issuer) == dcr  # untouched, unclaimed


async def test_a_grant_of_the_replaced_client_needs_consent_without_a_refresh_request(
    auth_server: RestartableProvider, server: ServerConfig, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    first = await connect(ctx, server)
    authorize = await start_consent(ctx, TENANT, server, SHARED_SUBJECT)
    answer = await consent(authorize, REDIRECT)
    auth_server.restart()  # the code exchange meets the amnesia and registers anew ...
    with pytest.raises(UpstreamError, match="no longer knows foldgate's client"):
        await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
    assert stored_client_id(store, auth_server.provider.issuer) != first
    provider = TokenProvider(
        context(store), skew_s=10_000, margin_share=1
    )  # ... and the person never connects again
    with pytest.raises(UpstreamConsentError, match="no longer uses"):
        await whoami(provider, server)
    assert provider.refreshes == 0  # its refresh token is bound to the old client: not even sent
    grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert grant is not None
    assert (grant.state, grant.client_id) == ("needs_consent", first)


async def test_a_code_exchange_refused_as_invalid_client_registers_again(
    auth_server: RestartableProvider, server: ServerConfig, store: SqliteGrantStore
) -> None:
    ctx = context(store)
    authorize = await start_consent(ctx, TENANT, server, SHARED_SUBJECT)
    first = stored_client_id(store, auth_server.provider.issuer)
    answer = await consent(authorize, REDIRECT)
    auth_server.restart()  # between the person's approval and foldgate's code exchange
    with pytest.raises(UpstreamError, match="no longer knows foldgate's client"):
        await finish_consent(ctx, answer["state"], answer["code"], answer.get("iss"), lambda t, n: server)
    assert store.get_grant(TENANT, "files", SHARED_SUBJECT) is None
    assert stored_client_id(store, auth_server.provider.issuer) != first
    await connect(ctx, server)  # and the next connect goes through
    assert (await whoami(TokenProvider(ctx), server))["subject"] == "alice"
