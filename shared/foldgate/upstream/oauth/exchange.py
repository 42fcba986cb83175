"""RFC 8693 token exchange: the request both exchange kinds send, and the ``token_exchange`` kind.

``token_exchange`` (on-behalf-of): at the authorization server the upstream trusts (``token_url``, or
``issuer`` by RFC 8414 discovery), foldgate sends::

    grant_type=urn:ietf:params:oauth:grant-type:token-exchange
    subject_token=<the person's inbound access token, or the configured source's>
    subject_token_type=urn:ietf:params:oauth:token-type:access_token   (or as configured)
    requested_token_type=urn:ietf:params:oauth:token-type:access_token (or as configured)
    resource=<the upstream's protected-resource-metadata resource, else its URL>
    audience=..., scope=..., actor_token=..., actor_token_type=...     (when configured)

authenticated as its configured client (``client_secret_basic`` or ``private_key_jwt``; with neither,
``client_id`` in the form). The answer's token is sent to the upstream as a bearer token (also one
of another ``requested_token_type``, answered ``token_type: N_A`` as RFC 8693 section 2.2.1 says: N_A
names no scheme, the upstream accepts the configured type, and it is bound to no key); with
``dpop: true`` the exchange carries a DPoP proof (this server issues the token the upstream sees, so
this is the request RFC 9449 binds) and a ``DPoP``-typed answer is presented with the DPoP scheme.
A refusal raises :class:`TokenRefusedError`; the caller turns it into the tool error.

**Where a person's inbound token may go** (both kinds, ``subject_token: {inbound: true}``): the tenant
config names the exchange server, and a tenant config is hostile input, so without a rule its admin
could point ``token_url`` at a server of their own and collect every caller's token. The inbound token
is sent only to the token endpoint of the authorization server that issued it (its ``iss``: the
configured ``issuer`` is that issuer, or the configured ``token_url`` is the token endpoint that
issuer's RFC 8414 / OIDC metadata names) or to one the operator allowed in the deployment settings
(``FOLDGATE_EXCHANGE_ISSUERS``: the configured ``issuer`` or ``token_url`` listed). Anything else is
refused before any request (:meth:`ExchangeDiscovery.may_receive`). The ``iss`` is read from the
token foldgate's inbound OAuth verified for this very request; a token without one (not a JWT) goes
only where the operator allows.
"""

from __future__ import annotations

import time
from typing import Any, Final

from foldgate.config.tenant import ServerConfig
from foldgate.config.token_source import TOKEN_TYPE_URNS
from foldgate.config.upstream_auth import ExchangeClient, TokenExchangeAuth
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.model.caller import UpstreamCaller
from foldgate.upstream.oauth.context import DISCOVERY_SECONDS, OAuthContext
from foldgate.upstream.oauth.discovery import (
    Challenge,
    authorization_server_metadata,
    probe_challenge,
    protected_resource,
)
from foldgate.upstream.oauth.http import checked_endpoint
from foldgate.upstream.oauth.sources import read_token
from foldgate.upstream.oauth.tokens import ClientAuth, TokenRefusedError, request_token

__all__ = [
    "TOKEN_EXCHANGE_GRANT",
    "ExchangeDiscovery",
    "Exchanged",
    "claims_of",
    "client_of",
    "exchange_form",
    "on_behalf_of",
    "refusal",
]

TOKEN_EXCHANGE_GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"

Exchanged = tuple[str, int | None, str]
"""An access token, its lifetime in seconds (None: the server did not say) and the Authorization
value that presents it (``Bearer``, or ``DPoP`` with a proof per request: ``OAuthContext.present``)."""


