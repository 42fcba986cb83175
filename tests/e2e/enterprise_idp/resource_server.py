"""An MCP server (the official MCP Python SDK, Streamable HTTP) that accepts only the access tokens of
its authorization server and enforces DPoP binding (RFC 9449 section 7), for the end-to-end tests; not
foldgate code. ``python -m tests.e2e.enterprise_idp.resource_server <config.json>`` serves
``http://127.0.0.1:<port>/mcp`` and the RFC 9728 metadata naming the AS (the SDK's).

Tokens: an ES256 JWT from the AS's JWKS, ``iss`` the AS, ``aud`` this server, unexpired. A token bound
to a key (``cnf.jkt``) is accepted only with ``Authorization: DPoP <token>`` and a DPoP proof that
verifies (typ, alg, signature, ``htm``, ``htu`` without query, ``iat`` within 60 s, ``ath`` of this
token, a ``jti`` not seen before) from that very key; presented as ``Bearer``, without a proof, with a
replayed proof or another key's, it is refused 401 with a ``DPoP`` challenge naming the error. With
``dpop_nonce`` the proof must carry the server's nonce (401 ``use_dpop_nonce`` plus ``DPoP-Nonce``).
Unbound tokens are accepted as ``Bearer``, except with ``dpop_required``: then only bound tokens are, and
every 401 (the SDK's too: no token, a bad token) challenges in the ``DPoP`` scheme.

Tools: ``whoami`` answers the token's subject, client, ``act`` and how it was presented; ``echo``.
``GET /_log`` lists every request to /mcp (HTTP and JSON-RPC method, scheme, outcome) and every tool call;
``GET /_seen`` the Authorization and DPoP headers presented (a test replays them as a thief would).
"""

from __future__ import annotations

import contextvars
import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from tests.e2e.enterprise_idp.common import (
    DPOP_ALGS,
    DpopError,
    DpopVerifier,
    Jwks,
    load_config,
    serve,
    unverified,
)

CONFIG = load_config(sys.argv[1])
PORT = int(CONFIG["port"])
BASE = f"http://127.0.0.1:{PORT}"
RESOURCE = BASE + "/mcp"
AS_ISSUER: str = CONFIG["issuer"]
AS_KEYS = Jwks(CONFIG["jwks"])
DPOP = DpopVerifier(require_nonce=bool(CONFIG.get("dpop_nonce", False)))
DPOP_REQUIRED = bool(CONFIG.get("dpop_required", False))  # DPoP-bound tokens only, DPoP challenges
# The key a DPoP proof on this request proved (set by the front before the SDK verifies the token).
PROVEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("proven", default=None)
LOG: list[dict[str, Any]] = []
SEEN: list[dict[str, str | None]] = []  # the credentials presented (a test part: a test replays them)
CALLS: list[dict[str, Any]] = []


class Verifier:
    """The AS's access tokens for exactly this resource; a bound one only with its key proven."""

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = AS_KEYS.verify(token, iss={"essential": True, "value": AS_ISSUER},
                                    aud={"essential": True, "value": RESOURCE})  # fmt: skip
        except ValueError:
            return None
        bound = (claims.get("cnf") or {}).get("jkt")
        if bound is not None and bound != PROVEN.get():
            return None
        return AccessToken(token=token, client_id=str(claims.get("client_id", "")),
                           scopes=str(claims.get("scope", "")).split(), expires_at=int(claims["exp"]),
                           resource=RESOURCE, subject=str(claims.get("sub", "")), claims=claims)  # fmt: skip


server: MCPServer[Any] = MCPServer(
    "enterprise-files",
    token_verifier=Verifier(),
    auth=AuthSettings(issuer_url=AS_ISSUER, resource_server_url=RESOURCE, required_scopes=[]),  # type: ignore[arg-type]
)


@server.tool(description="Who the access token was issued to, and how it was presented.")
def whoami() -> str:
    token = get_access_token()
    claims = (token.claims or {}) if token else {}
    who = {"subject": token.subject if token else None, "client": token.client_id if token else None,
           "act": claims.get("act"), "bound": "cnf" in claims}  # fmt: skip
    CALLS.append({"tool": "whoami", **who})
    return json.dumps(who)


