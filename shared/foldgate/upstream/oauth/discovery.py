"""Find an upstream's authorization server: the MCP authorization spec's discovery, defensively.

1. The challenge: an unauthenticated request (or the 401/403 a real one got) carries
   ``WWW-Authenticate: Bearer resource_metadata="...", scope="..."``.
2. Protected Resource Metadata (RFC 9728): the challenge's URL, then the path-aware and root
   well-known URLs (the SDK's order). Its ``resource`` must name this server (RFC 9728 section 3.3: a
   document that speaks for another resource is an attack, not a configuration).
3. Authorization server metadata: RFC 8414 then OpenID discovery, in the SDK's fallback order; its
   ``issuer`` must be the one the PRM named (RFC 8414 section 3.3, no mix-up) and every endpoint https.

Reused from the MCP SDK (``mcp.client.auth.utils``): the discovery URL builders, the challenge parser,
scope selection and its RFC 9728 / RFC 8414 models. Fetching is foldgate's: every URL goes through the
SSRF guard (the SDK's provider would fetch with a plain client).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from foldgate.errors import UpstreamError
from foldgate.upstream.net_guard import check_upstream_url_async, guarded_http_client
from foldgate.upstream.oauth.http import checked_endpoint, get_json

__all__ = [
    "Challenge",
    "Discovered",
    "authorization_server_metadata",
    "challenge_of",
    "discover",
    "probe_challenge",
]

log = logging.getLogger(__name__)

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "foldgate", "version": "discovery"},
    },
}


@dataclass(frozen=True, slots=True)
class Challenge:
    """What a ``WWW-Authenticate: Bearer`` challenge said."""

    resource_metadata: str | None = None
    scope: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Discovered:
    """An upstream's authorization setup: the resource, its server's metadata and the scope to ask."""

    resource: str
    issuer: str
    metadata: Any  # mcp.shared.auth.OAuthMetadata
    scope: str | None

    def endpoint(self, name: str) -> str | None:
        """An endpoint URL from the metadata (already checked), or None when not offered."""
        value = getattr(self.metadata, name, None)
        return None if value is None else str(value)


def challenge_of(header: str | None) -> Challenge:
    """Parse a ``WWW-Authenticate`` header with the SDK's parser (quoted or bare values)."""
    if not header:
        return Challenge()
    # The SDK parses from a response object; its HTTP client loads with the first challenge.
    import httpx2
    from mcp.client.auth.utils import extract_field_from_www_auth

    response = httpx2.Response(401, headers={"www-authenticate": header[:4096]})
    return Challenge(
        extract_field_from_www_auth(response, "resource_metadata"),
        extract_field_from_www_auth(response, "scope"),
        extract_field_from_www_auth(response, "error"),
    )


async def probe_challenge(server_url: str, *, allow_private: bool) -> Challenge | None:
    """Send an unauthenticated ``initialize``: the challenge of a protected server, None if it let us in."""
    # The HTTP client loads with the first discovery, not at init.
    import httpx2

    await check_upstream_url_async(server_url, allow_private=allow_private)
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    try:
        async with guarded_http_client(headers, allow_private=allow_private) as client:
            response = await client.post(server_url, json=_INITIALIZE, timeout=10.0)
    except httpx2.HTTPError as exc:
        raise UpstreamError(f"upstream unreachable ({type(exc).__name__})") from exc
    if response.status_code not in (401, 403):
        return None
    return challenge_of(response.headers.get("www-authenticate"))


async def _protected_resource(server_url: str, challenge: Challenge, *, allow_private: bool) -> Any:
    # The SDK's discovery helpers and models load with the first discovery.
    from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
    from mcp.shared.auth import ProtectedResourceMetadata
    from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
    from pydantic import ValidationError

    expected = resource_url_from_server_url(server_url)
    for url in build_protected_resource_metadata_discovery_urls(challenge.resource_metadata, server_url):
        checked_endpoint(url, "resource_metadata", allow_loopback=allow_private)
        doc = await get_json(url, allow_private=allow_private)
        if doc is None:
            continue
        try:
            prm = ProtectedResourceMetadata.model_validate(doc)
        except ValidationError:
            log.info("protected resource metadata at %s is malformed; trying the next", url)
            continue
        claimed = str(prm.resource)
        if not check_resource_allowed(requested_resource=expected, configured_resource=claimed):
            raise UpstreamError(
                f"protected resource metadata names resource {claimed[:200]!r}, not this server "
                f"({expected}): refused (RFC 9728 section 3.3)"
            )
        return prm
    return None


async def authorization_server_metadata(as_url: str, server_url: str, *, allow_private: bool) -> Any:
    """The SDK's ``OAuthMetadata`` of ``as_url`` (RFC 8414, then OIDC); its issuer must be ``as_url``."""
    # The SDK's discovery helpers and models load with the first discovery.
    from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls, issuers_match
    from mcp.shared.auth import OAuthMetadata
    from pydantic import ValidationError

    for url in build_oauth_authorization_server_metadata_discovery_urls(as_url, server_url):
        doc = await get_json(url, allow_private=allow_private)
        if doc is None:
            continue
        try:
            metadata = OAuthMetadata.model_validate(doc)
        except ValidationError:
            log.info("authorization server metadata at %s is malformed; trying the next", url)
            continue
        if not issuers_match(str(metadata.issuer), as_url):
            raise UpstreamError(
                f"authorization server metadata names issuer {str(metadata.issuer)[:200]!r}, "
                f"not {as_url[:200]!r}: refused (RFC 8414 section 3.3)"
            )
        return metadata
    raise UpstreamError(f"no authorization server metadata found for {as_url[:200]}")


async def discover(server_url: str, challenge: Challenge | None = None, *, allow_private: bool) -> Discovered:
    """The upstream's authorization setup, from its challenge (probed when not given)."""
    # The SDK's scope selection loads with the first discovery.
    from mcp.client.auth.utils import get_client_metadata_scopes

    if challenge is None:
        challenge = await probe_challenge(server_url, allow_private=allow_private) or Challenge()
    prm = await _protected_resource(server_url, challenge, allow_private=allow_private)
    if prm is None:
        raise UpstreamError("the upstream publishes no protected resource metadata (RFC 9728)")
    as_url = checked_endpoint(
        str(prm.authorization_servers[0]), "authorization server", allow_loopback=allow_private
    )
    # Trailing slash of a bare origin: the SDK's AnyHttpUrl adds one, issuers are compared without.
    as_url = as_url[:-1] if as_url.count("/") == 3 and as_url.endswith("/") else as_url
    metadata = await authorization_server_metadata(as_url, server_url, allow_private=allow_private)
    for name in ("authorization_endpoint", "token_endpoint", "registration_endpoint", "revocation_endpoint"):
        value = getattr(metadata, name, None)
        if value is not None:
            checked_endpoint(str(value), name, allow_loopback=allow_private)
    if metadata.code_challenge_methods_supported is not None and (
        "S256" not in metadata.code_challenge_methods_supported
    ):
        raise UpstreamError("the authorization server does not support PKCE S256")
    scope = get_client_metadata_scopes(
        challenge.scope, prm, metadata, ["authorization_code", "refresh_token"]
    )
    # The resource the upstream names (already checked to cover this server) is the audience it checks.
    return Discovered(str(prm.resource), as_url, metadata, scope)
