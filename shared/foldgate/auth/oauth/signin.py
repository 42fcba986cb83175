"""Signing a person in at their tenant's own issuer before they connect a per-user upstream.

A per-user connect link names the subject whose grant it fills. In a tenant with inbound OAuth that
subject is a person at the tenant's issuer, so before the consent foldgate asks the person to prove
it: an OpenID Connect authorization-code flow with PKCE (S256) as the public client ``oauth.login``
names, then the ID token is validated with PyJWT (signature against the issuer's JWKS, ``iss``,
``aud`` and ``azp``, ``exp``/``iat``, the ``nonce`` foldgate sent) and the signed-in subject must equal
the link's. The flow's state lives in the grant store as a pending consent of purpose ``login`` (the
callback may reach another instance), bound to the browser that confirmed the link.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final
from urllib.parse import urlencode

from foldgate.auth.oauth.grant import oauth_subject
from foldgate.auth.oauth.jwks import JwksCache
from foldgate.auth.oauth.metadata import IssuerMetadata, discover_issuer
from foldgate.config.oauth import OAuthConfig
from foldgate.errors import AuthError, NotFoundError, UpstreamError
from foldgate.store.grants.base import GrantStore, PendingConsent
from foldgate.upstream.oauth.fetch import guarded_fetcher

__all__ = ["MISMATCH", "SIGNIN_SECONDS", "KeyFor", "finish_sign_in", "start_sign_in", "validate_id_token"]

# As long as an upstream consent may take: signing in and approving are the same kind of errand.
SIGNIN_SECONDS: Final = 600.0
_MAX_ID_TOKEN: Final = 16_384
MISMATCH: Final = (
    "you signed in as someone other than the person this link was made for: nothing was connected. "
    "Sign in as the user the agent acts for, with a new link (call the tool again)."
)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


async def _issuer(config: OAuthConfig, *, allow_private: bool) -> IssuerMetadata:
    # The endpoints come from discovery even when the config pins jwks_uri (it pins keys, not endpoints).
    found = await discover_issuer(
        config.model_copy(update={"jwks_uri": None}), guarded_fetcher(allow_private=allow_private),
        allow_loopback=allow_private,
    )  # fmt: skip
    if found.authorization_endpoint is None or found.token_endpoint is None:
        raise UpstreamError("the tenant's issuer publishes no usable authorization or token endpoint")
    return found


async def start_sign_in(
    store: GrantStore,
    config: OAuthConfig,
    *,
    tenant: str,
    server: str,
    subject: str,
    browser: str,
    redirect_uri: str,
    allow_private: bool,
) -> str:
    """The issuer's authorization URL for signing in as ``subject`` before connecting ``server``.

    ``browser`` is the hash of the browser cookie the callback must present.
    AuthError without ``config.login``; UpstreamError when the issuer cannot be used.
    """
    if config.login is None:
        raise AuthError("this tenant has no sign-in client (oauth.login) for per-user connects")
    found = await _issuer(config, allow_private=allow_private)
    state, nonce, verifier = secrets.token_urlsafe(32), secrets.token_urlsafe(24), secrets.token_urlsafe(48)
    store.put_pending(
        PendingConsent(
            state=state, tenant=tenant, server=server, subject=subject, code_verifier=verifier,
            redirect_uri=redirect_uri, issuer=config.issuer, resource=None, scope="openid",
            expires_at=time.time() + SIGNIN_SECONDS, browser=browser, purpose="login", nonce=nonce,
        )
    )  # fmt: skip
    query = {
        "response_type": "code",
        "client_id": config.login.client_id,
        "redirect_uri": redirect_uri,
        "scope": "openid",
        "state": state,
        "nonce": nonce,
        "code_challenge": _b64(hashlib.sha256(verifier.encode("ascii")).digest()),
        "code_challenge_method": "S256",
        # The person must sign in now: a session left in a shared browser must not stand in for them.
        "prompt": "login",
    }
    endpoint = found.authorization_endpoint or ""
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"


async def _id_token(found: IssuerMetadata, pending: PendingConsent, code: str, client_id: str,
                    *, allow_private: bool) -> str:  # fmt: skip
    # The token endpoint helper (SSRF-guarded, capped) loads with the first sign-in.
    from foldgate.upstream.oauth.http import post_form

    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.code_verifier, "client_id": client_id}  # fmt: skip
    answer = await post_form(found.token_endpoint or "", form, allow_private=allow_private)
    if answer.status != 200:
        raise UpstreamError(f"the tenant's issuer refused the sign-in (HTTP {answer.status})")
    token = answer.body.get("id_token")
    if not isinstance(token, str) or not token:
        raise UpstreamError("the tenant's issuer answered no ID token")
    return token


KeyFor = Callable[[str | None, str], Awaitable[Any]]
"""``key_for(kid, alg)`` -> the issuer's PyJWK for that kid and algorithm, or None."""


