"""Cognito-shaped access tokens (``client_id`` and no ``aud``; scopes ``<resource server id>/read``;
``token_use: access``), minted locally: accepted with ``audience_claim: client_id`` for an allowed
client and ``scope_prefix`` set to the resource server identifier; refused for any other client, for
an ID token, and without the prefixed scopes."""

from __future__ import annotations

import pytest

from foldgate.auth.oauth.verifier import OAuthVerifier
from foldgate.config.oauth import parse_oauth_config
from foldgate.errors import AuthError, ConfigError, InsufficientScopeError
from tests.unit.auth.oauth.issuer import RESOURCE, FakeIssuer

POOL = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123"
PREFIX = RESOURCE + "/"
MACHINE = "3n4b5urk1ft4fl3mg5e62d9ado"
COGNITO = {"issuer": POOL, "audience": [MACHINE, "7user7client"],
           "mapping": {"scope_prefix": PREFIX, "audience_claim": "client_id"}}  # fmt: skip


def _verifier(issuer: FakeIssuer) -> OAuthVerifier:
    config = parse_oauth_config(COGNITO, allow_loopback=False)
    return OAuthVerifier(lambda t: config, base_url=RESOURCE, allow_private=False, fetch=issuer.fetch)


def _cognito_token(issuer: FakeIssuer, **claims: object) -> str:
    shape = {"aud": None, "client_id": MACHINE, "token_use": "access", "sub": MACHINE,
             "scope": f"{PREFIX}write {PREFIX}server:crm"}  # fmt: skip
    return issuer.sign("RS256", **{**shape, **claims})


async def test_a_cognito_access_token_maps_prefixed_scopes_to_the_grant() -> None:
    issuer = FakeIssuer(issuer=POOL)
    principal = await _verifier(issuer).verify(_cognito_token(issuer), "acme", RESOURCE + "/mcp/all")
    assert (principal.tier, principal.servers) == ("write", frozenset({"crm"}))
    user = await _verifier(issuer).verify(
        _cognito_token(issuer, client_id="7user7client", scope=f"{PREFIX}read"), "acme", RESOURCE + "/mcp"
    )
    assert (user.tier, user.servers) == ("read", None)


async def test_other_clients_id_tokens_and_endpoint_audiences_are_refused() -> None:
    issuer = FakeIssuer(issuer=POOL)
    verifier = _verifier(issuer)
    bad = [
        _cognito_token(issuer, client_id="some-other-app"),
        _cognito_token(issuer, client_id=None),
        # An ID token names the client in aud and is not an access token.
        _cognito_token(issuer, client_id=None, aud=MACHINE, token_use="id"),
        _cognito_token(issuer, token_use="id"),
        # client_id mode never falls back to aud, not even the endpoint's own URL.
        _cognito_token(issuer, client_id=None, aud=RESOURCE + "/mcp/all"),
    ]
    for token in bad:
        with pytest.raises(AuthError):
            await verifier.verify(token, "acme", RESOURCE + "/mcp/all")


async def test_unprefixed_scopes_grant_nothing_and_the_hint_uses_the_prefix() -> None:
    issuer = FakeIssuer(issuer=POOL)
    with pytest.raises(InsufficientScopeError) as caught:
        await _verifier(issuer).verify(
            _cognito_token(issuer, scope="foldgate:destructive"), "acme", RESOURCE + "/mcp"
        )
    assert caught.value.scope == PREFIX + "read"
    doc = _verifier(issuer).metadata_document("acme", "/mcp")
    assert doc is not None
    assert doc["scopes_supported"] == [PREFIX + t for t in ("read", "write", "destructive")]


def test_client_id_audience_needs_an_explicit_client_list() -> None:
    with pytest.raises(ConfigError, match="allowed client ids"):
        parse_oauth_config({**COGNITO, "audience": None}, allow_loopback=False)
    with pytest.raises(ConfigError, match="scope_prefix"):
        parse_oauth_config({**COGNITO, "mapping": {"scope_prefix": "has space/"}}, allow_loopback=False)
