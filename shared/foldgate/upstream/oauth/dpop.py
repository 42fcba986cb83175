"""DPoP proofs (RFC 9449): a tenant's key proves possession of the tokens it binds, request by request.

With ``dpop: true`` on a server's ``auth:`` block, every token request (code exchange, refresh,
client credentials) and every request to the upstream carries a ``DPoP`` header: a JWT signed with the
tenant's key (ES256, P-256), its public key in the ``jwk`` header and ``typ: dpop+jwt``, with claims

* ``htm``, ``htu``: the request's method and URL without query or fragment (section 4.2);
* ``iat``: now; ``jti``: 128 random bits, so no two proofs share one (servers refuse a replay);
* ``ath``: base64url(SHA-256(access token)) on requests that present a token (section 7.1);
* ``nonce``: the latest one the server handed out, when it did (sections 8 and 9).

Nonces are remembered per origin, the authorization server's apart from the resource server's, and
updated from every answer's ``DPoP-Nonce`` header; a ``use_dpop_nonce`` refusal is retried once with
the nonce it carried (by the caller: ``tokens`` for token requests, ``dpop_keys`` for the upstream).

JOSE through PyJWT, the project's JOSE library. A proof is a credential for its request: never logged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any, Final, Literal
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "ALGORITHM",
    "KEY_NAME",
    "NONCE_ERROR",
    "DPoPProver",
    "Role",
    "access_token_hash",
    "new_key_pem",
    "proof_url",
]

ALGORITHM: Final = "ES256"
# The name the tenant's DPoP key is stored under (GrantStore.add_key / get_key).
KEY_NAME: Final = "dpop"
# The error a server answers when a proof must carry (another) nonce (RFC 9449 sections 8 and 9).
NONCE_ERROR: Final = "use_dpop_nonce"
# RFC 9449 section 8: a nonce is 1*NQCHAR (visible ASCII but '"' and '\'); anything else is ignored.
_MAX_NONCE: Final = 512
_ORIGINS: Final = 256  # nonces remembered per role; an instance talks to a handful of origins

Role = Literal["as", "rs"]
"""Whose nonce: the authorization server's (token requests) or the resource server's (MCP requests)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def access_token_hash(token: str) -> str:
    """``ath``: base64url(SHA-256(access token)), RFC 9449 section 4.2 (tokens are ASCII, RFC 6750)."""
    return _b64(hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest())


def proof_url(url: str) -> str:
    """``htu``: the request URL without its query and fragment."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _usable_nonce(value: str | None) -> bool:
    return (
        value is not None
        and 0 < len(value) <= _MAX_NONCE
        and all(0x21 <= ord(c) <= 0x7E and c not in '"\\' for c in value)
    )


def new_key_pem() -> str:
    """A new P-256 private key as unencrypted PKCS#8 PEM (the grant store seals it)."""
    # cryptography loads with the first DPoP key made, not at init.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


class DPoPProver:
    """One tenant's DPoP key and the nonces servers gave it; makes one proof per request."""

    def __init__(self, pem: str) -> None:
        # PyJWT and cryptography load with the first DPoP proof, not at init.
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
        from jwt.algorithms import ECAlgorithm

        key = load_pem_private_key(pem.encode("ascii"), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
            raise ValueError("a DPoP key must be an EC P-256 private key")
        self._key = key
        public = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
        # Only the public members, in the order RFC 7638 hashes them (no 'd', ever).
        self.jwk: dict[str, str] = {m: str(public[m]) for m in ("crv", "kty", "x", "y")}
        canonical = json.dumps(self.jwk, separators=(",", ":"), sort_keys=True).encode("ascii")
        self.thumbprint = _b64(hashlib.sha256(canonical).digest())  # the tokens' cnf.jkt
        self._nonces: dict[Role, dict[str, str]] = {"as": {}, "rs": {}}

    def __repr__(self) -> str:
        return f"DPoPProver(jkt={self.thumbprint!r})"

    def proof(
        self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
    ) -> str:
        """A fresh proof for ``method`` ``url`` (``ath`` when presenting ``access_token``)."""
        # PyJWT loads with the first DPoP proof, not at init.
        import jwt

        claims: dict[str, Any] = {
            "jti": _b64(secrets.token_bytes(16)),
            "htm": method.upper(),
            "htu": proof_url(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "jwk": self.jwk}
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers=header)

    def nonce(self, role: Role, url: str) -> str | None:
        """The latest nonce ``role``'s server at ``url``'s origin handed out, if any."""
        return self._nonces[role].get(_origin(url))

    def note_nonce(self, role: Role, url: str, value: str | None) -> str | None:
        """Remember a ``DPoP-Nonce`` the server at ``url`` sent (any answer may carry one); returns it
        when usable, else None (absent or malformed: the previous one stays)."""
        if not _usable_nonce(value):
            return None
        assert value is not None  # _usable_nonce checked it
        remembered = self._nonces[role]
        if len(remembered) >= _ORIGINS and _origin(url) not in remembered:
            remembered.pop(next(iter(remembered)))  # the oldest origin goes
        remembered[_origin(url)] = value
        return value
