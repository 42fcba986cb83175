"""Where a person's inbound token may go: the exchange kinds with ``subject_token: {inbound: true}``.

A tenant config is hostile input: its admin names the exchange server. The person's inbound token is
sent only to the token endpoint of the authorization server that issued it (its ``iss``: the configured
``issuer`` is that issuer, or the configured ``token_url`` is the token endpoint that issuer's metadata
names) or to an issuer or token endpoint the operator allowed (``FOLDGATE_EXCHANGE_ISSUERS``, never the
tenant config). Anything else is refused before any request, with an ``upstream_needs_authorization``
error that says why and holds no token. A configured source (the conformance suite's pre-signed ID
token) is the tenant's own credential: unaffected.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamAuthorizationError
from foldgate.model.caller import UpstreamCaller
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.oauth.provider import TokenProvider
from tests.upstream_oauth import oauth_context
from tests.upstreams.enterprise import CLIENT_ID, CLIENT_SECRET, Enterprise, enterprise

SECRETS = {"/fg/client": CLIENT_SECRET, "/fg/id": ""}


@pytest.fixture
def evil() -> Iterator[Enterprise]:
    """A server the tenant admin controls (it would accept the token: same test signing key)."""
    with enterprise() as running:
        yield running


def exchange(url: str, **client: Any) -> ServerConfig:
    block = {
        "kind": "token_exchange",
        "client_id": "foldgate",
        "client_secret_secret": "/fg/client",
        **client,
    }
    return parse_tenant_config({"servers": [{"name": "files", "url": url, "auth": block}]}).servers[0]


def id_jag(url: str, **idp: Any) -> ServerConfig:
    block = {"kind": "id_jag", "idp": {"client_id": "foldgate", **idp}, "client_id": CLIENT_ID,
             "client_secret_secret": "/fg/client"}  # fmt: skip
    return parse_tenant_config({"servers": [{"name": "files", "url": url, "auth": block}]}).servers[0]


def alice(ent: Enterprise) -> UpstreamCaller:
    return UpstreamCaller("acme", "oauth:alice", ent.id_token("alice"))  # iss: <ent>/idp


def provider(store: SqliteGrantStore, *allowed: str) -> TokenProvider:
    return TokenProvider(oauth_context(store, SECRETS, exchange_issuers=allowed))


async def _refused(tokens: TokenProvider, server: ServerConfig, caller: UpstreamCaller) -> str:
    with pytest.raises(UpstreamAuthorizationError) as raised:
        await tokens.authorization(server, caller)
    message = raised.value.message
    assert caller.inbound_token is not None
    assert caller.inbound_token not in message
    assert "not sent" in message
    return message


@pytest.mark.parametrize("where", ["token_url", "issuer"])
async def test_a_token_exchange_elsewhere_than_the_tokens_issuer_is_refused_before_any_request(
    ent: Enterprise, evil: Enterprise, store: SqliteGrantStore, where: str
) -> None:
    destination = (
        {"token_url": evil.base + "/idp/token"} if where == "token_url" else {"issuer": evil.base + "/idp"}
    )
    message = await _refused(provider(store), exchange(ent.url, **destination), alice(ent))
    assert ent.base + "/idp" in message  # the issuer it may go to is named
    assert "FOLDGATE_EXCHANGE_ISSUERS" in message
    assert evil.posts == []
    assert ent.posts == []


async def test_an_id_jag_idp_elsewhere_than_the_tokens_issuer_is_refused(
    ent: Enterprise, evil: Enterprise, store: SqliteGrantStore
) -> None:
    await _refused(provider(store), id_jag(ent.url, token_url=evil.base + "/idp/token"), alice(ent))
    assert evil.posts == []
    assert ent.posts == []


async def test_the_token_goes_to_its_issuers_token_endpoint_by_url_or_by_issuer(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    tokens = provider(store)
    by_url = await tokens.authorization(exchange(ent.url, token_url=ent.base + "/idp/token"), alice(ent))
    assert by_url.startswith("Bearer obo-alice-")
    assert "/.well-known/oauth-authorization-server/idp" in ent.gets  # the issuer's metadata named it
    other = UpstreamCaller("acme", "oauth:bob", ent.id_token("bob"))
    assert (await tokens.authorization(exchange(ent.url, issuer=ent.base + "/idp"), other)).startswith(
        "Bearer"
    )
    jag = await tokens.authorization(id_jag(ent.url, token_url=ent.base + "/idp/token"), alice(ent))
    assert jag.startswith("Bearer at-alice-")


async def test_an_operator_allowed_issuer_or_token_endpoint_may_receive_it(
    ent: Enterprise, evil: Enterprise, store: SqliteGrantStore
) -> None:
    tokens = provider(store, evil.base + "/idp/token", evil.base + "/idp/")
    assert await tokens.authorization(exchange(ent.url, token_url=evil.base + "/idp/token"), alice(ent))
    bob = UpstreamCaller("acme", "oauth:bob", ent.id_token("bob"))
    assert await tokens.authorization(exchange(ent.url, issuer=evil.base + "/idp"), bob)
    assert [path for path, _form, _basic in evil.posts] == ["/idp/token", "/idp/token"]


async def test_an_allowed_issuer_covers_its_token_endpoint_named_by_url_and_no_other(
    ent: Enterprise, evil: Enterprise, store: SqliteGrantStore
) -> None:
    # The operator allows an issuer; the tenant names that issuer's token endpoint by its URL.
    tokens = provider(store, evil.base + "/idp")
    assert await tokens.authorization(exchange(ent.url, token_url=evil.base + "/idp/token"), alice(ent))
    assert "/.well-known/oauth-authorization-server/idp" in evil.gets  # its metadata named the URL
    # A URL that issuer's metadata does not name stays refused.
    bob = UpstreamCaller("acme", "oauth:bob", ent.id_token("bob"))
    await _refused(tokens, exchange(ent.url, token_url=evil.base + "/elsewhere/token"), bob)
    assert [path for path, _form, _basic in evil.posts] == ["/idp/token"]


async def test_a_token_without_an_issuer_goes_only_where_the_operator_allows(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    opaque = UpstreamCaller("acme", "oauth:alice", "opaque-access-token-0123456789")
    server = exchange(ent.url, token_url=ent.base + "/idp/token")
    await _refused(provider(store), server, opaque)
    assert ent.posts == []


async def test_a_configured_source_is_not_the_persons_token_and_goes_where_configured(
    ent: Enterprise, evil: Enterprise, store: SqliteGrantStore
) -> None:
    server = exchange(ent.url, token_url=evil.base + "/idp/token", subject_token={"secret": "/fg/id"})
    tokens = TokenProvider(oauth_context(store, {**SECRETS, "/fg/id": ent.id_token("svc")}))
    assert (await tokens.authorization(server, UpstreamCaller("acme"))).startswith("Bearer obo-svc-")
