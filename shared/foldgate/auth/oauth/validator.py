"""JWT access-token validation (RFC 9068 profile) with PyJWT: signature, issuer, audience, lifetime.

What is refused, and why it matters:

* any ``alg`` outside the tenant's asymmetric list (RS256/ES256/EdDSA): ``none`` and HS256 are never
  accepted, so a token "signed" with nothing, or HMAC-signed with the issuer's public key as the secret
  (algorithm confusion), fails before any key is looked at; the key used is bound to its algorithm;
* a ``kid`` the JWKS does not hold after one bounded refresh (:class:`~foldgate.auth.oauth.jwks.JwksCache`);
* a bad signature, a wrong ``iss``, an ``aud`` that names neither the tenant's audience nor this very
  endpoint (RFC 8707: a token minted for another resource is never passed through), ``exp`` in the
  past or ``nbf``/``iat`` in the future beyond a small leeway; ``exp``, ``iss`` and ``aud`` are required.

Every refusal is a :class:`TokenRejected` whose reason is for the log only; the edge answers one
uniform 401.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import jwt

from foldgate.auth.oauth.jwks import JwksCache

__all__ = ["MAX_TOKEN_CHARS", "TokenRejected", "TokenValidator"]

# Real access tokens are well under 8 KB; anything far larger is not worth parsing.
MAX_TOKEN_CHARS: Final = 16_384


class TokenRejected(Exception):
    """A bearer token that does not validate; ``reason`` is for logs, never for the caller."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TokenValidator:
    """Validates access tokens of one issuer against its JWKS."""

    def __init__(
        self,
        jwks: JwksCache,
        *,
        issuer: str,
        algorithms: Iterable[str],
        leeway: float = 30.0,
    ) -> None:
        self.jwks = jwks
        self.issuer = issuer
        self.algorithms = tuple(algorithms)
        self.leeway = leeway

    async def validate(
        self, token: str, audiences: Iterable[str], *, audience_claim: str = "aud"
    ) -> dict[str, Any]:
        """The token's claims when it is valid for one of ``audiences``; TokenRejected otherwise.

        ``audience_claim`` ``client_id`` matches ``audiences`` against that claim instead of ``aud``
        (Cognito access tokens carry no ``aud``) and refuses an ID token (``token_use`` not access).
        """
        if len(token) > MAX_TOKEN_CHARS or token.count(".") != 2:
            raise TokenRejected("not a compact JWS")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRejected(f"unreadable header ({type(exc).__name__})") from exc
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise TokenRejected(f"algorithm {str(alg)[:20]!r} is not allowed")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise TokenRejected("kid is not a string")
        key = await self.jwks.key(kid, alg)
        if key is None:
            raise TokenRejected("no key for the token's kid")
        by_client = audience_claim == "client_id"
        accepted = list(audiences)
        options: dict[str, Any] = {"require": ["exp", "iss", audience_claim], "verify_aud": not by_client}
        try:
            claims = jwt.decode(
                token, key, algorithms=[alg], audience=None if by_client else accepted, issuer=self.issuer,
                leeway=self.leeway, options=options,  # type: ignore[arg-type]
            )  # fmt: skip
        except jwt.PyJWTError as exc:
            raise TokenRejected(f"{type(exc).__name__}") from exc
        if not isinstance(claims, dict):
            raise TokenRejected("claims are not an object")
        if by_client:
            if claims.get("client_id") not in accepted:
                raise TokenRejected("client_id is not an allowed client")
            if claims.get("token_use", "access") != "access":
                raise TokenRejected("not an access token")
        return claims
