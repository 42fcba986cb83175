"""The facade the HTTP edge calls: an OAuth bearer token for a tenant and endpoint -> a Principal.

One :class:`OAuthVerifier` lives per warm instance and keeps, per trusted issuer, its discovered
metadata and its JWKS cache, so a warm request costs one signature check and no network. Failures
are uniform: any bad token is :class:`~foldgate.errors.AuthError` with the same message as a bad
``fgt_`` token (why is logged, never told); a valid token without any foldgate tier is
:class:`~foldgate.errors.InsufficientScopeError`. An issuer that cannot be reached is also a 401: the
gateway cannot tell a good token from a forged one without its keys (fail closed).

Which tenant a token is for is never the caller's choice of header: it is the deployment's default
tenant (the resource), or, when ``tenant_claim`` is set, the tenant the token's claim names; the token
must then validate against *that* tenant's issuer and audience, so an issuer trusted by one tenant
cannot mint entry into another.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldgate.auth.oauth.grant import claims_principal, tier_scope
from foldgate.auth.oauth.metadata import (
    IssuerMetadata,
    challenge,
    discover_issuer,
    metadata_url,
    protected_resource_metadata,
)
from foldgate.config.oauth import OAuthConfig
from foldgate.errors import AuthError, UpstreamError
from foldgate.model.principal import Principal
from foldgate.upstream.oauth.fetch import FetchJson, guarded_fetcher

if TYPE_CHECKING:
    from foldgate.auth.oauth.validator import TokenValidator

__all__ = ["INVALID_TOKEN", "OAuthVerifier"]

log = logging.getLogger(__name__)

# The same words as foldgate.auth.authority.INVALID_TOKEN (not imported: that pulls in the token store).
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
    ``default_tenant`` is the tenant of this resource; ``tenant_claim`` (None: off) names the claim
    that picks another tenant.
    """

    def __init__(
        self,
        configs: Callable[[str], OAuthConfig | None],
        *,
        base_url: str,
        allow_private: bool,
        fetch: FetchJson | None = None,
        default_tenant: str = "default",
        tenant_claim: str | None = None,
    ) -> None:
        self._configs = configs
        self.default_tenant = default_tenant
        self.tenant_claim = tenant_claim or None
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
        scope = scope or tier_scope(self.config(tenant))
        return challenge(metadata_url(self.base_url, path), scope=scope, error=error)

    def accepts(self) -> bool:
        """Whether an OAuth access token can be valid here at all (the default tenant has OAuth, or
        a tenant claim may pick one that has)."""
        return self.tenant_claim is not None or self.config(self.default_tenant) is not None

    def token_tenant(self, bearer: str) -> str:
        """The tenant a token is for: its ``tenant_claim`` when that is on and present, else the default.

        Read before the signature is checked, only to pick whose issuer checks it; :meth:`authenticate`
        confirms the signed claim names the same tenant. Anything unreadable falls to the default.
        """
        if self.tenant_claim is None:
            return self.default_tenant
        # Loaded with the first token only (see _issuer).
        import jwt

        try:
            # Unverified on purpose: this only picks the verifier, the verified claims decide.
            unverified = jwt.decode(bearer, options={"verify_signature": False})
        except jwt.PyJWTError:
            return self.default_tenant
        named = unverified.get(self.tenant_claim) if isinstance(unverified, dict) else None
        return named if isinstance(named, str) and 0 < len(named) <= 200 else self.default_tenant

    async def authenticate(self, bearer: str, path: str) -> Principal:
        """The principal of an access token presented at MCP endpoint ``path``, in the tenant chosen
        by the resource or the token's claim (:meth:`token_tenant`); errors as :meth:`verify`."""
        tenant = self.token_tenant(bearer)
        principal = await self.verify(bearer, tenant, self.resource(path))
        return principal

    def _issuer(self, config: OAuthConfig) -> _Issuer:
        # PyJWT and cryptography load with the first token, not in every cold start: the cloud always
        # builds a verifier (its public URL is set) even where no tenant accepts OAuth.
        from foldgate.auth.oauth.jwks import JwksCache
        from foldgate.auth.oauth.validator import TokenValidator

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
        # Loaded with the first token only (see _issuer).
        from foldgate.auth.oauth.validator import TokenRejected

        config = self.config(tenant)
        if config is None:
            raise AuthError(INVALID_TOKEN)
        if config.mapping.audience_claim == "client_id":
            # Client ids name apps, not resources: only the configured ones, never the endpoint URL.
            audiences = list(config.audience or [])
        else:
            audiences = [*(config.audience or [self.base_url]), endpoint_url]
        try:
            claims = await self._issuer(config).validator.validate(
                bearer, audiences, audience_claim=config.mapping.audience_claim
            )
        except TokenRejected as exc:
            log.info("rejected an OAuth token for tenant %s: %s", tenant, exc.reason)
            raise AuthError(INVALID_TOKEN) from None
        except UpstreamError as exc:
            log.warning("cannot validate OAuth tokens for tenant %s: %s", tenant, exc.message)
            raise AuthError(INVALID_TOKEN) from None
        if self.tenant_claim is not None and claims.get(self.tenant_claim, self.default_tenant) != tenant:
            # Only reachable if the unverified read and the verified claims disagree: refuse, uniformly.
            log.info("refused an OAuth token for tenant %s: its tenant claim does not match", tenant)
            raise AuthError(INVALID_TOKEN)
        return claims_principal(claims, tenant, config)