def claims_of(token: str) -> dict[str, Any]:
    """A JWT's payload, unverified ({} when it is not a JWT): for naming a mismatch, or reading the
    issuer of a token foldgate's inbound OAuth verified already; never for trust by itself."""
    # PyJWT (the project's JOSE library) loads with the first exchange.
    import jwt

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return {}
    return claims if isinstance(claims, dict) else {}


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def exchange_form(
    subject_token: str,
    subject_token_type: str,
    *,
    requested_token_type: str | None = None,
    audience: str | None = None,
    resource: str | None = None,
    scope: str | None = None,
    actor: tuple[str, str] | None = None,
) -> dict[str, str]:
    """The RFC 8693 section 2.1 form; ``actor``: (actor token, its type)."""
    form = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "subject_token": subject_token,
        "subject_token_type": subject_token_type,
    }
    optional = {
        "requested_token_type": requested_token_type,
        "audience": audience,
        "resource": resource,
        "scope": scope,
    }
    form.update({name: value for name, value in optional.items() if value})
    if actor is not None:
        form["actor_token"], form["actor_token_type"] = actor
    return form


def refusal(server: str, who: str, what: str, exc: TokenRefusedError) -> UpstreamError:
    """The tool error for a refused exchange: with an RFC 6749 error code (``invalid_grant``,
    ``access_denied``, ...) a decision only the IdP's or the authorization server's administrator can
    change (``upstream_needs_authorization``, never retried); without one, a plain upstream failure."""
    if exc.error is None:
        return UpstreamError(f"{server}: {who} failed {what} ({exc.message})")
    return UpstreamAuthorizationError(
        f"{server}: {who} refused {what} ({exc.error}): access to this upstream is decided there; "
        "retrying or reconnecting will not change it",
        refused_by=who,
        error=exc.error,
    )


async def client_of(ctx: OAuthContext, client: ExchangeClient) -> ClientAuth:
    """How foldgate authenticates at an exchange server: its secret (``client_secret_basic``), its
    private key (``private_key_jwt``), or none (``client_id`` in the form, when one is configured)."""
    if client.client_secret_secret:
        assert client.client_id is not None  # the config requires it with a secret
        secret = await ctx.read_secret(client.client_secret_secret)
        return ClientAuth(client.client_id, "client_secret_basic", secret)
    if client.private_key_secret:
        assert client.client_id is not None  # the config requires it with a key
        pem = await ctx.read_secret(client.private_key_secret)
        return ClientAuth(client.client_id, "private_key_jwt", private_key=pem)
    return ClientAuth(client.client_id or "", "none")


