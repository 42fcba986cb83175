"""Tokens, codes and client secrets go only to the authorization server they belong to.

An upstream on loopback (tests.upstreams.oauth_documents) names itself as its authorization server and
records every POST to its endpoints. foldgate is configured with a confidential pre-registered client,
so a request to the wrong server would carry its secret as well as the token.

Pins: a refresh of a grant sealed with another issuer than the one discovery names now marks the grant
``needs_consent`` (with that reason) and sends nothing; so does a grant that names no issuer; a
disconnect then forgets the grant without revoking anywhere. The callback of a consent refuses, before
the code is exchanged: a missing RFC 9207 ``iss`` where the server advertises it, an ``iss`` of another
server (mix-up), and an upstream that names another authorization server than the one the flow began
with. A 401 from an upstream whose protected resource metadata now names another authorization
server discovers again (the cached discovery is stale) and marks the grant ``needs_consent`` with
"moved to another authorization server" (not "expired"), sending nothing to either server.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamConsentError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller
from foldgate.store.grants.base import UpstreamGrant
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.oauth.consent import disconnect, finish_consent, start_consent
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.provider import OTHER_ISSUER_REASON, TokenProvider
from tests.upstream_oauth import grant_store, oauth_context
from tests.upstreams.oauth_documents import DocumentServer, document_server

TENANT = "acme"
SECRET = {"/fg/files/secret": "confidential-client-secret"}


@pytest.fixture
def upstream() -> Iterator[DocumentServer]:
    with document_server() as running:
        running.protect()
        yield running


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    with grant_store(tmp_path) as grants:
        yield grants


def files(url: str) -> ServerConfig:
    auth: dict[str, Any] = {
        "kind": "oauth",
        "client_id": "foldgate",
        "client_secret_secret": "/fg/files/secret",
    }
    return parse_tenant_config({"servers": [{"name": "files", "url": url, "auth": auth}]}).servers[0]


def expired_grant(store: SqliteGrantStore, issuer: str | None, resource: str) -> UpstreamGrant:
    grant = UpstreamGrant(TENANT, "files", SHARED_SUBJECT, access_token="old-access",
                          refresh_token="the-refresh-token", expires_at=time.time() - 60, issuer=issuer,
                          resource=resource, client_id="foldgate")  # fmt: skip
    stored = store.put_grant(grant)
    assert stored is not None
    return stored


@pytest.mark.parametrize("sealed_issuer", ["https://as-a.example.com", None])
async def test_a_refresh_goes_only_to_the_issuer_sealed_with_the_grant(
    upstream: DocumentServer, store: SqliteGrantStore, sealed_issuer: str | None
) -> None:
    """The upstream now names its own server; the grant came from another (or names none)."""
    expired_grant(store, sealed_issuer, upstream.url)
    provider = TokenProvider(oauth_context(store, SECRET))
    with pytest.raises(UpstreamConsentError, match="another authorization server"):
        await provider.authorization(files(upstream.url), UpstreamCaller(TENANT))
    assert upstream.posts == []  # neither the refresh token nor the client secret was sent
    assert provider.refreshes == 0
    marked = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert marked is not None
    assert marked.state == "needs_consent"
    assert marked.reason == OTHER_ISSUER_REASON
    assert marked.refresh_token == "the-refresh-token"  # kept sealed, for nobody


async def test_a_refresh_at_the_grants_own_issuer_is_sent(
    upstream: DocumentServer, store: SqliteGrantStore
) -> None:
    """The other side of the pin: the same grant sealed with the discovered issuer is refreshed there."""
    expired_grant(store, upstream.base, upstream.url)
    provider = TokenProvider(oauth_context(store, SECRET))
    with pytest.raises(UpstreamError, match="refused the refresh_token request"):
        await provider.authorization(files(upstream.url), UpstreamCaller(TENANT))
    assert upstream.posts == ["/token"]


async def test_disconnect_revokes_nothing_at_another_issuer(
    upstream: DocumentServer, store: SqliteGrantStore
) -> None:
    expired_grant(store, "https://as-a.example.com", upstream.url)
    answer = await disconnect(oauth_context(store, SECRET), TENANT, files(upstream.url), SHARED_SUBJECT)
    assert answer == {"disconnected": True, "revoked": False}
    assert upstream.posts == []
    assert store.get_grant(TENANT, "files", SHARED_SUBJECT) is None


async def begin(ctx: OAuthContext, server: ServerConfig) -> str:
    """Start a consent; the ``state`` the authorization URL carries."""
    url = await start_consent(ctx, TENANT, server, SHARED_SUBJECT)
    return parse_qs(urlsplit(url).query)["state"][0]


@pytest.mark.parametrize(
    ("iss", "why"),
    [(None, "carried none"), ("https://as-b.example.com", "possible mix-up")],
    ids=["iss-missing", "iss-of-another-server"],
)
async def test_a_callback_without_this_servers_iss_is_refused_before_the_exchange(
    upstream: DocumentServer, store: SqliteGrantStore, iss: str | None, why: str
) -> None:
    """RFC 9207: the server advertises ``iss``; a response without it, or naming another, is a mix-up."""
    upstream.routes["/.well-known/oauth-authorization-server"] = upstream.metadata(
        authorization_response_iss_parameter_supported=True
    )
    server = files(upstream.url)
    ctx = oauth_context(store, SECRET)
    state = await begin(ctx, server)
    with pytest.raises(UpstreamError, match=why):
        await finish_consent(ctx, state, "the-code", iss, lambda t, n: server)
    assert upstream.posts == []  # the code and the client secret stayed here


async def test_a_callback_after_the_upstream_named_another_server_is_refused(
    upstream: DocumentServer, store: SqliteGrantStore
) -> None:
    """The flow is bound to the issuer it began with, even on an instance that discovers afresh."""
    server = files(upstream.url)
    state = await begin(oauth_context(store, SECRET), server)
    with document_server() as other:
        other.routes["/.well-known/oauth-authorization-server"] = other.metadata()
        upstream.routes["/.well-known/oauth-protected-resource/mcp"] = upstream.prm(
            authorization_servers=[other.base]
        )
        with pytest.raises(UpstreamError, match="authorization server changed"):
            await finish_consent(
                oauth_context(store, SECRET), state, "the-code", other.base, lambda t, n: server
            )
        assert other.posts == []
    assert upstream.posts == []


async def test_a_401_after_the_upstream_moved_to_another_server_needs_consent_there(
    upstream: DocumentServer, store: SqliteGrantStore
) -> None:
    """SEP-2352: the 401 discovers again; the grant (no refresh token) is not reported as expired."""
    ctx = oauth_context(store, SECRET)
    server = files(upstream.url)
    await ctx.discovered(server)  # warm: the cache still names the first server
    grant = UpstreamGrant(TENANT, "files", SHARED_SUBJECT, access_token="old-access",
                          expires_at=time.time() + 3600, issuer=upstream.base, resource=upstream.url,
                          client_id="foldgate")  # fmt: skip
    assert store.put_grant(grant) is not None
    provider = TokenProvider(ctx)
    caller = UpstreamCaller(TENANT)
    sent = await provider.authorization(server, caller)
    with document_server() as other:
        other.routes["/.well-known/oauth-authorization-server"] = other.metadata()
        upstream.routes["/.well-known/oauth-protected-resource/mcp"] = upstream.prm(
            authorization_servers=[other.base]
        )
        challenge = f'Bearer resource_metadata="{upstream.base}/.well-known/oauth-protected-resource/mcp"'
        with pytest.raises(UpstreamConsentError, match="moved to another authorization server"):
            await provider.refused(server, caller, sent, 401, challenge)
        assert other.posts == []
    assert upstream.posts == []
    marked = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert marked is not None
    assert (marked.state, marked.reason) == ("needs_consent", OTHER_ISSUER_REASON)
    assert (await ctx.discovered(server)).issuer == other.base  # the next connect goes to the new one
