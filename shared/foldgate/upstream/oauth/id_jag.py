"""Enterprise-Managed Authorization (SEP-990, the ``id_jag`` kind): two exchanges, no consent screen.

1. Discovery (the existing code, without the PKCE requirement of the code flow): the upstream's
   protected resource metadata names its ``resource`` and authorization server; that server's metadata
   names its ``issuer`` and token endpoint. An ``issuer`` in the config pins it.
2. At the enterprise IdP, RFC 8693::

       grant_type=urn:ietf:params:oauth:grant-type:token-exchange
       requested_token_type=urn:ietf:params:oauth:token-type:id-jag
       audience=<the upstream AS's issuer>
       resource=<exactly the resource of the upstream's PRM>
       subject_token=<the person's identity>  subject_token_type=...:id_token (or as configured)
       scope=<configured, else what the upstream names>

   The answer's ``access_token`` is the ID-JAG (``issued_token_type`` ``...:id-jag``).
3. At the upstream's authorization server, RFC 7523: ``grant_type=...:jwt-bearer``, ``assertion`` the
   ID-JAG, ``resource`` and ``scope`` as above, authenticated with ``client_secret_basic`` as the
   configured client, which must be the ID-JAG's ``client_id`` (checked before it is sent, so a
   mis-mapped IdP is named as such). No dynamic registration, even where the server offers it.
   With ``dpop: true`` this request carries a DPoP proof (RFC 9449 binds the access token to the key
   at the request that issues it) and a ``DPoP``-typed token is presented with the DPoP scheme. The
   IdP's exchange carries none: the ID-JAG is an assertion spent on the next request, never presented
   to the upstream, so a proof there would bind nothing foldgate sends with it.

The ID-JAG lives only in this function's frame: used once, never stored, logged or put in an error.
Its claims are read without verifying its signature (foldgate is not its audience; the upstream's
authorization server verifies it): only to name a client mismatch or an expired grant.
"""

from __future__ import annotations

import time
from typing import Final

from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import IdJagAuth
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.model.caller import UpstreamCaller
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import Challenge, Discovered
from foldgate.upstream.oauth.exchange import (
    Exchanged,
    ExchangeDiscovery,
    claims_of,
    client_of,
    exchange_form,
    refusal,
)
from foldgate.upstream.oauth.http import checked_endpoint
from foldgate.upstream.oauth.sources import read_token
from foldgate.upstream.oauth.tokens import ClientAuth, TokenRefusedError, request_answer, request_token

__all__ = ["ID_JAG_TYPE", "JWT_BEARER_GRANT", "claims_of", "id_jag_token"]

