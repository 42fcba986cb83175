"""The facade the HTTP edge calls: an OAuth bearer token for a tenant and endpoint -> a Principal.

One :class:`OAuthVerifier` lives per warm instance and keeps, per trusted issuer, its discovered
metadata and its JWKS cache, so a warm request costs one signature check and no network. Failures
are uniform: any bad token is :class:`~foldgate.errors.AuthError` with the same message as a bad
``fgt_`` token (why is logged, never told); a valid token without any foldgate tier is
:class:`~foldgate.errors.InsufficientScopeError`. An issuer that cannot be reached is also a 401: the
gateway cannot tell a good token from a forged one without its keys (fail closed).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from foldgate.auth.oauth.config import OAuthConfig
from foldgate.auth.oauth.fetch import FetchJson, guarded_fetcher
from foldgate.auth.oauth.grant import claims_principal
from foldgate.auth.oauth.jwks import JwksCache
from foldgate.auth.oauth.metadata import (
    IssuerMetadata,
    challenge,
    discover_issuer,
    metadata_url,
    protected_resource_metadata,
)
from foldgate.auth.oauth.validator import TokenRejected, TokenValidator
from foldgate.errors import AuthError, UpstreamError
from foldgate.model.principal import Principal

__all__ = ["INVALID_TOKEN", "OAuthVerifier"]

log = logging.getLogger(__name__)

# The same words as foldgate.auth.tokens.INVALID_TOKEN (not imported: that pulls in the token store).
INVALID_TOKEN = "invalid, expired or revoked token"


@dataclass
class _Issuer:
    """What one trusted issuer needs at request time (built on first use, kept while warm)."""

    validator: TokenValidator
    metadata: IssuerMetadata | None = None


class OAuthVerifier:
    """Validates OAuth access tokens for the tenants that configure ``oauth:``; thread-safe.

    ``configs`` maps a tenant to its OAuth config (None: the tenant does not accept OAuth).
    ``base_url`` is the gateway's public base URL (e.g. ``https://mcp.example.com``): the default
    audience, and the prefix of every endpoint's canonical resource URL. It is configuration, never
    derived from a request's Host header, so a caller cannot choose which audience is accepted.
    """

    def __init__(
        self,
        configs: Callable[[str], OAuthConfig | None],
        *,
        base_url: str,
        allow_private: bool,
        fetch: FetchJson | None = None,
    ) -> None:
        self._configs = configs
        self.base_url = base_url.rstrip("/")
        self.allow_private = allow_private
        self._fetch = fetch if fetch is not None else guarded_fetcher(allow_private=allow_private)
        self._lock = threading.Lock()
        # Keyed by the config's JSON: a changed oauth block starts over with fresh metadata and keys.
        self._issuers: dict[str, _Issuer] = {}

    def config(self, tenant: str) -> OAuthConfig | None:
        """The tenant's OAuth config, None when it does not accept OAuth tokens."""
        return self._configs(tenant)

    def resource(self, path: str) -> str:
        """The canonical URL of the MCP endpoint at ``path`` (the resource a token must be minted for)."""
        return self.base_url + path

    def metadata_document(self, tenant: str, path: str) -> dict[str, Any] | None:
        """RFC 9728 metadata of the resource at ``path`` ("" = the base URL); None without OAuth."""
        config = self.config(tenant)
        return None if config is None else protected_resource_metadata(config, self.resource(path))

    def challenge(self, tenant: str, path: str, *, error: str | None = None, scope: str | None = None) -> str:
        """The ``WWW-Authenticate`` value for a 401/403 at ``path``, pointing at its metadata."""
        return challenge(metadata_url(self.base_url, path), scope=scope or "foldgate:read", error=error)

    def _issuer(self, config: OAuthConfig) -> _Issuer:
        ident = config.model_dump_json()
        with self._lock:
            found = self._issuers.get(ident)
            if found is not None:
                return found
            state: _Issuer

            async def jwks_uri() -> str:
                if state.metadata is None:
                    state.metadata = await discover_issuer(
                        config, self._fetch, allow_loopback=self.allow_private
                    )
                return state.metadata.jwks_uri

            jwks = JwksCache(self._fetch, jwks_uri, algorithms=config.algorithms)
            validator = TokenValidator(
                jwks, issuer=config.issuer, algorithms=config.algorithms, leeway=config.leeway_seconds
            )
            state = _Issuer(validator)
            self._issuers[ident] = state
            return state

    async def verify(self, bearer: str, tenant: str, endpoint_url: str) -> Principal:
        """The principal of a valid access token presented at ``endpoint_url`` for ``tenant``.

        AuthError (uniform) for a bad token or a tenant without OAuth; InsufficientScopeError when
        the token is valid but grants no foldgate tier.
        """
        config = self.config(tenant)
        if config is None:
            raise AuthError(INVALID_TOKEN)
        audiences = [*(config.audience or [self.base_url]), endpoint_url]
        try:
            claims = await self._issuer(config).validator.validate(bearer, audiences)
        except TokenRejected as exc:
            log.info("rejected an OAuth token for tenant %s: %s", tenant, exc.reason)
            raise AuthError(INVALID_TOKEN) from None
        except UpstreamError as exc:
            log.warning("cannot validate OAuth tokens for tenant %s: %s", tenant, exc.message)
            raise AuthError(INVALID_TOKEN) from None
        return claims_principal(claims, tenant, config)