async def validate_id_token(
    token: str, *, config: OAuthConfig, client_id: str, nonce: str, key_for: KeyFor
) -> dict[str, Any]:
    """The claims of an OpenID Connect ID token from ``config.issuer`` for ``client_id`` carrying
    ``nonce``; AuthError (one message) for anything else: a signature by no key of the issuer, an
    algorithm the config does not allow, another ``iss`` or ``aud``, an ``azp`` naming another client,
    expired (``leeway_seconds`` of skew), no ``sub``, or another nonce (a replayed token)."""
    # PyJWT loads with the first sign-in, not with every cold start.
    import jwt

    refused = AuthError("the sign-in's ID token is not valid: sign in again with a new link")
    if not token or len(token) > _MAX_ID_TOKEN:
        raise refused
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise refused from None
    alg, kid = header.get("alg"), header.get("kid")
    if alg not in config.algorithms or (kid is not None and not isinstance(kid, str)):
        raise refused
    key = await key_for(kid, alg)
    if key is None:
        raise refused
    try:
        claims: dict[str, Any] = jwt.decode(
            token, key, algorithms=[alg], audience=client_id, issuer=config.issuer,
            leeway=config.leeway_seconds, options={"require": ["iss", "sub", "aud", "exp", "iat"]},
        )  # fmt: skip
    except jwt.PyJWTError:
        raise refused from None
    audience = claims.get("aud")
    # OpenID Connect Core 3.1.3.7: with several audiences azp must be present, and it names this client.
    if isinstance(audience, list) and len(audience) > 1 and "azp" not in claims:
        raise refused
    if "azp" in claims and claims.get("azp") != client_id:
        raise refused
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise refused
    sent = nonce.encode()
    if not sent or not hmac.compare_digest(str(claims.get("nonce", "")).encode(), sent):
        raise refused
    return claims


async def finish_sign_in(
    store: GrantStore,
    configs: Callable[[str], OAuthConfig | None],
    *,
    state: str,
    code: str,
    iss: str | None,
    browser: str | None,
    allow_private: bool,
) -> PendingConsent:
    """Complete the sign-in ``state`` names; the pending sign-in (tenant, server, subject, browser)
    when the signed-in person is the link's subject.

    NotFoundError for an unknown, used or expired state; AuthError when the browser is not the one
    that confirmed the link, the ID token is invalid, or the person is someone else (:data:`MISMATCH`);
    UpstreamError when the issuer refuses or cannot be reached.
    """
    pending = store.take_pending(state)
    if pending is None or pending.purpose != "login" or pending.expires_at < time.time():
        raise NotFoundError("unknown or expired sign-in: open a new connect link")
    if pending.browser is None or browser is None or not hmac.compare_digest(pending.browser, browser):
        raise AuthError("this sign-in was started in another browser: open a new connect link in this one")
    config = configs(pending.tenant)
    if config is None or config.login is None or config.issuer != pending.issuer:
        raise NotFoundError("the tenant's sign-in is no longer configured: open a new connect link")
    found = await _issuer(config, allow_private=allow_private)
    # RFC 9207: an issuer that says it sends iss must send its own (a mix-up otherwise).
    if (iss is not None or found.iss_parameter_supported) and iss != config.issuer:
        raise AuthError("the sign-in answer names another issuer: nothing was connected")
    client_id = config.login.client_id
    token = await _id_token(found, pending, code, client_id, allow_private=allow_private)
    jwks_uri = config.jwks_uri or found.jwks_uri

    async def uri() -> str:
        return jwks_uri

    keys = JwksCache(guarded_fetcher(allow_private=allow_private), uri, algorithms=config.algorithms)
    claims = await validate_id_token(
        token, config=config, client_id=client_id, nonce=pending.nonce or "", key_for=keys.key
    )
    if oauth_subject(config.issuer, claims["sub"]) != pending.subject:
        raise AuthError(MISMATCH)
    return pending