ID_JAG_TYPE: Final = "urn:ietf:params:oauth:token-type:id-jag"
# The SDK's constant (mcp.shared.auth.JWT_BEARER_GRANT_TYPE), spelled out: this module loads without it.
JWT_BEARER_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def _same_issuer(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


async def _upstream_as(
    ctx: OAuthContext, server: ServerConfig, auth: IdJagAuth, challenge: Challenge | None
) -> tuple[Discovered, str]:
    """The upstream's authorization setup and its token endpoint, the pin honoured."""
    found = await ctx.discovered(server, challenge)
    if auth.issuer is not None and not _same_issuer(found.issuer, auth.issuer):
        raise UpstreamError(
            f"{server.name}: the upstream names authorization server {found.issuer[:200]!r}, not the "
            f"configured issuer {auth.issuer!r}: no ID-JAG or client secret is sent there"
        )
    token_url = checked_endpoint(
        found.endpoint("token_endpoint"), "token_endpoint", allow_loopback=ctx.allow_private
    )
    return found, token_url


async def _id_jag(
    ctx: OAuthContext,
    server: ServerConfig,
    auth: IdJagAuth,
    idp: tuple[str, str],
    subject: tuple[str, str],
    form: dict[str, str],
    *,
    issuer: str,
) -> str:
    """Leg 1: the ID-JAG from the IdP (its token endpoint, issuer) for ``subject`` (token, type URN),
    checked to be for foldgate's client at the authorization server ``issuer`` it will be sent to."""
    idp_url, idp_issuer = idp
    exchange = exchange_form(
        *subject,
        requested_token_type=ID_JAG_TYPE,
        audience=form["audience"],
        resource=form["resource"],
        scope=form.get("scope"),
    )
    answer = await request_answer(
        idp_url, exchange, await client_of(ctx, auth.idp), issuer=idp_issuer, allow_private=ctx.allow_private
    )
    grant = answer.get("access_token")
    issued = answer.get("issued_token_type")
    if not isinstance(grant, str) or not grant or (issued is not None and issued != ID_JAG_TYPE):
        raise UpstreamError(f"{server.name}: the IdP's answer is not an ID-JAG")
    claims = claims_of(grant)
    # SEP-990: an ID-JAG is a JWT naming its client and audience. Anything else (an opaque string, the
    # subject token echoed back) is never sent, nor the client secret with it.
    named, audience = claims.get("client_id"), claims.get("aud")
    if not isinstance(named, str):
        raise UpstreamError(f"{server.name}: the IdP's answer is not an ID-JAG (no JWT naming its client)")
    if named != auth.client_id:
        shown = f" {named[:100]!r}" if named.isprintable() and named not in subject[0] else ""
        raise UpstreamAuthorizationError(
            f"{server.name}: the IdP issued the ID-JAG for another client{shown}, but foldgate's client "
            f"at the upstream's authorization server is {auth.client_id!r}: map that client to it at the IdP"
        )
    audiences = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
    if not any(isinstance(a, str) and _same_issuer(a, issuer) for a in audiences):
        raise UpstreamError(
            f"{server.name}: the IdP issued the ID-JAG for another audience than the upstream's "
            f"authorization server {issuer[:200]!r}: it is not sent there"
        )
    expires = claims.get("exp")
    if isinstance(expires, int | float) and expires <= time.time():
        raise UpstreamError(f"{server.name}: the IdP issued an ID-JAG that has already expired")
    return grant


async def id_jag_token(
    ctx: OAuthContext,
    server: ServerConfig,
    auth: IdJagAuth,
    caller: UpstreamCaller,
    found: ExchangeDiscovery,
    *,
    listing: bool,
    challenge: Challenge | None = None,
) -> Exchanged:
    """An access token to ``server`` for ``caller`` by way of an ID-JAG (``listing``: the listing
    subject token); ``challenge``: the 401's, which discovers again. TokenRefusedError says which
    server refused (its message names the IdP's or the authorization server's grant)."""
    source = auth.listing_subject_token if listing and auth.listing_subject_token else auth.subject_token
    subject = await read_token(source, caller, ctx.read_secret, server=server.name)
    if source.inbound:  # the person's own token: only to its issuer or an operator-allowed IdP
        await found.may_receive(ctx, auth.idp, server, subject)
    upstream, token_url = await _upstream_as(ctx, server, auth, challenge)
    idp = await found.endpoint(ctx, auth.idp, server)
    assert server.url is not None  # OAuth kinds require an HTTP upstream
    resource = auth.resource or upstream.resource or server.url
    scope = " ".join(auth.scopes) if auth.scopes else upstream.scope
    shared = {"resource": resource, **({"scope": scope} if scope else {})}
    try:
        grant = await _id_jag(
            ctx,
            server,
            auth,
            idp,
            # The inbound identity foldgate verified is an access token; a source hands an ID token.
            (subject, source.type_urn("access_token" if source.inbound else "id_token")),
            {"audience": auth.audience or upstream.issuer, **shared},
            issuer=upstream.issuer,
        )
    except TokenRefusedError as exc:
        raise refusal(server.name, "the enterprise IdP", "the ID-JAG exchange", exc) from None
    secret = await ctx.read_secret(auth.client_secret_secret)
    client = ClientAuth(auth.client_id, "client_secret_basic", secret)
    form = {"grant_type": JWT_BEARER_GRANT, "assertion": grant, **shared}
    del grant  # the ID-JAG is spent with this request: nothing keeps it
    try:
        token = await request_token(
            token_url,
            form,
            client,
            issuer=upstream.issuer,
            allow_private=ctx.allow_private,
            dpop=ctx.dpop(caller.tenant, server),
        )
    except TokenRefusedError as exc:
        raise refusal(
            server.name, "the upstream's authorization server", "the ID-JAG (JWT bearer grant)", exc
        ) from None
    finally:
        form.clear()
    presented = ctx.present(caller.tenant, token.token_type, token.access_token)
    return token.access_token, token.expires_in, presented
