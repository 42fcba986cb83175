"""Authorization code + PKCE (S256) with the RFC 8707 ``resource``, across stateless instances.

:func:`start_consent` discovers, picks the client, and stores everything the callback needs as a
:class:`PendingConsent` keyed by a random ``state`` (the connect request and the callback may reach
different Lambda instances); it answers the authorization URL. :func:`finish_consent` takes that
pending consent exactly once, checks the RFC 9207 ``iss`` parameter, exchanges the code and stores the
grant with a conditional write (an ``invalid_client`` answer means the authorization server forgot
foldgate's registered client: foldgate registers again and asks for a new connect).
:func:`disconnect` forgets a grant and revokes it (RFC 7009) where the authorization server offers
revocation, only at the grant's own issuer: when discovery names another one now, nothing is sent.

No token request is sent before the person consents (the conformance suite counts one as a defect,
and it would spend a request on every connect): a client the authorization server forgot is found at
the code exchange (``invalid_client``), registered again once, and the person connects again.
:func:`check_iss` is RFC 9207's exact comparison (the SDK's, with foldgate's error).

PKCE comes from the SDK's ``PKCEParameters`` (``secrets``-generated verifier); ``state`` from
``secrets.token_urlsafe``.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Final
from urllib.parse import urlencode

from foldgate.config.tenant import ServerConfig
from foldgate.errors import AuthError, ConfigError, FoldgateError, NotFoundError, UpstreamError
from foldgate.store.grants.base import PendingConsent, UpstreamGrant
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import Discovered
from foldgate.upstream.oauth.http import checked_endpoint
from foldgate.upstream.oauth.registration import client_auth
from foldgate.upstream.oauth.renewal import FORGOTTEN_REASON
from foldgate.upstream.oauth.tokens import TokenRefusedError, grant_from, request_token, revoke

__all__ = ["CONSENT_SECONDS", "check_iss", "disconnect", "finish_consent", "start_consent", "store_grant"]

log = logging.getLogger(__name__)

# Long enough to sign in and approve; short enough that a leaked state is soon useless.
CONSENT_SECONDS: Final = 600.0


def _scope(server: ServerConfig, discovered_scope: str | None, extra: str | None) -> str | None:
    # The SDK's scope union (step-up keeps what was granted before) loads with the first consent.
    from mcp.client.auth.utils import union_scopes

    configured = getattr(server.auth, "scopes", None)
    base = " ".join(configured) if configured else discovered_scope
    return union_scopes(base, extra)


async def start_consent(
    ctx: OAuthContext,
    tenant: str,
    server: ServerConfig,
    subject: str,
    *,
    extra_scope: str | None = None,
    return_to: str | None = None,
    browser: str | None = None,
) -> str:
    """Begin a consent for (tenant, server, subject): the authorization URL to send a person to.

    ``browser``: the hash of the cookie of the browser that confirmed a per-user connect link; the
    callback must then present that cookie (None: an operator's connect, not bound to a browser).
    """
    # The SDK's PKCE generator loads with the first consent.
    from mcp.client.auth.oauth2 import PKCEParameters

    if server.auth.kind not in ("oauth", "per_user"):
        raise ConfigError(f"server {server.name!r} has auth kind {server.auth.kind!r}: nothing to connect")
    found = await ctx.discovered(server)
    # No token request before the person consents: a client the authorization server forgot shows at
    # the code exchange (invalid_client), where foldgate registers again once.
    client = await ctx.client(tenant, server, found)
    endpoint = checked_endpoint(
        found.endpoint("authorization_endpoint"), "authorization_endpoint", allow_loopback=ctx.allow_private
    )
    pkce = PKCEParameters.generate()
    state = secrets.token_urlsafe(32)
    scope = _scope(server, found.scope, extra_scope)
    ctx.store.put_pending(
        PendingConsent(
            state=state,
            tenant=tenant,
            server=server.name,
            subject=subject,
            code_verifier=pkce.code_verifier,
            redirect_uri=ctx.redirect_uri,
            issuer=found.issuer,
            resource=found.resource,
            scope=scope,
            expires_at=time.time() + CONSENT_SECONDS,
            return_to=return_to,
            browser=browser,
        )
    )
    query = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": ctx.redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
    }
    if found.resource:  # None: a 2025-03-26 upstream, whose server predates resource indicators in MCP
        query["resource"] = found.resource
    if scope:
        query["scope"] = scope
    prover = ctx.dpop(tenant, server)
    if prover is not None:  # RFC 9449 section 10: the code is bound to the key that will redeem it
        query["dpop_jkt"] = prover.thumbprint
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"


def check_iss(iss: str | None, found: Discovered) -> None:
    """RFC 9207: the authorization response's ``iss`` must be the flow's issuer, compared as a plain
    string (no case folding, no trailing-slash or port normalisation, section 2.4), whether or not the
    server advertised the parameter; absent, it is refused only where the server advertised it
    (``authorization_response_iss_parameter_supported``). A refusal is a mix-up attack or a
    misconfigured server: the code is never sent anywhere. The SDK's check, with foldgate's error."""
    # The SDK's RFC 9207 check loads with the first callback.
    from mcp.client.auth.utils import validate_authorization_response_iss

    try:
        validate_authorization_response_iss(iss, found.metadata)
    except Exception:  # the SDK's OAuthFlowError (its message echoes the hostile iss: not kept)
        if iss is None:
            raise UpstreamError(
                "authorization response refused: the authorization server advertises the iss "
                "parameter (RFC 9207) but its response carried none"
            ) from None
        raise UpstreamError(
            "authorization response refused: its iss parameter does not name the authorization server "
            f"the consent began with ({found.issuer[:200]}); RFC 9207, a possible mix-up"
        ) from None


def store_grant(ctx: OAuthContext, grant: UpstreamGrant) -> UpstreamGrant:
    """Write ``grant`` over whatever is stored now (a new consent wins over any older grant)."""
    for _ in range(3):
        current = ctx.store.get_grant(grant.tenant, grant.server, grant.subject)
        stored = ctx.store.put_grant(replace(grant, version=current.version if current else 0))
        if stored is not None:
            ctx.remember((grant.tenant, grant.server, grant.subject), stored)
            return stored
    raise UpstreamError(f"{grant.server}: could not store the grant (concurrent writers)")


async def finish_consent(
    ctx: OAuthContext,
    state: str,
    code: str,
    iss: str | None,
    servers: Callable[[str, str], ServerConfig | None],
    *,
    browser: str | None = None,
) -> PendingConsent:
    """Complete the consent ``state`` names: exchange ``code`` and store the grant.

    ``servers(tenant, name)`` is the server's current config; ``browser`` the hash of the callback
    request's browser cookie. Raises NotFoundError for an unknown, used or expired state, AuthError
    for a browser-bound consent reaching another browser (the consent is then spent: nobody can finish
    it), UpstreamError when the authorization server refuses.
    """
    pending = ctx.store.take_pending(state)
    if pending is None or pending.purpose != "consent" or pending.expires_at < time.time():
        raise NotFoundError("unknown or expired consent: start again with the connect route")
    # A per-user consent completes only in the browser that confirmed its link: a victim lured into
    # finishing someone else's flow, or a replayed callback, has no (or another) cookie.
    if pending.browser is not None and (browser is None or not hmac.compare_digest(pending.browser, browser)):
        raise AuthError("this connection was started in another browser: open a new connect link in this one")
    server = servers(pending.tenant, pending.server)
    if server is None or server.auth.kind not in ("oauth", "per_user"):
        raise NotFoundError("the server of this consent is no longer configured for OAuth")
    found = await ctx.discovered(server)
    if not found.issued(pending.issuer):  # the code and its verifier go only to the flow's own issuer
        raise UpstreamError("the upstream's authorization server changed during the consent; connect again")
    check_iss(iss, found)
    client = await ctx.client(pending.tenant, server, found)
    token_url = checked_endpoint(
        found.endpoint("token_endpoint"), "token_endpoint", allow_loopback=ctx.allow_private
    )
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "code_verifier": pending.code_verifier,
    }
    if pending.resource:
        form["resource"] = pending.resource
    try:
        token = await request_token(
            token_url, form, client_auth(client), issuer=found.issuer, allow_private=ctx.allow_private,
            dpop=ctx.dpop(pending.tenant, server),
        )  # fmt: skip
    except TokenRefusedError as exc:
        if exc.error != "invalid_client":
            raise
        # The authorization server forgot foldgate's client between the authorize step and now.
        await ctx.forget_client(server, found, client)
        raise UpstreamError(f"{server.name}: {FORGOTTEN_REASON}") from None
    grant = grant_from(
        token,
        tenant=pending.tenant,
        server=pending.server,
        subject=pending.subject,
        issuer=found.issuer,
        resource=pending.resource,
        client_id=client.client_id,
    )
    if grant.scope is None and pending.scope:
        grant = replace(grant, scope=pending.scope)  # RFC 6749 5.1: omitted scope means as requested
    store_grant(ctx, grant)
    return pending


async def disconnect(ctx: OAuthContext, tenant: str, server: ServerConfig, subject: str) -> dict[str, bool]:
    """Forget the grant and revoke its tokens where the authorization server offers RFC 7009."""
    grant = ctx.store.get_grant(tenant, server.name, subject)
    revoked = False
    if grant is not None:
        try:
            found = await ctx.discovered(server)
            if not found.issued(grant.issuer):
                # The token (and a confidential client's secret) go only to the server that issued it.
                raise UpstreamError(
                    "the upstream now names another authorization server than the grant's issuer: "
                    "nothing sent"
                )
            url = found.endpoint("revocation_endpoint")
            if url is not None:
                url = checked_endpoint(url, "revocation_endpoint", allow_loopback=ctx.allow_private)
                auth = client_auth(await ctx.client(tenant, server, found))
                token, hint = (
                    (grant.refresh_token, "refresh_token")
                    if grant.refresh_token
                    else (grant.access_token, "access_token")
                )
                revoked = await revoke(
                    url, token, hint, auth, issuer=found.issuer, allow_private=ctx.allow_private
                )
        except FoldgateError as exc:
            # Forgetting the grant is what the operator asked for; revocation is best effort.
            log.warning("%s/%s: revocation failed: %s", tenant, server.name, exc.message)
    deleted = ctx.store.delete_grant(tenant, server.name, subject)
    ctx.remember((tenant, server.name, subject), None)
    return {"disconnected": deleted, "revoked": revoked}
