"""A loopback enterprise for the exchange kinds' tests: an IdP, an upstream's authorization server and
the upstream's MCP endpoint, on one origin, each recording what it was sent.

* ``/idp/token``: RFC 8693. With ``requested_token_type`` ``...:id-jag`` it verifies the subject token
  (an "ID token" this test IdP signed, HS256) and issues an ID-JAG (``typ`` ``oauth-id-jag+jwt``, the
  subject's ``sub``, ``aud`` the requested audience, ``resource``, ``client_id`` the mapped client);
  otherwise (plain on-behalf-of) it issues ``obo-<sub>-<n>`` access tokens. People in ``denied`` get
  ``access_denied``.
* ``/as/token``: RFC 7523 JWT bearer: ``client_secret_basic`` required, the ID-JAG verified (signature,
  ``aud`` this issuer, ``client_id`` the authenticated client, ``resource`` one of ``resources``);
  issues ``at-<sub>-<n>``, or with ``signed`` an ES256 JWT access token for the ID-JAG's resource (its
  keys at ``/as/jwks``: what demo/oauth/protected_mcp.py verifies), valid ``jwt_lifetime`` seconds
  whatever ``expires_in`` it announces. Its metadata advertises dynamic registration
  (``/as/register``), which must never be used, and neither PKCE nor an authorization endpoint (the
  JWT-bearer grant has no browser step); nor does the IdP's.
* ``/mcp``: 401 with the PRM challenge; the PRM names ``<base>/mcp`` and ``<base>/as``.

Every POST is recorded as (path, form, Authorization header) in ``posts``, every GET's path in ``gets``.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
IDP_KEY = "idp-signing-key-for-id-tokens-and-id-jags-0123456789"
CLIENT_ID = "upstream-client"
CLIENT_SECRET = "upstream s3cret:with/odd chars"


class Enterprise:
    """The parts (see the module docstring); ``base`` is the origin, ``url`` the MCP endpoint."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, str], str | None]] = []
        self.gets: list[str] = []  # the paths of every GET (metadata fetched)
        self.denied: set[str] = set()
        self.expires_in: int | None = 3600
        self.jag_client_id = CLIENT_ID  # the client the IdP maps the upstream's audience to
        self.as_error: str | None = None  # refuse every JWT-bearer request with this
        self.signed = False  # issue ES256 JWT access tokens (see the module docstring)
        self.jwt_lifetime = 3600
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._serial = itertools.count(1)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                owner.gets.append(self.path)
                doc = owner.documents().get(self.path)
                self._send(200 if doc is not None else 404, doc or {})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path == "/mcp":
                    meta = f'Bearer resource_metadata="{owner.base}/.well-known/oauth-protected-resource/mcp"'
                    self._send(401, {}, {"www-authenticate": meta})
                    return
                form = dict(parse_qsl(raw.decode()))
                owner.posts.append((self.path, form, self.headers.get("authorization")))
                status, body = owner.answer(self.path, form, self.headers.get("authorization"))
                self._send(status, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.base + "/mcp"
        self.issuer = self.base + "/as"
        self.resources = {self.url}  # what an ID-JAG may be for

    def documents(self) -> dict[str, Any]:
        """The metadata documents served on GET."""
        jwk = json.loads(ECAlgorithm.to_jwk(self._key.public_key()))
        return {
            "/as/jwks": {"keys": [{**jwk, "kid": "as-1", "use": "sig", "alg": "ES256"}]},
            "/.well-known/oauth-protected-resource/mcp": {
                "resource": self.url, "authorization_servers": [self.issuer],
                "scopes_supported": ["files:read"],
            },
            "/.well-known/oauth-authorization-server/as": {
                "issuer": self.issuer, "token_endpoint": self.issuer + "/token",
                "registration_endpoint": self.issuer + "/register", "response_types_supported": ["code"],
                "grant_types_supported": [JWT_BEARER],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            },
            "/.well-known/oauth-authorization-server/idp": {
                "issuer": self.base + "/idp", "token_endpoint": self.base + "/idp/token",
                "response_types_supported": ["code"], "grant_types_supported": [EXCHANGE],
            },
        }  # fmt: skip

    def id_token(self, subject: str, *, lifetime: int = 3600) -> str:
        """An ID token this IdP issued to ``subject``."""
        now = int(time.time())
        claims = {
            "iss": self.base + "/idp",
            "sub": subject,
            "aud": "foldgate",
            "iat": now,
            "exp": now + lifetime,
        }
        return jwt.encode(claims, IDP_KEY, algorithm="HS256")

    def posted(self, path: str) -> list[dict[str, str]]:
        """The forms POSTed to ``path``, in order."""
        return [form for p, form, _ in self.posts if p == path]

    def answer(
        self, path: str, form: dict[str, str], authorization: str | None
    ) -> tuple[int, dict[str, Any]]:
        """The IdP's or the authorization server's answer to a POST."""
        if path == "/idp/token" and form.get("grant_type") == EXCHANGE:
            return self._idp(form)
        if path == "/as/token" and form.get("grant_type") == JWT_BEARER:
            return self._jwt_bearer(form, authorization)
        return 400, {"error": "unsupported_grant_type"}

    def subject_of(self, token: str) -> str:
        """Whom a subject token names, verified (PyJWTError when it does not verify); a test may
        replace it to trust another sign-in issuer."""
        return str(jwt.decode(token, IDP_KEY, algorithms=["HS256"], audience="foldgate")["sub"])

    def _idp(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        try:
            sub = self.subject_of(form.get("subject_token", ""))
        except jwt.PyJWTError:
            return 400, {"error": "invalid_grant", "error_description": "bad subject token"}
        if sub in self.denied:
            return 400, {"error": "access_denied", "error_description": f"policy denies {sub}"}
        if form.get("requested_token_type") != ID_JAG_TYPE:
            token = f"obo-{sub}-{next(self._serial)}"
            return 200, {"access_token": token, "issued_token_type": ACCESS_TOKEN_TYPE,
                         "token_type": "Bearer", **self._lifetime()}  # fmt: skip
        now = int(time.time())
        claims = {
            "iss": self.base + "/idp",
            "sub": sub,
            "aud": form.get("audience"),
            "iat": now,
            "exp": now + 300,
            "resource": form.get("resource"),
            "client_id": self.jag_client_id,
            "jti": str(next(self._serial)),
        }
        grant = jwt.encode(claims, IDP_KEY, algorithm="HS256", headers={"typ": "oauth-id-jag+jwt"})
        return 200, {
            "access_token": grant,
            "issued_token_type": ID_JAG_TYPE,
            "token_type": "N_A",
            "expires_in": 300,
        }

    def _jwt_bearer(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        if not authorization or not authorization.startswith("Basic "):
            return 401, {"error": "invalid_client"}
        client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
        if (unquote(client_id), unquote(secret)) != (CLIENT_ID, CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        if self.as_error:
            return 400, {"error": self.as_error}
        try:
            claims = jwt.decode(
                form.get("assertion", ""), IDP_KEY, algorithms=["HS256"], audience=self.issuer
            )
        except jwt.PyJWTError:
            return 400, {"error": "invalid_grant"}
        if claims.get("client_id") != CLIENT_ID or claims.get("resource") not in self.resources:
            return 400, {"error": "invalid_grant"}
        token = f"at-{claims['sub']}-{next(self._serial)}"
        if self.signed:
            now = int(time.time())
            access = {
                "iss": self.issuer,
                "aud": claims["resource"],
                "sub": claims["sub"],
                "client_id": CLIENT_ID,
                "scope": form.get("scope", ""),
                "iat": now,
                "exp": now + self.jwt_lifetime,
                "jti": token,
            }
            token = jwt.encode(access, self._key, algorithm="ES256", headers={"kid": "as-1"})
        return 200, {"access_token": token, "token_type": "Bearer", **self._lifetime()}

    def _lifetime(self) -> dict[str, int]:
        return {} if self.expires_in is None else {"expires_in": self.expires_in}


@contextlib.contextmanager
def enterprise() -> Iterator[Enterprise]:
    """A running :class:`Enterprise`, shut down afterwards."""
    running = Enterprise()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.server.shutdown()
        running.server.server_close()
