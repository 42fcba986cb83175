"""What the three real parts (IdP, authorization server, resource server) share: signing keys, a JWKS
reader, an RFC 9449 DPoP proof verifier and a small Starlette/uvicorn runner. Built on joserfc (the JOSE
library authlib itself uses); nothing here imports foldgate: these parts stand in for someone else's
servers and must not share code with the client under test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from joserfc import jwk, jws, jwt
from joserfc.errors import JoseError

ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
JWT_TOKEN = "urn:ietf:params:oauth:token-type:jwt"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG_TYP = "oauth-id-jag+jwt"
# Asymmetric only (RFC 9449 section 4.2: a proof's alg MUST NOT be none or a MAC).
DPOP_ALGS = ("ES256", "ES384", "RS256", "PS256", "EdDSA")
DPOP_WINDOW = 60  # seconds either side of now a proof's iat may be


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def ath(token: str) -> str:
    """RFC 9449 section 4.2: base64url of the SHA-256 of the access token's ASCII."""
    return b64url(hashlib.sha256(token.encode("ascii")).digest())


def new_key(kid: str) -> jwk.ECKey:
    """A fresh ES256 signing key with ``kid``."""
    return jwk.ECKey.generate_key(
        "P-256", parameters={"kid": kid, "alg": "ES256", "use": "sig"}, private=True
    )


def sign(key: jwk.ECKey, claims: dict[str, Any], typ: str = "JWT", **header: Any) -> str:
    """A compact ES256 JWT over ``claims`` with ``typ`` and ``key``'s kid in the header."""
    return jwt.encode(
        {"alg": "ES256", "kid": key.kid, "typ": typ, **header}, claims, key, algorithms=["ES256"]
    )


def public_jwks(*keys: jwk.ECKey) -> dict[str, Any]:
    return {"keys": [k.as_dict(private=False) for k in keys]}


def unverified(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of a compact JWS, not yet verified (to pick the key); ValueError if malformed."""
    try:
        obj = jws.extract_compact(token.encode("ascii"))
        claims = json.loads(obj.payload)
    except (JoseError, ValueError, UnicodeError) as exc:
        raise ValueError("malformed JWT") from exc
    if not isinstance(claims, dict):
        raise ValueError("malformed JWT")
    return dict(obj.headers()), claims


class Jwks:
    """A remote JWKS read over HTTP, re-read once when a token names a kid it does not hold."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._keys: jwk.KeySet | None = None
        self._lock = threading.Lock()

    def _fetch(self) -> jwk.KeySet:
        with urllib.request.urlopen(self.url, timeout=5) as r:
            return jwk.KeySet.import_key_set(json.loads(r.read()))

    def key_set(self, kid: str | None = None) -> jwk.KeySet:
        with self._lock:
            if self._keys is None or (kid is not None and not any(k.kid == kid for k in self._keys.keys)):
                self._keys = self._fetch()
            return self._keys

    def verify(self, token: str, **claim_rules: Any) -> dict[str, Any]:
        """The claims of ``token`` if its ES256 signature verifies against this JWKS and ``claim_rules``
        (joserfc JWTClaimsRegistry options: iss, aud, ...) and exp/iat hold; ValueError with why else."""
        header, _ = unverified(token)
        try:
            decoded = jwt.decode(token, self.key_set(header.get("kid")), algorithms=["ES256"])
            rules = {"exp": {"essential": True}, **claim_rules}
            jwt.JWTClaimsRegistry(leeway=5, **rules).validate(decoded.claims)
        except JoseError as exc:
            raise ValueError(exc.description or exc.error) from exc
        return dict(decoded.claims)


class DpopError(Exception):
    """A refused proof: ``error`` is the RFC 9449 error code (invalid_dpop_proof or use_dpop_nonce)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def strip_query(url: str) -> str:
    """``url`` without query and fragment, scheme and host lower-cased (RFC 9449 section 4.3 htu)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))


