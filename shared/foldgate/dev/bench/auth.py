"""The auth rows of ``foldgate bench serve``: a plain tools/list authenticated by an ``fgt_`` agent token
vs by a validated OAuth JWT (ES256 and RS256), through the same app in the same run, plus what the
first JWT of a cold instance pays (discovery + JWKS read + key parsing).

The issuer is in-process (real keys, real signatures; its documents are answered from memory), so the
figures are foldgate's own cost: JWKS network latency to a real issuer comes on top, once per warm
instance.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from foldgate.auth.authority import TokenAuthority
from foldgate.auth.oauth.verifier import OAuthVerifier
from foldgate.config.oauth import OAuthConfig
from foldgate.edge.access import Access
from foldgate.edge.app import create_app
from foldgate.model.agent_token import TokenHasher
from foldgate.serve.gateway import Gateway
from foldgate.store.tokens.sqlite import SqliteTokenStore

__all__ = ["run_auth_bench"]

_ISSUER: Final = "https://issuer.bench.invalid"
_BASE: Final = "https://gateway.bench.invalid"
_HEADERS: Final = {"accept": "application/json", "content-type": "application/json",
                   "mcp-protocol-version": "2025-11-25"}  # fmt: skip
_LIST: Final = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'


class _Issuer:
    """Signing keys and the documents an issuer serves, answered from memory (counted)."""

    def __init__(self) -> None:
        # PyJWT and cryptography load only when this bench runs.
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from jwt.algorithms import ECAlgorithm, RSAAlgorithm

        self.keys: dict[str, Any] = {
            "ES256": ec.generate_private_key(ec.SECP256R1()),
            "RS256": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        }
        jwks = [
            {
                **ECAlgorithm.to_jwk(self.keys["ES256"].public_key(), as_dict=True),
                "kid": "es",
                "alg": "ES256",
            },
            {
                **RSAAlgorithm.to_jwk(self.keys["RS256"].public_key(), as_dict=True),
                "kid": "rs",
                "alg": "RS256",
            },
        ]
        self.docs: dict[str, dict[str, Any]] = {
            _ISSUER + "/.well-known/openid-configuration": {"issuer": _ISSUER, "jwks_uri": _ISSUER + "/jwks"},
            _ISSUER + "/jwks": {"keys": jwks},
        }
        self.fetches = 0

    async def fetch(self, url: str) -> dict[str, Any] | None:
        self.fetches += 1
        return self.docs.get(url)

    def token(self, alg: str) -> str:
        # Loaded with the keys above, only when this bench runs.
        import jwt

        now = int(time.time())
        claims = {"iss": _ISSUER, "aud": _BASE, "sub": "bench", "iat": now, "exp": now + 3600,
                  "scope": "foldgate:read"}  # fmt: skip
        kid = "es" if alg == "ES256" else "rs"
        return jwt.encode(claims, self.keys[alg], algorithm=alg, headers={"kid": kid})


async def _timed(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    for _ in range(max(3, n // 10)):
        await fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


async def run_auth_bench(gateway: Gateway, n: int) -> dict[str, Any]:
    """p50/p95 of an authenticated tools/list per credential kind, and the cold first-JWT cost."""
    # The HTTP client loads only when this bench runs.
    import httpx2

    issuer = _Issuer()
    config = OAuthConfig(issuer=_ISSUER)

    def verifier() -> OAuthVerifier:
        return OAuthVerifier(lambda t: config, base_url=_BASE, allow_private=False, fetch=issuer.fetch)

    authority = TokenAuthority(SqliteTokenStore(":memory:"), TokenHasher(b"bench-secret-0123456789"))
    fgt, _ = authority.issue("default", tier="read", expires_in=3600)
    access = Access(authority=authority, oauth=verifier())
    app = create_app(gateway, access=access)
    rows: dict[str, Any] = {}
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=_BASE) as client:

        async def listing(token: str) -> None:
            headers = {**_HEADERS, "authorization": f"Bearer {token}"}
            r = await client.post("/mcp/all", content=_LIST, headers=headers)
            assert r.status_code == 200, r.text

        for name, token in (("fgt_token", fgt), ("jwt_es256", issuer.token("ES256")),
                            ("jwt_rs256", issuer.token("RS256"))):  # fmt: skip
            ms = await _timed(lambda t=token: listing(t), n)  # type: ignore[misc]
            p95 = sorted(ms)[min(len(ms) - 1, int(0.95 * len(ms)))]
            rows[name] = {"p50_ms": round(statistics.median(ms), 3), "p95_ms": round(p95, 3)}
        # A cold instance: a fresh verifier has no metadata and no keys yet.
        cold = []
        for _ in range(max(3, n // 20)):
            access.oauth = verifier()
            t = time.perf_counter()
            await listing(issuer.token("ES256"))
            cold.append((time.perf_counter() - t) * 1000)
    base = rows["fgt_token"]["p50_ms"]
    for name in ("jwt_es256", "jwt_rs256"):
        rows[name]["vs_fgt"] = round(rows[name]["p50_ms"] / base, 2) if base else 0.0
    rows["jwt_cold_first_ms"] = round(statistics.median(cold), 3)
    rows["issuer_fetches"] = issuer.fetches
    return rows
