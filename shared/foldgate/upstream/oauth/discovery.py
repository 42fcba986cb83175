"""Find an upstream's authorization server: the MCP authorization spec's discovery, defensively.

1. The challenge: an unauthenticated request (or the 401/403 a real one got) carries
   ``WWW-Authenticate: Bearer resource_metadata="...", scope="..."``.
2. Protected Resource Metadata (RFC 9728): the challenge's URL, then the path-aware and root
   well-known URLs (the SDK's order). Its ``resource`` must name this server (RFC 9728 section 3.3: a
   document that speaks for another resource is an attack, not a configuration).
3. Authorization server metadata: RFC 8414 then OpenID discovery, in the SDK's fallback order; its
   ``issuer`` must be the one the PRM named (RFC 8414 section 3.3, no mix-up) and every endpoint https.
   It must advertise PKCE ``S256`` in ``code_challenge_methods_supported``: absent means no PKCE, and the
   MCP authorization spec says a client must then refuse to proceed.

An upstream on the 2025-03-26 authorization spec publishes no protected resource metadata. As that
spec's backwards-compatibility section has it, the authorization server is then the MCP server's origin
(its path discarded): its RFC 8414 metadata at ``/.well-known/oauth-authorization-server`` (with an
issuer on that origin), else the default endpoints ``/authorize``, ``/token`` and ``/register`` there
(that spec makes PKCE mandatory, so S256 is used without an advertisement to check). No resource
indicator is sent to such a server (it predates RFC 8707 in MCP; the SDK omits it too).

Reused from the MCP SDK (``mcp.client.auth.utils``): the discovery URL builders, the challenge parser,
scope selection and its RFC 9728 / RFC 8414 models. Fetching is foldgate's: every URL goes through the
SSRF guard (the SDK's provider would fetch with a plain client).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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
    "protected_resource",
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
    """An upstream's authorization setup: the resource, its server's metadata and the scope to ask.

    ``resource`` is None for a 2025-03-26 upstream (no protected resource metadata): no RFC 8707
    resource indicator is sent to its authorization server.
    """

    resource: str | None
    issuer: str
    metadata: Any  # mcp.shared.auth.OAuthMetadata
    scope: str | None

    def endpoint(self, name: str) -> str | None:
        """An endpoint URL from the metadata (already checked), or None when not offered."""
        value = getattr(self.metadata, name, None)
        return None if value is None else str(value)

    def issued(self, issuer: str | None) -> bool:
        """Whether ``issuer`` (a grant's or a consent's, as sealed) is this authorization server: a
        refresh token, a client secret or a code goes only to the server it came from."""
        return issuer is not None and issuer == self.issuer


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


async def authorization_server_metadata(
    as_url: str, server_url: str, *, allow_private: bool, code_flow: bool = True
) -> Any:
    """The SDK's ``OAuthMetadata`` of ``as_url`` (RFC 8414, then OIDC); its issuer must be ``as_url``.
    ``code_flow`` False: a server without an ``authorization_endpoint`` is fine (RFC 8414 section 2
    requires one only where a grant uses it; a token-exchange or JWT-bearer server may have none)."""
    metadata = await _metadata_at(
        as_url, server_url, legacy=False, allow_private=allow_private, code_flow=code_flow
    )
    if metadata is None:
        raise UpstreamError(f"no authorization server metadata found for {as_url[:200]}")
    return metadata


async def _metadata_at(
    as_url: str, server_url: str, *, legacy: bool, allow_private: bool, code_flow: bool = True
) -> Any:
    """``as_url``'s metadata, or None when none is published; ``legacy``: only the 2025-03-26 spec's
    one location, RFC 8414 at the origin (``as_url``), whose issuer may be any URL on that origin (that
    spec's servers name e.g. ``<origin>/oauth``; the document the MCP server's own origin serves cannot
    speak for another host)."""
    # The SDK's discovery helpers and models load with the first discovery.
    from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls, issuers_match
    from mcp.shared.auth import OAuthMetadata
    from pydantic import ValidationError

    # The SDK's builder without an authorization server URL is the 2025-03-26 location.
    urls = build_oauth_authorization_server_metadata_discovery_urls(None if legacy else as_url, server_url)
    for url in urls:
        doc = await get_json(url, allow_private=allow_private)
        if doc is None:
            continue
        token_url = doc.get("token_endpoint")
        if not code_flow and "authorization_endpoint" not in doc and isinstance(token_url, str):
            # The SDK's model requires the field; no browser is ever sent to it without a code flow
            # (results found this way are cached apart from the code flow's, see OAuthContext).
            doc = {**doc, "authorization_endpoint": token_url}
        try:
            metadata = OAuthMetadata.model_validate(doc)
        except ValidationError:
            log.info("authorization server metadata at %s is malformed; trying the next", url)
            continue
        claimed = str(metadata.issuer)
        if not (issuers_match(claimed, as_url) or (legacy and _origin(claimed) == as_url)):
            raise UpstreamError(
                f"authorization server metadata names issuer {claimed[:200]!r}, "
                f"not {as_url[:200]!r}: refused (RFC 8414 section 3.3)"
            )
        return metadata
    return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _bare(issuer: str) -> str:
    # Trailing slash of a bare origin: the SDK's AnyHttpUrl adds one, issuers are compared without.
    return issuer[:-1] if issuer.count("/") == 3 and issuer.endswith("/") else issuer


def _default_endpoints(origin: str) -> Any:
    """The 2025-03-26 spec's default endpoints at ``origin``, for a server that publishes no metadata."""
    # The SDK's metadata model loads with the first discovery.
    from mcp.shared.auth import OAuthMetadata

    return OAuthMetadata.model_validate(
        {
            "issuer": origin,
            "authorization_endpoint": origin + "/authorize",
            "token_endpoint": origin + "/token",
            "registration_endpoint": origin + "/register",
            "response_types_supported": ["code"],
        }
    )


