"""An in-memory authorization server for the OAuth unit tests: real keys, real signatures, and the
documents a real issuer serves (discovery, JWKS), answered by a fetch function that counts its calls."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

ISSUER = "https://login.example.com/tenant-a"
RESOURCE = "https://mcp.example.com"


def _jwk(alg: str, key: Any, kid: str) -> dict[str, Any]:
    algo = {"RS256": RSAAlgorithm, "ES256": ECAlgorithm, "EdDSA": OKPAlgorithm}[alg]
    public = algo.to_jwk(key.public_key(), as_dict=True)
    return {**public, "kid": kid, "alg": alg, "use": "sig"}


def new_key(alg: str) -> Any:
    """A fresh private key for ``alg``."""
    if alg == "RS256":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if alg == "ES256":
        return ec.generate_private_key(ec.SECP256R1())
    return ed25519.Ed25519PrivateKey.generate()


@dataclass
class FakeIssuer:
    """Signs tokens with one key per algorithm and serves its JWKS and discovery documents."""

    issuer: str = ISSUER
    keys: dict[str, tuple[str, Any]] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)
    documents: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for alg in ("RS256", "ES256", "EdDSA"):
            self.keys[alg] = (f"{alg.lower()}-{secrets.token_hex(3)}", new_key(alg))
        self.publish()

    @property
    def jwks_uri(self) -> str:
        return self.issuer + "/keys"

    def publish(self) -> None:
        """(Re)serve the discovery document and the JWKS of the current keys."""
        self.documents[self.issuer + "/.well-known/openid-configuration"] = {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_uri,
        }
        self.documents[self.jwks_uri] = {"keys": [_jwk(a, k, kid) for a, (kid, k) in self.keys.items()]}

    def rotate(self, alg: str) -> str:
        """Replace the key of ``alg`` (new kid) and publish; the new kid."""
        kid = f"{alg.lower()}-{secrets.token_hex(3)}"
        self.keys[alg] = (kid, new_key(alg))
        self.publish()
        return kid

    async def fetch(self, url: str) -> dict[str, Any] | None:
        self.fetched.append(url)
        return self.documents.get(url)

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        base: dict[str, Any] = {"iss": self.issuer, "aud": RESOURCE, "sub": "user-1", "iat": now,
                                "exp": now + 300, "scope": "foldgate:read"}  # fmt: skip
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def sign(self, alg: str = "ES256", *, kid: str | None = None, key: Any = None, **claims: Any) -> str:
        own_kid, own_key = self.keys[alg]
        headers = {"kid": kid or own_kid, "typ": "at+jwt"}
        return jwt.encode(self.claims(**claims), key or own_key, algorithm=alg, headers=headers)
