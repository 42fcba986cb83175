"""A real authorization server for the OAuth tests: oidc-provider (demo/oauth/provider.mjs) on loopback.

The test side generates the provider's signing keys (an ES256 key for access tokens, an RS256 key for
ID tokens) and hands them over as a private JWKS file, so besides getting real tokens from the
provider, a test can forge tokens with the provider's own key (expired, wrong audience, ...) and with
keys it does not publish (unknown kid), and check foldgate refuses each one.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from foldgate.dev.procs import free_port, stop_process

PROVIDER_DIR = Path(__file__).resolve().parents[1] / "demo" / "oauth"
SCOPES = "foldgate:read foldgate:write foldgate:destructive foldgate:server:crm foldgate:server:tickets"


def need_provider() -> None:
    """Skip with a reason when `make oauth-deps` has not installed oidc-provider."""
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        pytest.skip("oidc-provider is not installed: run `make oauth-deps` (make test does)")
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass
class Provider:
    """A running provider: its issuer URL, the machine agent's secret and its private signing key."""

    issuer: str
    machine_secret: str
    es_key: ec.EllipticCurvePrivateKey
    es_kid: str
    jwks: dict[str, Any] = field(default_factory=dict, repr=False)  # the private signing keys

    def client_credentials(self, resource: str, scope: str) -> httpx2.Response:
        """The token endpoint's answer to the machine agent asking for ``scope`` at ``resource``."""
        return httpx2.post(
            self.issuer + "/token",
            data={"grant_type": "client_credentials", "resource": resource, "scope": scope},
            auth=("machine-agent", self.machine_secret),
            timeout=10,
        )

    def machine_token(self, resource: str, scope: str) -> str:
        """A real access token (JWT) for the machine agent."""
        response = self.client_credentials(resource, scope)
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token

    def claims(self, audience: str, **overrides: Any) -> dict[str, Any]:
        """Claims shaped like the provider's own access tokens, valid for five minutes."""
        now = int(time.time())
        base = {"iss": self.issuer, "aud": audience, "sub": "forged", "client_id": "machine-agent",
                "iat": now, "exp": now + 300, "scope": "foldgate:read",
                "jti": secrets.token_hex(8)}  # fmt: skip
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def sign(self, claims: dict[str, Any], *, kid: str | None = None, key: Any = None) -> str:
        """A JWT signed ES256 with the provider's key (or ``key``), header kid ``kid`` (default: its own)."""
        headers = {"kid": kid or self.es_kid, "typ": "at+jwt"}
        return jwt.encode(claims, key or self.es_key, algorithm="ES256", headers=headers)

    def alg_none(self, claims: dict[str, Any]) -> str:
        """An unsigned token (``alg: none``) naming the provider's kid."""
        header = _b64(json.dumps({"alg": "none", "typ": "at+jwt", "kid": self.es_kid}).encode())
        return f"{header}.{_b64(json.dumps(claims).encode())}."

    def hs256_with_public_key(self, claims: dict[str, Any]) -> str:
        """Algorithm confusion: HMAC-SHA256 keyed with the provider's public key, as PEM and as JWKS."""
        pem = self.es_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        header = _b64(json.dumps({"alg": "HS256", "typ": "at+jwt", "kid": self.es_kid}).encode())
        body = f"{header}.{_b64(json.dumps(claims).encode())}"
        # PyJWT (rightly) refuses a PEM as an HMAC secret, so the forgery is built by hand.
        mac = hmac.new(pem, body.encode(), hashlib.sha256).digest()
        return f"{body}.{_b64(mac)}"


def _keys() -> tuple[dict[str, Any], ec.EllipticCurvePrivateKey, str]:
    es = ec.generate_private_key(ec.SECP256R1())
    rs = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    es_kid, rs_kid = "es-" + secrets.token_hex(4), "rs-" + secrets.token_hex(4)
    es_jwk = {**ECAlgorithm.to_jwk(es, as_dict=True), "kid": es_kid, "alg": "ES256", "use": "sig"}
    rs_jwk = {**RSAAlgorithm.to_jwk(rs, as_dict=True), "kid": rs_kid, "alg": "RS256", "use": "sig"}
    return {"keys": [es_jwk, rs_jwk]}, es, es_kid


@contextlib.contextmanager
def oidc_provider(
    tmp: Path, scopes: str = SCOPES, *, access_ttl: int = 300, restart_of: Provider | None = None
) -> Iterator[Provider]:
    """oidc-provider on a free loopback port for the duration of the block (access tokens live
    ``access_ttl`` seconds). ``restart_of``: the same issuer and signing keys again, as a provider
    restarted with its in-memory store (every client and grant lost)."""
    need_provider()
    if restart_of is None:
        private, es_key, es_kid = _keys()
    else:
        private, es_key, es_kid = restart_of.jwks, restart_of.es_key, restart_of.es_kid
    keys_file = tmp / "provider-keys.json"
    keys_file.write_text(json.dumps(private))
    keys_file.chmod(0o600)
    port = free_port() if restart_of is None else int(urlsplit(restart_of.issuer).port or 0)
    secret = secrets.token_urlsafe(24)
    env = {**os.environ, "PORT": str(port), "KEYS_FILE": str(keys_file), "SCOPES": scopes,
           "MACHINE_SECRET": secret, "NODE_ENV": "test", "ACCESS_TTL": str(access_ttl)}  # fmt: skip
    with (tmp / "provider.log").open("w") as log:
        proc = subprocess.Popen(
            ["node", str(PROVIDER_DIR / "provider.mjs")], cwd=PROVIDER_DIR, env=env,
            stdout=subprocess.PIPE, stderr=log, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("ready "):
                raise RuntimeError(f"oidc-provider did not start (see {tmp / 'provider.log'})")
            issuer = line.split(" ", 1)[1].strip()
            yield Provider(issuer, secret, es_key, es_kid, private)
        finally:
            stop_process(proc)


async def consent(authorize_url: str, redirect_uri: str, login: str = "alice") -> dict[str, str]:
    """Play the person: sign in as ``login`` and approve; the callback's query (code, state, iss)."""
    async with httpx2.AsyncClient(timeout=10) as browser:
        url = authorize_url
        for _ in range(12):
            r = await browser.get(url)
            if r.status_code in (302, 303):
                url = urljoin(url, r.headers["location"])
                if url.startswith(redirect_uri):
                    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
                continue
            action = re.search(r'action="([^"]+)"', r.text)
            assert r.status_code == 200, r.text[:500]
            assert action is not None, r.text[:500]
            form = {"prompt": "login", "login": login, "password": "x"}
            if 'name="prompt" value="consent"' in r.text:
                form = {"prompt": "consent"}
            posted = await browser.post(urljoin(url, action.group(1)), data=form)
            assert posted.status_code in (302, 303), posted.text[:500]
            url = urljoin(url, posted.headers["location"])
    raise AssertionError("the authorization flow did not reach the redirect URI")
