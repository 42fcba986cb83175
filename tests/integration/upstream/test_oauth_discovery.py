"""Hostile discovery metadata is refused: an upstream on loopback serves a 401 challenge and whatever
protected-resource and authorization-server documents a test gives it.

Pins: a PRM naming another resource (RFC 9728 section 3.3), an authorization server on a non-https URL,
one on the link-local metadata address or (where private networks are not allowed) a private address,
AS metadata naming another issuer (RFC 8414 section 3.3, mix-up), and non-https endpoints inside it
are all refused before any credential or code is sent; well-formed documents found by the well-known
fallback (no ``resource_metadata`` in the challenge) are accepted. An authorization server that does
not advertise PKCE S256 (the field absent, or without S256) is refused. A 2025-03-26 upstream (no
protected resource metadata) is served from its origin: the RFC 8414 metadata there (its issuer must be
on that origin, as the conformance suite's ``<origin>/oauth``), else the default endpoints; no resource
indicator is sent to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from foldgate.errors import UpstreamError
from foldgate.upstream.oauth.discovery import authorization_server_metadata, discover
from tests.upstreams.oauth_documents import DocumentServer as Hostile
from tests.upstreams.oauth_documents import document_server


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    with document_server() as running:
        yield running


def prm(hostile: Hostile, **overrides: Any) -> dict[str, Any]:
    return hostile.prm(**overrides)


async def test_well_formed_documents_found_by_the_well_known_fallback(hostile: Hostile) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile, scopes_supported=["a", "b"])
    hostile.routes["/.well-known/oauth-authorization-server"] = hostile.metadata()
    found = await discover(hostile.url, allow_private=True)
    assert found.issuer == hostile.base
    assert found.resource == hostile.url
    assert found.scope == "a b"


async def test_a_prm_for_another_resource_is_refused(hostile: Hostile) -> None:
    hostile.challenge = f'Bearer resource_metadata="{hostile.base}/prm"'
    hostile.routes["/prm"] = prm(hostile, resource="https://bank.example.com/mcp")
    with pytest.raises(UpstreamError, match="not this server"):
        await discover(hostile.url, allow_private=True)


@pytest.mark.parametrize(
    ("server", "why"),
    [
        ("http://as.example.com", "not an https URL"),
        ("https://169.254.169.254", "cloud metadata service"),
    ],
)
async def test_an_authorization_server_on_a_forbidden_url_is_refused(
    hostile: Hostile, server: str, why: str
) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile, authorization_servers=[server])
    with pytest.raises(UpstreamError, match=why):
        await discover(hostile.url, allow_private=True)


async def test_a_private_authorization_server_is_refused_where_private_networks_are_not_allowed() -> None:
    with pytest.raises(UpstreamError, match="private"):
        await authorization_server_metadata(
            "https://10.20.30.40", "https://mcp.example.com/mcp", allow_private=False
        )


async def test_metadata_naming_another_issuer_is_refused(hostile: Hostile) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile)
    hostile.routes["/.well-known/oauth-authorization-server"] = hostile.metadata(
        issuer="https://evil.example.com"
    )
    with pytest.raises(UpstreamError, match="names issuer"):
        await discover(hostile.url, allow_private=True)


@pytest.mark.parametrize("endpoint", ["token_endpoint", "authorization_endpoint", "registration_endpoint"])
async def test_a_non_https_endpoint_in_the_metadata_is_refused(hostile: Hostile, endpoint: str) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile)
    hostile.routes["/.well-known/oauth-authorization-server"] = hostile.metadata(
        **{endpoint: "http://evil.example.com/steal"}
    )
    with pytest.raises(UpstreamError, match=f"{endpoint} is not an https URL"):
        await discover(hostile.url, allow_private=True)


async def test_an_authorization_server_without_pkce_s256_is_refused(hostile: Hostile) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile)
    hostile.routes["/.well-known/oauth-authorization-server"] = hostile.metadata(
        code_challenge_methods_supported=["plain"]
    )
    with pytest.raises(UpstreamError, match="PKCE S256"):
        await discover(hostile.url, allow_private=True)


async def test_an_authorization_server_that_does_not_advertise_pkce_is_refused(hostile: Hostile) -> None:
    """The MCP authorization spec: code_challenge_methods_supported absent means no PKCE; refuse."""
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile)
    metadata = hostile.metadata()
    del metadata["code_challenge_methods_supported"]
    hostile.routes["/.well-known/oauth-authorization-server"] = metadata
    with pytest.raises(UpstreamError, match="does not advertise PKCE S256"):
        await discover(hostile.url, allow_private=True)


@pytest.fixture
def legacy() -> Iterator[Hostile]:
    """A 2025-03-26 upstream: its MCP endpoint under a path, no protected resource metadata."""
    with document_server("/v1/mcp") as running:
        yield running


async def test_a_2025_03_26_upstream_uses_the_metadata_at_its_origin(legacy: Hostile) -> None:
    legacy.routes["/.well-known/oauth-authorization-server"] = legacy.metadata(
        token_endpoint=legacy.base + "/oauth/token", scopes_supported=["mcp"]
    )
    found = await discover(legacy.url, allow_private=True)
    assert found.issuer == legacy.base  # the MCP server's origin, its path discarded
    assert found.endpoint("token_endpoint") == legacy.base + "/oauth/token"
    assert found.resource is None  # no resource indicator to a server without PRM
    assert found.scope == "mcp"


async def test_a_2025_03_26_upstream_without_metadata_uses_the_default_endpoints(legacy: Hostile) -> None:
    found = await discover(legacy.url, allow_private=True)
    assert found.issuer == legacy.base
    assert found.endpoint("authorization_endpoint") == legacy.base + "/authorize"
    assert found.endpoint("token_endpoint") == legacy.base + "/token"
    assert found.endpoint("registration_endpoint") == legacy.base + "/register"
    assert found.endpoint("revocation_endpoint") is None
    assert found.resource is None


async def test_2025_03_26_metadata_naming_another_issuer_is_refused(legacy: Hostile) -> None:
    legacy.routes["/.well-known/oauth-authorization-server"] = legacy.metadata(
        issuer="https://evil.example.com"
    )
    with pytest.raises(UpstreamError, match="names issuer"):
        await discover(legacy.url, allow_private=True)


async def test_2025_03_26_metadata_without_pkce_is_refused(legacy: Hostile) -> None:
    legacy.routes["/.well-known/oauth-authorization-server"] = legacy.metadata(
        code_challenge_methods_supported=None
    )
    with pytest.raises(UpstreamError, match="does not advertise PKCE S256"):
        await discover(legacy.url, allow_private=True)


async def test_2025_03_26_metadata_may_name_an_issuer_under_the_origin(legacy: Hostile) -> None:
    """That spec's servers (the conformance suite's among them) name e.g. ``<origin>/oauth``; grants and
    consents are then bound to that issuer."""
    legacy.routes["/.well-known/oauth-authorization-server"] = legacy.metadata(issuer=legacy.base + "/oauth")
    found = await discover(legacy.url, allow_private=True)
    assert found.issuer == legacy.base + "/oauth"
