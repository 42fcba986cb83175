"""What foldgate publishes and reads as an OAuth protected resource.

* Issuer discovery: the authorization server's metadata from ``/.well-known/openid-configuration``
  (OpenID Connect Discovery), falling back to ``/.well-known/oauth-authorization-server`` (RFC 8414);
  the document must name exactly the configured issuer (RFC 8414 §3.3: no mix-up).
* RFC 9728 Protected Resource Metadata for each MCP endpoint, and the URL it is served at.
* The ``WWW-Authenticate: Bearer`` challenge (RFC 6750 §3 plus RFC 9728's ``resource_metadata``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from foldgate.config.oauth import OAuthConfig, is_loopback_host
from foldgate.errors import UpstreamError
from foldgate.upstream.oauth.fetch import FetchJson

__all__ = [
    "MCP_PATHS",
    "PRM_PATH",
    "TIER_SCOPES",
    "IssuerMetadata",
    "challenge",
    "discover_issuer",
    "metadata_url",
    "protected_resource_metadata",
]

PRM_PATH: Final = "/.well-known/oauth-protected-resource"
# Every MCP endpoint of the HTTP edge: each is its own protected resource (its own metadata document).
MCP_PATHS: Final = ("/mcp", "/mcp/all", "/mcp/call", "/mcp/code")
TIER_SCOPES: Final = ("foldgate:read", "foldgate:write", "foldgate:destructive")
# Quoted-string values in the challenge are ours, but a config-derived URL must not break the header.
_UNSAFE_IN_QUOTES: Final = re.compile(r'["\\\r\n]')


@dataclass(frozen=True, slots=True)
class IssuerMetadata:
    """The parts of the authorization server's metadata the resource server uses."""

    issuer: str
    jwks_uri: str
    introspection_endpoint: str | None = None
    # What a sign-in (foldgate as the issuer's OpenID Connect client) needs; None when not published.
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    iss_parameter_supported: bool = False  # RFC 9207


def _well_known_urls(issuer: str) -> list[str]:
    """Discovery URLs in order: OIDC (suffix appended), then RFC 8414 (well-known before the path)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}{path}/.well-known/openid-configuration",
        f"{origin}/.well-known/oauth-authorization-server{path}",
    ]


def _checked_url(value: Any, what: str, *, allow_loopback: bool) -> str:
    """A URL from the issuer's metadata, held to the same rule as the configured issuer."""
    if not isinstance(value, str) or not value:
        raise UpstreamError(f"authorization server metadata has no {what}")
    parts = urlsplit(value)
    if parts.scheme == "https" or (
        parts.scheme == "http" and allow_loopback and is_loopback_host(parts.hostname or "")
    ):
        return value
    raise UpstreamError(f"authorization server metadata {what} is not an https URL")


def _usable_url(value: Any, *, allow_loopback: bool) -> str | None:
    """An endpoint only sign-ins use: None when absent or unusable, so token checks never depend on it."""
    try:
        return _checked_url(value, "endpoint", allow_loopback=allow_loopback)
    except UpstreamError:
        return None


async def discover_issuer(config: OAuthConfig, fetch: FetchJson, *, allow_loopback: bool) -> IssuerMetadata:
    """The issuer's metadata (or just the configured ``jwks_uri``); UpstreamError when unusable."""
    if config.jwks_uri is not None:
        return IssuerMetadata(config.issuer, config.jwks_uri)
    failures: list[str] = []
    for url in _well_known_urls(config.issuer):
        try:
            doc = await fetch(url)
        except UpstreamError as exc:
            failures.append(exc.message)
            continue
        if doc is None:
            continue
        if doc.get("issuer") != config.issuer:
            # A document for another issuer is a mix-up (or an attack), never a fallback.
            raise UpstreamError("authorization server metadata names a different issuer")
        introspection = doc.get("introspection_endpoint")
        endpoints = {
            name: _usable_url(doc.get(name), allow_loopback=allow_loopback)
            for name in ("authorization_endpoint", "token_endpoint")
        }
        return IssuerMetadata(
            config.issuer,
            _checked_url(doc.get("jwks_uri"), "jwks_uri", allow_loopback=allow_loopback),
            introspection if isinstance(introspection, str) else None,
            iss_parameter_supported=doc.get("authorization_response_iss_parameter_supported") is True,
            **endpoints,
        )
    detail = f": {failures[-1]}" if failures else ""
    raise UpstreamError(f"no authorization server metadata found for the issuer{detail}")


def metadata_url(base_url: str, path: str) -> str:
    """Where the metadata of the resource at ``base_url + path`` is served (RFC 9728 §3.1).

    The well-known segment goes between the host and the resource's path; ``path`` "" is the root.
    """
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}{PRM_PATH}{parts.path.rstrip('/')}{path}"


def protected_resource_metadata(config: OAuthConfig, resource: str) -> dict[str, Any]:
    """The RFC 9728 document for ``resource`` (an MCP endpoint's canonical URL, or the base URL).

    Server scopes (``foldgate:server:<name>``) are accepted but not listed: naming the tenant's servers
    to unauthenticated callers would tell them what is behind the gateway.
    """
    return {
        "resource": resource,
        "authorization_servers": [config.issuer],
        # Spelled the tenant's way (e.g. Cognito's <resource server id>/read); the defaults otherwise.
        "scopes_supported": [config.mapping.scope_prefix + s.removeprefix("foldgate:") for s in TIER_SCOPES],
        "bearer_methods_supported": ["header"],
        "resource_name": "foldgate",
    }


def _quoted(value: str) -> str:
    return '"' + _UNSAFE_IN_QUOTES.sub("", value) + '"'


def challenge(resource_metadata: str, *, scope: str | None = None, error: str | None = None) -> str:
    """A ``WWW-Authenticate`` value: ``Bearer resource_metadata="…", scope="…"`` (+ ``error`` if any).

    ``error`` is an RFC 6750 code (invalid_token, insufficient_scope); there is never an
    ``error_description``: why a token failed is logged, not told.
    """
    params = [f"resource_metadata={_quoted(resource_metadata)}"]
    if scope:
        params.append(f"scope={_quoted(scope)}")
    if error:
        params.append(f"error={_quoted(error)}")
    return "Bearer " + ", ".join(params)