class ExchangeDiscovery:
    """What the exchange kinds look up, kept ``DISCOVERY_SECONDS``: an exchange server's token endpoint
    (by its configured issuer) and the resource an upstream's protected resource metadata names."""

    def __init__(self) -> None:
        self._endpoints: dict[str, tuple[float, str]] = {}
        self._resources: dict[str, tuple[float, str | None]] = {}

    async def endpoint(
        self, ctx: OAuthContext, client: ExchangeClient, server: ServerConfig
    ) -> tuple[str, str]:
        """(token endpoint, issuer) of an exchange server: the configured URL, or RFC 8414 discovery
        of the configured issuer (its metadata must name that issuer)."""
        if client.token_url is not None:
            return client.token_url, client.token_url
        assert client.issuer is not None  # the config requires token_url or issuer
        return await self._discovered(ctx, client.issuer, server), client.issuer

    async def _discovered(self, ctx: OAuthContext, issuer: str, server: ServerConfig) -> str:
        assert server.url is not None  # OAuth kinds require an HTTP upstream
        hit = self._endpoints.get(issuer)
        if hit is None or time.monotonic() - hit[0] >= DISCOVERY_SECONDS:
            metadata = await authorization_server_metadata(
                issuer, server.url, allow_private=ctx.allow_private, code_flow=False
            )
            url = checked_endpoint(
                str(metadata.token_endpoint), "token_endpoint", allow_loopback=ctx.allow_private
            )
            hit = self._endpoints[issuer] = (time.monotonic(), url)
        return hit[1]

    async def may_receive(
        self, ctx: OAuthContext, client: ExchangeClient, server: ServerConfig, token: str
    ) -> None:
        """Raise UpstreamAuthorizationError unless the person's inbound ``token`` may go to the
        exchange server ``client`` names (see the module doc): its own issuer's token endpoint, or
        one the operator allows."""
        named = [url for url in (client.issuer, client.token_url) if url is not None]
        if any(_same_url(url, allowed) for url in named for allowed in ctx.exchange_issuers):
            return
        if client.token_url is not None and await self._names_endpoint(
            ctx, ctx.exchange_issuers, client.token_url, server
        ):
            return  # an allowed issuer's token endpoint, named by its URL
        iss = claims_of(token).get("iss")
        issuer = iss if isinstance(iss, str) and iss.startswith(("https://", "http://")) else None
        if issuer is not None and client.issuer is not None and _same_url(client.issuer, issuer):
            return
        if (
            issuer is not None
            and client.token_url is not None
            and await self._names_endpoint(ctx, (issuer,), client.token_url, server)
        ):
            return
        shown = f"issued by {issuer[:200]!r}, " if issuer is not None else "naming no issuer, "
        raise UpstreamAuthorizationError(
            f"{server.name}: the calling person's token ({shown}the identity they signed in to foldgate "
            f"with) is not sent to {named[0][:200]!r}: foldgate sends it only to the token endpoint of "
            "the authorization server that issued it, or to one the operator allows "
            "(FOLDGATE_EXCHANGE_ISSUERS). Point the server's exchange at that issuer, or ask the "
            "operator to allow this one",
            refused_by="foldgate",
            error="destination_not_allowed",
        )

    async def _names_endpoint(
        self, ctx: OAuthContext, issuers: tuple[str, ...], token_url: str, server: ServerConfig
    ) -> bool:
        """Whether one of ``issuers``' metadata names ``token_url`` as its token endpoint."""
        for issuer in issuers:
            try:
                own = await self._discovered(ctx, issuer, server)
            except UpstreamError:
                continue  # no metadata there: nothing names this endpoint as the issuer's
            if _same_url(own, token_url):
                return True
        return False

    async def resource(self, ctx: OAuthContext, server: ServerConfig) -> str:
        """The upstream's RFC 8707 resource: its PRM's, else its URL."""
        assert server.url is not None  # OAuth kinds require an HTTP upstream
        hit = self._resources.get(server.url)
        if hit is None or time.monotonic() - hit[0] >= DISCOVERY_SECONDS:
            challenge = await probe_challenge(server.url, allow_private=ctx.allow_private) or Challenge()
            named = await protected_resource(server.url, challenge, allow_private=ctx.allow_private)
            hit = self._resources[server.url] = (time.monotonic(), named)
        return hit[1] or server.url


async def on_behalf_of(
    ctx: OAuthContext,
    server: ServerConfig,
    auth: TokenExchangeAuth,
    caller: UpstreamCaller,
    found: ExchangeDiscovery,
    *,
    listing: bool,
) -> Exchanged:
    """An access token to ``server`` for ``caller``: the subject token (``listing``: the listing one)
    exchanged at the configured authorization server."""
    source = auth.listing_subject_token if listing and auth.listing_subject_token else auth.subject_token
    subject = await read_token(source, caller, ctx.read_secret, server=server.name)
    if source.inbound:
        await found.may_receive(ctx, auth, server, subject)
    actor = None
    if auth.actor_token is not None:
        actor_token = await read_token(auth.actor_token, caller, ctx.read_secret, server=server.name)
        actor = (actor_token, auth.actor_token.type_urn("access_token"))
    token_url, issuer = await found.endpoint(ctx, auth, server)
    form = exchange_form(
        subject,
        source.type_urn("access_token"),
        requested_token_type=TOKEN_TYPE_URNS[auth.requested_token_type],
        audience=auth.audience,
        resource=auth.resource or await found.resource(ctx, server),
        scope=" ".join(auth.scopes) if auth.scopes else None,
        actor=actor,
    )
    client = await client_of(ctx, auth)
    try:
        token = await request_token(
            token_url,
            form,
            client,
            issuer=issuer,
            allow_private=ctx.allow_private,
            dpop=ctx.dpop(caller.tenant, server),
            exchange=True,
        )
    except TokenRefusedError as exc:
        raise refusal(server.name, "the authorization server", "the token exchange", exc) from None
    if not token.access_token:
        raise UpstreamError(f"{server.name}: the authorization server issued an empty token")
    presented = ctx.present(caller.tenant, token.token_type, token.access_token)
    return token.access_token, token.expires_in, presented
