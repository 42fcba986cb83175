"""``workload_jwt``: access tokens by the JWT-bearer grant (RFC 7523 section 2.1, SEP-1933).

foldgate sends ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` and ``assertion=<the
workload JWT>`` (see :mod:`foldgate.upstream.oauth.assertions` for its sources) to the token endpoint:
``token_url``; else the one ``issuer``'s metadata names; else the one of the authorization server the
upstream's protected resource metadata names (RFC 9728, as the code flows discover it, without their
PKCE requirement: no authorization code is involved). ``resource`` defaults to the resource that
metadata names (the server URL when there is none), ``scope`` to the scope the upstream asks.

Client authentication: a configured client secret goes ``client_secret_basic`` (``client_secret_post``
where the server advertises only that); else ``none``, which sends ``client_id`` only when one is
configured (the assertion is the credential).

With ``dpop: true`` the token request carries a DPoP proof and a DPoP-bound token is presented with the
DPoP scheme (:mod:`foldgate.upstream.oauth.dpop`). Tokens are kept in memory per (tenant, server) until
their refresh margin (the provider's
``refresh_margin`` rule: 60 s, at most a quarter of the lifetime); a config change is a new entry. A
401 from the upstream drops the token (the caller sends once more with a new one).

**A refused grant is final until something changes.** The authorization server's answer
(``invalid_grant``, ``invalid_scope``, ``unauthorized_client``, ...) is recorded and raised as
:class:`~foldgate.errors.UpstreamAuthorizationError` naming it. No second token request of any kind
follows (no retry, no other grant, no registration) until the server's ``auth:`` block changes, the
assertion changes (``file`` and ``secret`` sources: their value is compared by digest; ``aws_sts`` and
``command`` mint a new JWT on every read, so for them only the config counts), or
``REFUSED_BACKOFF_S`` passes. Meanwhile every call gets the same error at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from foldgate.config.tenant import ServerConfig
from foldgate.config.workload_assertion import FileAssertion, SecretAssertion
from foldgate.config.workload_auth import WorkloadJwtAuth
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.upstream.oauth.assertions import AssertionReader, WorkloadAssertionError
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import authorization_server_metadata
from foldgate.upstream.oauth.held import HeldTokens, Margin
from foldgate.upstream.oauth.http import checked_endpoint
from foldgate.upstream.oauth.tokens import ClientAuth, TokenRefusedError, request_token

__all__ = ["JWT_BEARER", "REFUSED_BACKOFF_S", "WorkloadGrants"]

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# After a refusal, how long before one new attempt with an unchanged config and assertion.
REFUSED_BACKOFF_S: Final = 300.0
KIND: Final = "workload_jwt"

LockOf = Callable[[tuple[str, str, str]], asyncio.Lock]


@dataclass(frozen=True, slots=True)
class _Refusal:
    config: str
    assertion: str  # the refused assertion's digest
    error: str | None
    at: float


@dataclass(frozen=True, slots=True)
class _Endpoint:
    token_url: str
    issuer: str
    resource: str | None
    scope: str | None
    auth_methods: tuple[str, ...]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fingerprint(server: ServerConfig, auth: WorkloadJwtAuth) -> str:
    return _digest(f"{server.url}\n{auth.model_dump_json()}")


class WorkloadGrants:
    """Tokens of ``workload_jwt`` servers (see the module docstring); one per token provider."""

    def __init__(
        self,
        ctx: OAuthContext,
        *,
        margin: Margin,
        lock: LockOf,
        assertions: AssertionReader | None = None,
        backoff_s: float = REFUSED_BACKOFF_S,
    ) -> None:
        self.ctx = ctx
        self.margin = margin
        self.lock = lock
        self.assertions = assertions or AssertionReader(ctx.read_secret)
        self.backoff_s = backoff_s
        self._held: HeldTokens[tuple[str, str]] = HeldTokens(margin)
        self._refused: dict[tuple[str, str], _Refusal] = {}
        self.requests = 0  # token requests sent (observability and tests)

    def drop(self, tenant: str, server: str) -> None:
        """The upstream refused the token (401): the next request gets a new one."""
        self._held.drop((tenant, server))

    async def authorization(self, server: ServerConfig, auth: WorkloadJwtAuth, tenant: str) -> str:
        """The ``Authorization`` value for ``server``: a held token, or one obtained now."""
        key = (tenant, server.name)
        config = _fingerprint(server, auth)
        async with self.lock((tenant, server.name, "\x00workload")):
            held = self._held.get(key, config)
            if held is not None:
                return held
            assertion = await self._unless_refused(server, auth, tenant, config)
            return await self._obtain(server, auth, tenant, config, assertion)

    async def _unless_refused(
        self, server: ServerConfig, auth: WorkloadJwtAuth, tenant: str, config: str
    ) -> str | None:
        """Raise the last refusal again while it stands; the assertion read to check it, if one was."""
        refusal = self._refused.get((tenant, server.name))
        if refusal is None or refusal.config != config or time.time() >= refusal.at + self.backoff_s:
            return None
        if isinstance(auth.assertion, FileAssertion | SecretAssertion):
            # Cheap to read and stable between rotations: a new value is worth one new request.
            assertion = await self._assertion(server, auth, tenant)
            if _digest(assertion) != refusal.assertion:
                return assertion
        raise self._refused_error(server, refusal)

    def _refused_error(self, server: ServerConfig, refusal: _Refusal) -> UpstreamAuthorizationError:
        when = time.strftime("%H:%M:%S UTC", time.gmtime(refusal.at))
        retry = time.strftime("%H:%M:%S UTC", time.gmtime(refusal.at + self.backoff_s))
        return UpstreamAuthorizationError(
            f"{server.name}: the authorization server refused the workload identity (JWT-bearer) grant "
            f"at {when}: {refusal.error or 'no error code'}. Nothing is asked again until the server's "
            f"auth: block or its assertion changes, or after {retry}: check what the authorization "
            "server trusts (issuer, audience, subject) and the scopes it allows"
        )

    async def _assertion(self, server: ServerConfig, auth: WorkloadJwtAuth, tenant: str) -> str:
        try:
            return await self.assertions.read(auth.assertion)
        except WorkloadAssertionError as exc:
            self.ctx.outcomes.record(tenant, server.name, KIND, "failed", "assertion_unavailable")
            raise UpstreamError(f"{server.name}: no workload assertion: {exc.message}") from None

    async def _endpoint(self, server: ServerConfig, auth: WorkloadJwtAuth) -> _Endpoint:
        assert server.url is not None  # OAuth kinds require an HTTP upstream
        allow = self.ctx.allow_private
        if auth.token_url is not None:
            return _Endpoint(auth.token_url, auth.token_url, auth.resource or server.url, None, ())
        if auth.issuer is not None:
            metadata = await authorization_server_metadata(auth.issuer, server.url, allow_private=allow)
            found_resource, found_scope, issuer = None, None, auth.issuer
        else:
            found = await self.ctx.discovered(server)  # cached; no PKCE needed (not a code-flow kind)
            metadata, found_resource, found_scope, issuer = (
                found.metadata,
                found.resource,
                found.scope,
                found.issuer,
            )
        token_url = checked_endpoint(str(metadata.token_endpoint), "token_endpoint", allow_loopback=allow)
        methods = tuple(getattr(metadata, "token_endpoint_auth_methods_supported", None) or ())
        resource = auth.resource or found_resource or server.url
        return _Endpoint(token_url, issuer, resource, found_scope, methods)

    async def _client(self, auth: WorkloadJwtAuth, endpoint: _Endpoint) -> ClientAuth:
        if auth.client_secret_secret is None:
            return ClientAuth(auth.client_id or "", "none")
        assert auth.client_id is not None  # the config requires it with a secret
        secret = await self.ctx.read_secret(auth.client_secret_secret)
        methods = endpoint.auth_methods
        only_post = "client_secret_post" in methods and "client_secret_basic" not in methods
        return ClientAuth(
            auth.client_id, "client_secret_post" if only_post else "client_secret_basic", secret
        )

    async def _obtain(
        self, server: ServerConfig, auth: WorkloadJwtAuth, tenant: str, config: str, assertion: str | None
    ) -> str:
        key = (tenant, server.name)
        try:
            endpoint = await self._endpoint(server, auth)
        except UpstreamError:
            self.ctx.outcomes.record(tenant, server.name, KIND, "failed", "discovery_failed")
            raise
        if assertion is None:
            assertion = await self._assertion(server, auth, tenant)
        form = {"grant_type": JWT_BEARER, "assertion": assertion}
        scope = " ".join(auth.scopes) if auth.scopes else endpoint.scope
        if scope:
            form["scope"] = scope
        if endpoint.resource:
            form["resource"] = endpoint.resource
        if auth.audience:
            form["audience"] = auth.audience
        client = await self._client(auth, endpoint)
        self.requests += 1
        try:
            token: Any = await request_token(
                endpoint.token_url,
                form,
                client,
                issuer=endpoint.issuer,
                allow_private=self.ctx.allow_private,
                dpop=self.ctx.dpop(tenant, server),
            )
        except TokenRefusedError as exc:
            refusal = _Refusal(config, _digest(assertion), exc.error, time.time())
            self._refused[key] = refusal
            self._held.drop(key)
            self.ctx.outcomes.record(
                tenant, server.name, KIND, "refused", exc.error or "no_error_code", reason="no retry"
            )
            raise self._refused_error(server, refusal) from None
        except UpstreamError:
            self.ctx.outcomes.record(tenant, server.name, KIND, "failed", "token_endpoint_unreachable")
            raise
        now = time.time()
        expires = now + token.expires_in if token.expires_in else None
        self._refused.pop(key, None)
        # "Bearer <token>", or DPoP with a proof per request when the server bound it to the tenant's key.
        presented = self.ctx.present(tenant, token.token_type, token.access_token)
        self._held.put(key, presented, expires, received=now, config=config)
        self.ctx.outcomes.record(tenant, server.name, KIND, "obtained", expires_at=expires)
        return presented
