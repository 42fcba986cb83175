"""Issuer discovery (OIDC first, RFC 8414 fallback, no issuer mix-up, no http jwks_uri), the RFC 9728
documents (accepted by the MCP SDK's own model) and the WWW-Authenticate challenge."""

from __future__ import annotations

import pytest
from mcp.shared.auth import ProtectedResourceMetadata

from foldgate.auth.oauth.metadata import challenge, discover_issuer, metadata_url, protected_resource_metadata
from foldgate.config.oauth import OAuthConfig, parse_oauth_config
from foldgate.errors import UpstreamError
from tests.unit.auth.oauth.issuer import ISSUER, FakeIssuer

CONFIG = OAuthConfig(issuer=ISSUER)


async def test_openid_configuration_is_read_first() -> None:
    issuer = FakeIssuer()
    found = await discover_issuer(CONFIG, issuer.fetch, allow_loopback=False)
    assert found.jwks_uri == issuer.jwks_uri
    assert issuer.fetched == [ISSUER + "/.well-known/openid-configuration"]


async def test_rfc8414_metadata_is_the_fallback_with_the_well_known_before_the_path() -> None:
    issuer = FakeIssuer()
    oidc = issuer.documents.pop(ISSUER + "/.well-known/openid-configuration")
    rfc8414 = "https://login.example.com/.well-known/oauth-authorization-server/tenant-a"
    issuer.documents[rfc8414] = oidc
    found = await discover_issuer(CONFIG, issuer.fetch, allow_loopback=False)
    assert found.jwks_uri == issuer.jwks_uri
    assert issuer.fetched[-1] == rfc8414


async def test_a_document_naming_another_issuer_is_refused() -> None:
    issuer = FakeIssuer()
    issuer.documents[ISSUER + "/.well-known/openid-configuration"] = {
        "issuer": "https://evil.example",
        "jwks_uri": "https://evil.example/keys",
    }
    with pytest.raises(UpstreamError, match="different issuer"):
        await discover_issuer(CONFIG, issuer.fetch, allow_loopback=False)


async def test_a_plain_http_jwks_uri_is_refused() -> None:
    issuer = FakeIssuer()
    issuer.documents[ISSUER + "/.well-known/openid-configuration"] = {
        "issuer": ISSUER,
        "jwks_uri": "http://login.example.com/keys",
    }
    with pytest.raises(UpstreamError, match="jwks_uri"):
        await discover_issuer(CONFIG, issuer.fetch, allow_loopback=True)


async def test_no_metadata_anywhere_is_an_upstream_error() -> None:
    async def nothing(url: str) -> None:
        return None

    with pytest.raises(UpstreamError, match="no authorization server metadata"):
        await discover_issuer(CONFIG, nothing, allow_loopback=False)


async def test_a_configured_jwks_uri_skips_discovery() -> None:
    issuer = FakeIssuer()
    config = parse_oauth_config(
        {"issuer": ISSUER, "jwks_uri": "https://keys.example/jwks"}, allow_loopback=False
    )
    found = await discover_issuer(config, issuer.fetch, allow_loopback=False)
    assert found.jwks_uri == "https://keys.example/jwks"
    assert issuer.fetched == []


@pytest.mark.parametrize(
    ("base", "path", "url"),
    [
        (
            "https://mcp.example.com",
            "/mcp/all",
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp/all",
        ),
        ("https://mcp.example.com/", "", "https://mcp.example.com/.well-known/oauth-protected-resource"),
        ("https://x.example/prod", "/mcp", "https://x.example/.well-known/oauth-protected-resource/prod/mcp"),
    ],
)
def test_metadata_url_puts_the_well_known_segment_before_the_path(base: str, path: str, url: str) -> None:
    assert metadata_url(base, path) == url


def test_protected_resource_metadata_is_what_the_sdk_expects() -> None:
    doc = protected_resource_metadata(CONFIG, "https://mcp.example.com/mcp/call")
    prm = ProtectedResourceMetadata.model_validate(doc)
    assert str(prm.resource) == "https://mcp.example.com/mcp/call"
    assert [str(s) for s in prm.authorization_servers] == [ISSUER]
    assert prm.scopes_supported == ["foldgate:read", "foldgate:write", "foldgate:destructive"]
    assert prm.bearer_methods_supported == ["header"]


def test_challenge_names_metadata_scope_and_error_and_cannot_be_broken_out_of() -> None:
    value = challenge("https://m.example/.well-known/x", scope="foldgate:read", error="invalid_token")
    assert value == (
        'Bearer resource_metadata="https://m.example/.well-known/x", '
        'scope="foldgate:read", error="invalid_token"'
    )
    assert (
        challenge('https://m.example/"\r\nX-Evil: 1')
        == 'Bearer resource_metadata="https://m.example/X-Evil: 1"'
    )
    assert "error" not in challenge("https://m.example/")


async def test_the_sign_in_endpoints_are_read_and_held_to_the_issuers_url_rule() -> None:
    """A connect-link sign-in uses the issuer's authorization and token endpoints (and RFC 9207),
    held to the issuer's URL rule."""
    issuer = FakeIssuer()
    doc = issuer.documents[ISSUER + "/.well-known/openid-configuration"]
    doc.update(authorization_endpoint=ISSUER + "/authorize", token_endpoint=ISSUER + "/token",
               authorization_response_iss_parameter_supported=True)  # fmt: skip
    found = await discover_issuer(CONFIG, issuer.fetch, allow_loopback=False)
    assert (found.authorization_endpoint, found.token_endpoint) == (ISSUER + "/authorize", ISSUER + "/token")
    assert found.iss_parameter_supported
    # A plain http one is unusable for a sign-in, and never breaks access-token checks.
    doc["token_endpoint"] = "http://login.example.com/token"
    found = await discover_issuer(CONFIG, issuer.fetch, allow_loopback=False)
    assert found.token_endpoint is None
    assert found.jwks_uri == issuer.jwks_uri
