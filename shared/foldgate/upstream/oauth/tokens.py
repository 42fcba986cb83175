"""The token and revocation endpoints: code exchange, refresh, client credentials, RFC 7009.

Client authentication follows the registration: ``none`` (public client, PKCE), ``client_secret_basic``,
``client_secret_post``, or ``private_key_jwt`` (RFC 7523, the assertion signed by the SDK's
``SignedJWTParameters``). Token answers are parsed with the SDK's ``OAuthToken`` model. A refusal keeps
only the RFC 6749 ``error`` code: ``invalid_grant`` on a refresh means the grant is gone (revoked,
expired, or a rotated token used twice) and the caller must ask for consent, never retry.

With a DPoP prover (``dpop: true``, :mod:`foldgate.upstream.oauth.dpop`) every request carries a
proof; a 400 ``use_dpop_nonce`` with a ``DPoP-Nonce`` is sent once more with that nonce (and a fresh
proof and client assertion). A token issued as ``DPoP`` keeps that type (the SDK's model knows only
Bearer), so it is presented with the DPoP scheme.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from foldgate.errors import UpstreamError
from foldgate.store.grants.base import UpstreamGrant
from foldgate.upstream.oauth.dpop import NONCE_ERROR, DPoPProver
from foldgate.upstream.oauth.http import AuthServerAnswer, post_form

__all__ = ["ClientAuth", "TokenRefusedError", "grant_from", "request_answer", "request_token", "revoke"]


class TokenRefusedError(UpstreamError):
    """The authorization server refused a token request; ``error`` is its RFC 6749 code."""

    def __init__(self, message: str, *, error: str | None) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True, slots=True)
class ClientAuth:
    """How foldgate authenticates as a client at the token endpoint (secrets never logged)."""

    client_id: str
    method: str = "none"
    client_secret: str | None = None
    private_key: str | None = None  # PEM, for private_key_jwt

    def __repr__(self) -> str:
        return f"ClientAuth(client_id={self.client_id!r}, method={self.method!r})"


def _jwt_algorithm(pem: str) -> str:
    # Loaded with the first private_key_jwt client only.
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key = load_pem_private_key(pem.encode(), password=None)
    return "ES256" if isinstance(key, ec.EllipticCurvePrivateKey) else "RS256"


async def _authenticate(
    client: ClientAuth, form: dict[str, str], audience: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The form and headers with the client's credentials applied."""
    form = {**form}
    headers: dict[str, str] = {}
    if client.method == "client_secret_basic" and client.client_secret:
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    elif client.method == "client_secret_post" and client.client_secret:
        form.update(client_id=client.client_id, client_secret=client.client_secret)
    elif client.method == "private_key_jwt" and client.private_key:
        # The SDK's RFC 7523 assertion builder; it loads with the first private_key_jwt client.
        from mcp.client.auth.extensions.client_credentials import SignedJWTParameters

        signer = SignedJWTParameters(
            issuer=client.client_id,
            subject=client.client_id,
            signing_key=client.private_key,
            signing_algorithm=_jwt_algorithm(client.private_key),
            lifetime_seconds=120,
        ).create_assertion_provider()
        form.update(
            client_id=client.client_id,
            client_assertion_type="urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            client_assertion=await signer(audience),
        )
    elif client.method == "none":
        if client.client_id:  # an exchange server or a workload's grant may take no client at all
            form["client_id"] = client.client_id
    else:
        raise UpstreamError(f"client authentication {client.method!r} is not supported or lacks its secret")
    return form, headers


async def _post_token(
    token_url: str,
    form: dict[str, str],
    client: ClientAuth,
    *,
    issuer: str,
    allow_private: bool,
    dpop: DPoPProver | None,
) -> AuthServerAnswer:
    """The token request, with a DPoP proof when ``dpop``; a nonce challenge is answered once."""
    sent: str | None = None
    for _ in range(2):
        body, headers = await _authenticate(client, form, issuer)  # a fresh assertion for a retry
        if dpop is not None:
            sent = dpop.nonce("as", token_url)
            headers["dpop"] = dpop.proof("POST", token_url, nonce=sent)
        answer = await post_form(token_url, body, allow_private=allow_private, headers=headers)
        if dpop is None:
            return answer
        fresh = dpop.note_nonce("as", token_url, answer.dpop_nonce)
        if not (answer.status == 400 and answer.error == NONCE_ERROR and fresh and fresh != sent):
            return answer
    return answer


