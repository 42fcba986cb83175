"""A loopback authorization server and MCP resource server that check DPoP proofs (RFC 9449), for tests.

One origin serves both: protected resource metadata and authorization server metadata (so discovery
works), a token endpoint (``POST /token``: ``authorization_code``, ``refresh_token`` and
``client_credentials``) that issues DPoP-bound tokens to a valid proof, and a small handshake-era MCP
endpoint (``POST /mcp``, ``DELETE /mcp``) that accepts only ``Authorization: DPoP <token>`` with a
valid proof for that request. Proofs are verified with PyJWT against the ``jwk`` in their header, as a
real server would: ``typ``, ``alg``, signature, ``htm``, ``htu`` (query and fragment stripped), ``iat``
within a minute, ``jti`` never seen before, ``ath`` and the token's bound key thumbprint (``cnf.jkt``).

Knobs: ``as_nonce`` / ``rs_nonce`` (require this nonce; ``stubborn_*``: refuse every proof with a
new nonce, so a client that retries more than once is seen), ``expire_next`` (answer the next MCP
request ``invalid_token``). Everything seen is recorded (``token_requests``, ``mcp_requests``,
``proofs``, ``failures``).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 SHA-256 thumbprint of an EC public JWK."""
    canonical = json.dumps(
        {k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True
    )
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


class DPoPServer:
    """See the module doc; ``url`` is the MCP endpoint, ``base`` the issuer and origin."""

    def __init__(self) -> None:
        self.as_nonce: str | None = None
        self.rs_nonce: str | None = None
        self.stubborn_as = False
        self.stubborn_rs = False
        self.expire_next = False
        self.token_requests: list[dict[str, Any]] = []  # form, proof claims, status per request
        self.mcp_requests: list[dict[str, Any]] = []  # method, authorization scheme, proof claims, status
        self.proofs: list[dict[str, Any]] = []  # every verified proof's claims
        self.failures: list[str] = []
        self._jtis: set[str] = set()
        self._tokens: dict[str, str] = {}  # access token -> bound thumbprint
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                docs = owner.documents()
                if self.path in docs:
                    self._send(200, docs[self.path])
                else:
                    self._send(404, {})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with owner._lock:
                    if self.path == "/token":
                        self._send(*owner.token(body, dict(self.headers.items())))
                    else:
                        self._send(*owner.mcp("POST", self.path, body, dict(self.headers.items())))

            def do_DELETE(self) -> None:
                with owner._lock:
                    self._send(*owner.mcp("DELETE", self.path, b"", dict(self.headers.items())))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.base + "/mcp"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> DPoPServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def documents(self) -> dict[str, Any]:
        """Protected resource metadata at the path-aware URL, AS metadata at the root."""
        return {
            "/.well-known/oauth-protected-resource/mcp": {
                "resource": self.url,
                "authorization_servers": [self.base],
            },
            "/.well-known/oauth-authorization-server": {
                "issuer": self.base,
                "authorization_endpoint": self.base + "/authorize",
                "token_endpoint": self.base + "/token",
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "dpop_signing_alg_values_supported": ["ES256"],
            },
        }

    def _verify(self, proof: str | None, method: str, url: str, token: str | None) -> dict[str, Any]:
        """The proof's claims when it is valid for this request; ValueError naming what is wrong."""
        if not proof or "," in proof:
            raise ValueError("no single DPoP proof")
        header = jwt.get_unverified_header(proof)
        if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256":
            raise ValueError(f"bad header {header.get('typ')}/{header.get('alg')}")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or "d" in jwk:
            raise ValueError("jwk missing or private")
        key = jwt.PyJWK(jwk, algorithm="ES256")
        claims: dict[str, Any] = jwt.decode(proof, key.key, algorithms=["ES256"])
        if claims.get("htm") != method or claims.get("htu") != url:
            raise ValueError(f"htm/htu {claims.get('htm')} {claims.get('htu')} for {method} {url}")
        if abs(time.time() - claims.get("iat", 0)) > 60:
            raise ValueError("iat out of window")
        if claims.get("jti") in self._jtis:
            raise ValueError("jti replayed")
        self._jtis.add(claims["jti"])
        if token is not None:
            digest = hashlib.sha256(token.encode()).digest()
            if claims.get("ath") != base64.urlsafe_b64encode(digest).rstrip(b"=").decode():
                raise ValueError("ath does not match")
            if self._tokens.get(token) != thumbprint(jwk):
                raise ValueError("token not bound to this key")
        elif "ath" in claims:
            raise ValueError("ath on a token request")
        claims["jkt"] = thumbprint(jwk)
        self.proofs.append(claims)
        return claims

    def _nonce(self, which: str) -> str:
        fresh = f"{which}-nonce-{next(self._counter)}"
        if which == "as":
            self.as_nonce = fresh
        else:
            self.rs_nonce = fresh
        return fresh

    def token(self, body: bytes, headers: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        """The token endpoint: a DPoP-bound token to a valid proof (with the nonce, when required)."""
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        record: dict[str, Any] = {"form": form}
        self.token_requests.append(record)
        lower = {k.lower(): v for k, v in headers.items()}
        try:
            claims = self._verify(lower.get("dpop"), "POST", self.base + "/token", None)
        except (ValueError, jwt.PyJWTError) as exc:
            self.failures.append(f"token: {exc}")
            record["status"] = 400
            return 400, {"error": "invalid_dpop_proof"}, {}
        record["claims"] = claims
        if self.as_nonce is not None and (self.stubborn_as or claims.get("nonce") != self.as_nonce):
            nonce = self._nonce("as") if self.stubborn_as else self.as_nonce
            record["status"] = 400
            return 400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": nonce}
        token = f"at-{next(self._counter)}-{secrets.token_hex(8)}"
        self._tokens[token] = claims["jkt"]
        record["status"] = 200
        answer = {
            "access_token": token,
            "token_type": "DPoP",
            "expires_in": 3600,
            "refresh_token": f"rt-{token}",
        }
        return 200, answer, {}

    def mcp(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        """The MCP endpoint: DPoP only; a handshake-era server with one tool."""
        lower = {k.lower(): v for k, v in headers.items()}
        scheme, _, token = lower.get("authorization", "").partition(" ")
        record: dict[str, Any] = {"method": method, "scheme": scheme}
        self.mcp_requests.append(record)
        challenge = f'DPoP resource_metadata="{self.base}/.well-known/oauth-protected-resource/mcp"'
        if scheme != "DPoP":
            record["status"] = 401
            return 401, {}, {"www-authenticate": challenge}
        try:
            claims = self._verify(lower.get("dpop"), method, self.base + path.split("?")[0], token)
        except (ValueError, jwt.PyJWTError) as exc:
            self.failures.append(f"mcp: {exc}")
            record["status"] = 401
            return 401, {}, {"www-authenticate": challenge + ', error="invalid_dpop_proof"'}
        record["claims"] = claims
        if self.rs_nonce is not None and (self.stubborn_rs or claims.get("nonce") != self.rs_nonce):
            nonce = self._nonce("rs") if self.stubborn_rs else self.rs_nonce
            record["status"] = 401
            return 401, {}, {"www-authenticate": challenge + ', error="use_dpop_nonce"', "DPoP-Nonce": nonce}
        if self.expire_next:
            self.expire_next = False
            record["status"] = 401
            return 401, {}, {"www-authenticate": challenge + ', error="invalid_token"'}
        record["status"] = 200
        if method == "DELETE":
            return 200, {}, {}
        answer = self._answer(json.loads(body))
        return (202 if answer is None else 200), answer, {"mcp-session-id": "s1"}

    @staticmethod
    def _answer(message: dict[str, Any]) -> Any:
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            return None
        if method == "initialize":
            result: Any = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "dpop-rs", "version": "1"}}  # fmt: skip
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        else:
            return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}}
        return {"jsonrpc": "2.0", "id": ident, "result": result}
