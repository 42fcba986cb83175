"""Who a request is: an agent token (``Authorization: Bearer fgt_...``) resolved to a tenant, its server
scope and its tier; or, where the deployment allows unauthenticated access (local serve), the tenant
header or the default tenant. Also the rate limits: per source address before a token is looked up,
and per caller after; then the tenant's request quotas across instances (edge/quota.py).

Failures are deliberately uniform: an unknown, expired, revoked or malformed token gets the same
answer, and nothing about the token is logged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from starlette.requests import Request

from foldgate.errors import AuthError, InsufficientScopeError, StoreError
from foldgate.model.caller import presenting
from foldgate.model.principal import Principal
from foldgate.telemetry.tracing import span

if TYPE_CHECKING:
    from foldgate.auth.authority import TokenAuthority
    from foldgate.auth.oauth.verifier import OAuthVerifier
    from foldgate.edge.ratelimit import RateLimiter

__all__ = ["TENANT_HEADER", "Access", "QuotaCheck", "RateLimited", "source_address"]

TENANT_HEADER = "x-foldgate-tenant"


def source_address(request: Request) -> str:
    """The address a request came from, as the rate limits count it: the ASGI client (the socket peer
    locally; behind API Gateway v2 the ``requestContext.http.sourceIp`` Mangum maps there), never
    X-Forwarded-For, which the caller writes. '' when there is none (so all such requests share one
    bucket, which fails closed)."""
    return request.client.host if request.client is not None else ""


class RateLimited(Exception):
    """The caller spent its request budget; retry after ``retry_after`` seconds. ``principal`` is the
    caller when its own budget ran out (None: its source address's, before it was known)."""

    def __init__(self, retry_after: float, principal: Principal | None = None) -> None:
        super().__init__(f"rate limit exceeded; retry after {retry_after:.1f}s")
        self.retry_after = retry_after
        self.principal = principal


class QuotaCheck(Protocol):
    """Request quotas across instances (:class:`foldgate.edge.quota.Quotas`)."""

    async def admit(self, principal: Principal) -> None:
        """Spend one of the caller's requests; RateLimited when a quota is spent."""


class Access:
    """Resolves requests to principals and applies the rate limit."""

    def __init__(
        self,
        *,
        default_tenant: str = "default",
        allow_tenant_header: bool = True,
        authority: TokenAuthority | None = None,
        auth_required: bool = False,
        limiter: RateLimiter | None = None,
        oauth: OAuthVerifier | None = None,
        source_limiter: RateLimiter | None = None,
        quotas: QuotaCheck | None = None,
    ) -> None:
        if auth_required and authority is None:
            raise ValueError("auth_required needs a token authority")
        self.default_tenant = default_tenant
        self.allow_tenant_header = allow_tenant_header
        self.authority = authority
        self.auth_required = auth_required
        self.limiter = limiter
        self.oauth = oauth
        self.source_limiter = source_limiter
        self.quotas = quotas

    async def resolve(self, request: Request, path: str) -> Principal:
        """The caller at MCP endpoint ``path`` (see :meth:`_identify`), within its rate limit and its
        tenant's quotas (RateLimited otherwise), in a ``foldgate.auth`` span saying how it ended: ``ok``
        with the tenant, or ``denied``, ``rate_limited``, ``unavailable`` (the token store is down).
        Never the credential."""
        with span("foldgate.auth") as traced:
            try:
                principal = await self._identify(request, path)
                if self.quotas is not None:
                    with span("foldgate.quota"):
                        await self.quotas.admit(principal)
            except RateLimited:
                traced.fail("rate_limited")
                raise
            except StoreError:
                traced.fail("unavailable")
                raise
            except (AuthError, InsufficientScopeError):
                traced.fail("denied")
                raise
            traced.set(tenant=principal.tenant, outcome="ok")
            return principal

    async def _identify(self, request: Request, path: str) -> Principal:
        """The caller at MCP endpoint ``path``: OAuth access tokens go to the verifier, which picks the
        tenant from the resource or a signed token claim (never a header); everything else to
        :meth:`principal`.

        With OAuth on for the default tenant, a credential is required: an anonymous caller gets the
        401 whose challenge starts the MCP authorization flow, and an ``fgt_`` token needs the token
        authority.
        """
        presenting(None)  # only a verified OAuth access token is an inbound identity to exchange
        if self.oauth is None or not self.oauth.accepts():
            return self.principal(request)
        # The OAuth half of the edge loads only where OAuth access tokens can be accepted.
        from foldgate.edge.oauth import bearer_credential, oauth_bearer

        credential = oauth_bearer(request)
        if credential is not None:
            self._limit_source(request)  # before a signature check or a JWKS fetch
            principal = await self.oauth.authenticate(credential, path)
            self._limit(principal)
            # The token-exchange upstreams hand it to the person's IdP (model/caller.py).
            presenting(credential)
            return principal
        if self.oauth.config(self.default_tenant) is None:
            return self.principal(request)
        if bearer_credential(request) is None or self.authority is None:
            raise AuthError("this gateway needs a bearer token: send Authorization: Bearer <token>")
        return self.principal(request)

    def principal(self, request: Request) -> Principal:
        """The caller; AuthError when a token is required or presented and does not verify."""
        header = request.headers.get("authorization", "")
        scheme, _, credential = header.partition(" ")
        if header and self.authority is not None:
            if scheme.lower() != "bearer" or not credential.strip():
                raise AuthError("invalid, expired or revoked token")
            self._limit_source(request)
            token = self.authority.verify(credential.strip())
            servers = frozenset(token.servers) if token.servers is not None else None
            principal = Principal(token.tenant, servers, token.tier, token.token_id)
        elif self.auth_required:
            raise AuthError("this gateway needs an agent token: send Authorization: Bearer <token>")
        else:
            tenant = request.headers.get(TENANT_HEADER) if self.allow_tenant_header else None
            principal = Principal(tenant or self.default_tenant)
        self._limit(principal)
        return principal

    def _limit(self, principal: Principal) -> None:
        if self.limiter is not None:
            allowed, retry_after = self.limiter.allow(f"{principal.tenant}\x1f{principal.key}")
            if not allowed:
                raise RateLimited(retry_after, principal)

    def _limit_source(self, request: Request) -> None:
        """Spend from the source address's bucket (:func:`source_address`) before a token lookup costs
        a store read."""
        if self.source_limiter is None:
            return
        source = source_address(request)
        allowed, retry_after = self.source_limiter.allow(f"source\x1f{source}")
        if not allowed:
            raise RateLimited(retry_after)