async def request_token(
    token_url: str,
    form: dict[str, str],
    client: ClientAuth,
    *,
    issuer: str,
    allow_private: bool,
    dpop: DPoPProver | None = None,
) -> Any:
    """POST to the token endpoint; the SDK's ``OAuthToken``, or TokenRefusedError / UpstreamError.
    ``dpop``: prove possession of the tenant's key (the token comes back bound to it)."""
    # The SDK's token model loads with the first token request.
    from mcp.shared.auth import OAuthToken
    from pydantic import ValidationError

    answer = await _post_token(token_url, form, client, issuer=issuer, allow_private=allow_private, dpop=dpop)
    if answer.status != 200:
        raise TokenRefusedError(
            f"the authorization server refused the {form.get('grant_type', 'token')} request "
            f"(HTTP {answer.status}{', ' + answer.error if answer.error else ''})",
            error=answer.error,
        )
    kind = answer.body.get("token_type")
    bound = isinstance(kind, str) and kind.lower() == "dpop"
    if bound and dpop is None:
        raise UpstreamError("the authorization server issued a DPoP token to a request without a proof")
    try:
        token = OAuthToken.model_validate({**answer.body, "token_type": "Bearer"} if bound else answer.body)
    except ValidationError:
        raise UpstreamError("the authorization server's token answer is malformed") from None
    # The SDK's model admits Bearer only: a DPoP-bound token keeps its own type (a copy, unvalidated).
    return token.model_copy(update={"token_type": "DPoP"}) if bound else token


def grant_from(
    token: Any,
    *,
    tenant: str,
    server: str,
    subject: str,
    issuer: str,
    resource: str | None,
    previous: UpstreamGrant | None = None,
    client_id: str | None = None,
) -> UpstreamGrant:
    """The grant to store for a token answer; a refresh answer without a new refresh token keeps the
    old one (RFC 6749 section 6: rotation is the server's choice). ``client_id``: the client it was
    issued to. ``issued_at`` is now (the token's lifetime sets its refresh margin)."""
    now = time.time()
    expires_at = now + token.expires_in if token.expires_in else None
    refresh = token.refresh_token or (previous.refresh_token if previous is not None else None)
    fresh = UpstreamGrant(
        tenant=tenant,
        server=server,
        subject=subject,
        access_token=token.access_token,
        token_type=token.token_type,
        refresh_token=refresh,
        expires_at=expires_at,
        scope=token.scope or (previous.scope if previous is not None else None),
        issuer=issuer,
        resource=resource,
        state="connected",
        updated_at=now,
        client_id=client_id or (previous.client_id if previous is not None else None),
        issued_at=now,
        # A refresh keeps a pending step-up and its reason (the refreshed token has the same scope);
        # a consent ends it.
        step_up=previous.step_up if previous is not None else None,
        reason=previous.reason if previous is not None and previous.step_up else None,
    )
    return replace(fresh, version=previous.version) if previous is not None else fresh


async def revoke(
    url: str, token: str, hint: str, client: ClientAuth, *, issuer: str, allow_private: bool
) -> bool:
    """RFC 7009: ask the authorization server to revoke ``token``; True when it said 200."""
    body, headers = await _authenticate(client, {"token": token, "token_type_hint": hint}, issuer)
    answer = await post_form(url, body, allow_private=allow_private, headers=headers)
    return answer.status == 200


async def request_answer(
    token_url: str, form: dict[str, str], client: ClientAuth, *, issuer: str, allow_private: bool
) -> dict[str, Any]:
    """POST to the token endpoint and return its JSON answer as it is, for answers that are not an
    access token (an RFC 8693 exchange issuing an ID-JAG: ``token_type`` ``N_A``); TokenRefusedError
    when it refused."""
    body, headers = await _authenticate(client, form, issuer)
    answer = await post_form(token_url, body, allow_private=allow_private, headers=headers)
    if answer.status != 200:
        raise TokenRefusedError(
            f"the authorization server refused the {form.get('grant_type', 'token')} request "
            f"(HTTP {answer.status}{', ' + answer.error if answer.error else ''})",
            error=answer.error,
        )
    return answer.body