async def discover(
    server_url: str, challenge: Challenge | None = None, *, allow_private: bool, code_flow: bool = True
) -> Discovered:
    """The upstream's authorization setup, from its challenge (probed when not given). ``code_flow``
    False (a machine grant: the JWT-bearer grant of ``id_jag`` or ``workload_jwt``): no browser flow
    follows, so PKCE need not be advertised and no ``offline_access`` is added (no refresh token is
    asked for)."""
    # The SDK's scope selection loads with the first discovery.
    from mcp.client.auth.utils import get_client_metadata_scopes

    if challenge is None:
        challenge = await probe_challenge(server_url, allow_private=allow_private) or Challenge()
    prm = await _protected_resource(server_url, challenge, allow_private=allow_private)
    defaults = False
    if prm is not None:
        named = str(prm.authorization_servers[0])
        as_url = _bare(checked_endpoint(named, "authorization server", allow_loopback=allow_private))
        metadata = await authorization_server_metadata(
            as_url, server_url, allow_private=allow_private, code_flow=code_flow
        )
    else:
        # The 2025-03-26 spec: the authorization server is the MCP server's origin.
        origin = checked_endpoint(_origin(server_url), "authorization server", allow_loopback=allow_private)
        metadata = await _metadata_at(origin, server_url, legacy=True, allow_private=allow_private)
        if metadata is None:
            metadata, defaults = _default_endpoints(origin), True
        as_url = _bare(str(metadata.issuer))  # the issuer grants and consents are bound to
        log.info(
            "%s publishes no protected resource metadata: the 2025-03-26 layout at %s", server_url, as_url
        )
    for name in ("authorization_endpoint", "token_endpoint", "registration_endpoint", "revocation_endpoint"):
        value = getattr(metadata, name, None)
        if value is not None:
            checked_endpoint(str(value), name, allow_loopback=allow_private)
    if code_flow and not defaults and "S256" not in (metadata.code_challenge_methods_supported or ()):
        raise UpstreamError(
            "the authorization server does not advertise PKCE S256 (code_challenge_methods_supported): "
            "refused, as the MCP authorization spec requires"
        )
    grants = ["authorization_code", "refresh_token"] if code_flow else None
    scope = get_client_metadata_scopes(challenge.scope, prm, metadata, grants)
    if prm is None:
        return Discovered(None, as_url, metadata, scope)
    # The resource the upstream names (already checked to cover this server) is the audience it checks.
    return Discovered(str(prm.resource), as_url, metadata, scope)


async def protected_resource(server_url: str, challenge: Challenge, *, allow_private: bool) -> str | None:
    """The resource the upstream's protected resource metadata names (checked to cover this server),
    or None when it publishes none; no authorization server is looked up."""
    prm = await _protected_resource(server_url, challenge, allow_private=allow_private)
    return None if prm is None else str(prm.resource)
