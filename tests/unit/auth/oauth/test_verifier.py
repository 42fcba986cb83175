"""The OAuthVerifier facade: a valid token becomes the right Principal; every failure (bad token,
unreachable issuer, tenant without OAuth) is the same AuthError; audiences are the configured ones
or the gateway's base URL, plus the endpoint the token is presented to."""

from __future__ import annotations

import logging

import pytest

from foldgate.auth.oauth.verifier import INVALID_TOKEN, OAuthVerifier
from foldgate.config.oauth import OAuthConfig
from foldgate.errors import AuthError, InsufficientScopeError, UpstreamError
from tests.unit.auth.oauth.issuer import ISSUER, RESOURCE, FakeIssuer


def _verifier(issuer: FakeIssuer, config: OAuthConfig | None = None) -> OAuthVerifier:
    config = config or OAuthConfig(issuer=ISSUER)
    return OAuthVerifier(
        lambda t: config if t == "acme" else None,
        base_url=RESOURCE + "/",
        allow_private=False,
        fetch=issuer.fetch,
    )


async def test_a_valid_token_becomes_the_principal_and_keys_are_fetched_once() -> None:
    issuer = FakeIssuer()
    verifier = _verifier(issuer)
    token = issuer.sign(scope="foldgate:write foldgate:server:crm")
    for _ in range(3):
        principal = await verifier.verify(token, "acme", RESOURCE + "/mcp/all")
        assert (principal.tenant, principal.tier, principal.servers) == ("acme", "write", frozenset({"crm"}))
    assert issuer.fetched == [ISSUER + "/.well-known/openid-configuration", issuer.jwks_uri]


async def test_default_audience_is_the_base_url_and_the_endpoint_is_always_accepted() -> None:
    issuer = FakeIssuer()
    verifier = _verifier(issuer)
    await verifier.verify(issuer.sign(aud=RESOURCE), "acme", RESOURCE + "/mcp/call")
    await verifier.verify(issuer.sign(aud=RESOURCE + "/mcp/call"), "acme", RESOURCE + "/mcp/call")
    with pytest.raises(AuthError):
        await verifier.verify(issuer.sign(aud=RESOURCE + "/mcp/all"), "acme", RESOURCE + "/mcp/call")


async def test_a_configured_audience_replaces_the_base_url() -> None:
    issuer = FakeIssuer()
    verifier = _verifier(issuer, OAuthConfig(issuer=ISSUER, audience=["api://foldgate"]))
    await verifier.verify(issuer.sign(aud="api://foldgate"), "acme", RESOURCE + "/mcp")
    with pytest.raises(AuthError):
        await verifier.verify(issuer.sign(aud=RESOURCE), "acme", RESOURCE + "/mcp")


async def test_every_failure_is_the_same_auth_error_with_the_reason_only_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    issuer = FakeIssuer()
    verifier = _verifier(issuer)
    bad = [
        issuer.sign(iss="https://evil.example"),
        issuer.sign(exp=1),
        "junk",
        issuer.sign(aud="https://x.example"),
    ]
    with caplog.at_level(logging.INFO, logger="foldgate.auth.oauth.verifier"):
        for token in bad:
            with pytest.raises(AuthError) as info:
                await verifier.verify(token, "acme", RESOURCE + "/mcp")
            assert info.value.message == INVALID_TOKEN
            assert info.value.details == {}
        with pytest.raises(AuthError, match=INVALID_TOKEN):
            await verifier.verify(issuer.sign(), "other-tenant", RESOURCE + "/mcp")
    assert "InvalidIssuerError" in caplog.text
    assert not any(token in caplog.text for token in bad)


async def test_an_unreachable_issuer_fails_closed() -> None:
    issuer = FakeIssuer()

    async def down(url: str) -> None:
        raise UpstreamError("authorization server unreachable (ConnectError)")

    verifier = OAuthVerifier(
        lambda t: OAuthConfig(issuer=ISSUER), base_url=RESOURCE, allow_private=False, fetch=down
    )
    with pytest.raises(AuthError, match=INVALID_TOKEN):
        await verifier.verify(issuer.sign(), "acme", RESOURCE + "/mcp")


async def test_a_valid_token_without_a_tier_is_insufficient_scope() -> None:
    issuer = FakeIssuer()
    with pytest.raises(InsufficientScopeError) as info:
        await _verifier(issuer).verify(issuer.sign(scope="openid"), "acme", RESOURCE + "/mcp")
    assert info.value.scope == "foldgate:read"


def test_documents_and_challenges_use_the_configured_base_url() -> None:
    verifier = _verifier(FakeIssuer())
    doc = verifier.metadata_document("acme", "/mcp/all")
    assert doc is not None
    assert doc["resource"] == RESOURCE + "/mcp/all"
    assert verifier.metadata_document("other-tenant", "/mcp/all") is None
    assert verifier.challenge("acme", "/mcp").startswith(
        f'Bearer resource_metadata="{RESOURCE}/.well-known/oauth-protected-resource/mcp"'
    )