@server.tool(description="Answer the text back.")
def echo(text: str) -> str:
    token = get_access_token()
    CALLS.append({"tool": "echo", "subject": token.subject if token else None})
    return text


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _json(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    raw = json.dumps(body).encode()
    head = [(b"content-type", b"application/json")] + [
        (k.encode(), v.encode()) for k, v in (headers or {}).items()
    ]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": raw})


def _challenge(error: str, description: str) -> dict[str, str]:
    metadata = f"{BASE}/.well-known/oauth-protected-resource/mcp"
    value = (f'DPoP error="{error}", error_description="{description}", algs="{" ".join(DPOP_ALGS)}", '
             f'resource_metadata="{metadata}"')  # fmt: skip
    headers = {"www-authenticate": value}
    if DPOP.require_nonce:
        headers["dpop-nonce"] = DPOP.nonce
    return headers


def _as_dpop(name: bytes, value: bytes) -> tuple[bytes, bytes]:
    if name.lower() != b"www-authenticate" or not value.startswith(b"Bearer"):
        return name, value
    params = value[len(b"Bearer") :].strip()
    algs = f'algs="{" ".join(DPOP_ALGS)}"'.encode()
    return name, b"DPoP " + algs + (b", " + params if params else b"")


def _rpc(body: bytes) -> str | None:
    try:
        message = json.loads(body) if body else None
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


def front(app: App) -> App:
    """Before the SDK: DPoP checks on /mcp (the SDK knows only Bearer: a proven DPoP token is handed on
    as Bearer with its key in ``PROVEN``), and the request log."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"] == "/_log":
            await _json(send, 200, {"requests": LOG, "calls": CALLS})
            return
        if scope["path"] == "/_seen":
            await _json(send, 200, SEEN)
            return
        if not scope["path"].startswith("/mcp"):
            await app(scope, receive, send)
            return
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        authorization = headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        entry: dict[str, Any] = {"http": scope["method"], "rpc": _rpc(body), "scheme": scheme or None,
                                 "proof": "dpop" in headers}  # fmt: skip
        LOG.append(entry)
        SEEN.append({"authorization": authorization or None, "dpop": headers.get("dpop")})
        PROVEN.set(None)
        try:
            claims = unverified(token)[1] if token else {}
        except ValueError:
            claims = {}
        bound = (claims.get("cnf") or {}).get("jkt")
        if scheme.lower() == "dpop":
            try:
                jkt = DPOP.verify(headers.get("dpop"), scope["method"], BASE + scope["path"], token)
            except DpopError as exc:
                entry.update(outcome=401, error=exc.error, error_description=exc.description)
                await _json(send, 401, {"error": exc.error}, _challenge(exc.error, exc.description))
                return
            if bound is None or bound != jkt:
                why = "the token is not bound to the proof's key" if bound else "the token is not DPoP-bound"
                entry.update(outcome=401, error="invalid_token", error_description=why)
                await _json(send, 401, {"error": "invalid_token"}, _challenge("invalid_token", why))
                return
            PROVEN.set(jkt)
            kept = [(k, v) for k, v in scope["headers"] if k.lower() != b"authorization"]
            scope = {**scope, "headers": [*kept, (b"authorization", f"Bearer {token}".encode())]}
        elif bound is not None or (DPOP_REQUIRED and token):
            why = "a DPoP-bound token needs the DPoP scheme and a proof"
            entry.update(outcome=401, error="invalid_token", error_description=why)
            await _json(send, 401, {"error": "invalid_token"}, _challenge("invalid_token", why))
            return

        async def replay() -> MutableMapping[str, Any]:
            return messages.pop(0) if messages else await receive()

        async def noted(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                entry.setdefault("outcome", message["status"])
                if DPOP_REQUIRED and message["status"] == 401:
                    # The SDK's Bearer challenge, in the DPoP scheme (RFC 9449 section 7.1).
                    message = {**message, "headers": [_as_dpop(k, v) for k, v in message["headers"]]}
            await send(message)

        await app(scope, replay, noted)

    return guarded


if __name__ == "__main__":
    serve(front(server.streamable_http_app(host="127.0.0.1")), PORT)