@dataclass
class DpopVerifier:
    """RFC 9449 proof checks (sections 4.3 and 7.1): typ, asymmetric alg, public jwk, signature, htm,
    htu (no query), iat within the window, jti never seen before (replay cache), ath for the access
    token, and the server's current nonce when ``require_nonce``."""

    require_nonce: bool = False
    window: int = DPOP_WINDOW
    nonce: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    seen: dict[str, float] = field(default_factory=dict)  # jti -> when it may be forgotten
    clock: Callable[[], float] = time.time

    def verify(self, proof: str | None, method: str, url: str, access_token: str | None = None) -> str:
        """The proof key's RFC 7638 thumbprint (the jkt a token is bound to), or DpopError."""
        if not proof:
            raise DpopError("invalid_dpop_proof", "no DPoP proof")
        if "," in proof or " " in proof.strip():
            raise DpopError("invalid_dpop_proof", "more than one DPoP proof")
        try:
            header, claims = unverified(proof)
        except ValueError as exc:
            raise DpopError("invalid_dpop_proof", str(exc)) from exc
        if header.get("typ") != "dpop+jwt":
            raise DpopError("invalid_dpop_proof", "typ is not dpop+jwt")
        alg = header.get("alg")
        if alg not in DPOP_ALGS:
            raise DpopError("invalid_dpop_proof", f"alg {alg!r} is not an accepted asymmetric algorithm")
        public = header.get("jwk")
        if not isinstance(public, dict) or any(p in public for p in ("d", "p", "q", "dp", "dq", "qi", "k")):
            raise DpopError("invalid_dpop_proof", "jwk is missing or holds private material")
        try:
            key = jwk.import_key(public)
            jwt.decode(proof, key, algorithms=[str(alg)])
        except (JoseError, ValueError) as exc:
            raise DpopError("invalid_dpop_proof", "signature does not verify") from exc
        now = self.clock()
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti:
            raise DpopError("invalid_dpop_proof", "no jti")
        if claims.get("htm") != method:
            raise DpopError("invalid_dpop_proof", f"htm {claims.get('htm')!r} is not {method}")
        htu = claims.get("htu")
        if not isinstance(htu, str) or strip_query(htu) != strip_query(url) or htu != strip_query(htu):
            raise DpopError("invalid_dpop_proof", f"htu {htu!r} is not {strip_query(url)}")
        iat = claims.get("iat")
        if not isinstance(iat, int | float) or abs(now - iat) > self.window:
            raise DpopError("invalid_dpop_proof", "iat is outside the accepted window")
        if access_token is not None and claims.get("ath") != ath(access_token):
            raise DpopError("invalid_dpop_proof", "ath does not match the access token")
        if self.require_nonce and claims.get("nonce") != self.nonce:
            raise DpopError("use_dpop_nonce", "a fresh DPoP-Nonce is required")
        self.seen = {j: t for j, t in self.seen.items() if t > now}
        if jti in self.seen:
            raise DpopError("invalid_dpop_proof", "jti was already used (replayed proof)")
        self.seen[jti] = now + 2 * self.window
        return str(key.thumbprint())


def make_proof(
    key: jwk.ECKey,
    method: str,
    url: str,
    access_token: str | None = None,
    *,
    nonce: str | None = None,
    iat: float | None = None,
    jti: str | None = None,
) -> str:
    """A DPoP proof (for the tests that pin these parts by hand; foldgate makes its own)."""
    claims: dict[str, Any] = {"htm": method, "htu": url, "iat": int(iat if iat is not None else time.time()),
                              "jti": jti or secrets.token_urlsafe(16)}  # fmt: skip
    if access_token is not None:
        claims["ath"] = ath(access_token)
    if nonce is not None:
        claims["nonce"] = nonce
    header = {"alg": "ES256", "typ": "dpop+jwt", "jwk": key.as_dict(private=False)}
    return jwt.encode(header, claims, key, algorithms=["ES256"])


def serve(app: Any, port: int) -> None:
    """Serve ``app`` on loopback ``port`` until killed (quiet: the test reads the parts' own logs)."""
    import uvicorn  # the parts' only server

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def load_config(path: str) -> dict[str, Any]:
    with open(path) as f:
        config: dict[str, Any] = json.load(f)
    return config
