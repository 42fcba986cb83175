"""An upstream MCP server that requires OAuth access tokens: the MCP Python SDK's resource-server support.
The demo's OAuth-protected upstream (demo/run.sh) and the one the upstream OAuth tests connect to.

Usage: ``python protected_mcp.py <port> <issuer> "<scope> ..." [--tool-scopes] [--log-requests]`` serves
Streamable HTTP on ``http://127.0.0.1:<port>/mcp``. The SDK answers a request without a valid token with
401 and ``WWW-Authenticate: Bearer resource_metadata=...`` and serves the RFC 9728 document naming ``issuer``;
tokens are checked here as real resource servers do: an ES256/RS256 JWT from the issuer's JWKS, ``iss``
the issuer, ``aud`` this server's URL (RFC 8707), unexpired, carrying every scope named (else 403
``insufficient_scope``).

Tools: ``whoami`` answers the subject and client the token was issued to (tests check whose grant a
call used); ``echo`` answers its text. With ``--tool-scopes``, three more tools need scope of their own,
checked per call as real servers scope single tools: a call without it is refused with 403
``insufficient_scope`` naming the scope (the MCP spec's step-up challenge): ``write_note`` needs
``files:write`` (challenge: ``files:read files:write``), ``admin_report`` needs ``files:admin``, and
``locked`` is refused naming ``files:read``, a scope every token here holds (a tool-level policy).
Every tool call is appended to ``<port>.calls`` in the working directory as one JSON line (subject,
tool), so a test can count what really ran upstream; with ``--log-requests`` every HTTP request to
``/mcp`` to ``<port>.requests`` (HTTP method, JSON-RPC method), so a test can count a client's traffic.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

PORT = int(sys.argv[1])
ISSUER = sys.argv[2]
SCOPE = sys.argv[3]
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
CALLS = Path(f"{PORT}.calls")
REQUESTS = Path(f"{PORT}.requests") if "--log-requests" in sys.argv[4:] else None
TOOL_SCOPES = "--tool-scopes" in sys.argv[4:]
# tool -> (scope the call needs, scope its challenge names)
NEEDS = {
    "write_note": ("files:write", "files:read files:write"),
    "admin_report": ("files:admin", "files:admin"),
    "locked": ("files:never", "files:read"),
}


class JwtVerifier:
    """Access tokens as the provider mints them: a JWT for exactly this resource."""

    def __init__(self) -> None:
        self.jwks = jwt.PyJWKClient(f"{ISSUER}/jwks", cache_keys=True)

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = self.jwks.get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token, key.key, algorithms=["ES256", "RS256"], audience=RESOURCE, issuer=ISSUER
            )
        except jwt.PyJWTError:
            return None
        scopes = str(claims.get("scope", "")).split()
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=scopes,
            expires_at=int(claims["exp"]),
            resource=RESOURCE,
            subject=str(claims.get("sub", "")),
            claims=claims,
        )


server: MCPServer[Any] = MCPServer(
    "protected",
    token_verifier=JwtVerifier(),
    auth=AuthSettings(
        issuer_url=ISSUER,  # type: ignore[arg-type]
        resource_server_url=RESOURCE,  # type: ignore[arg-type]
        required_scopes=SCOPE.split(),
    ),
)


def _record(tool: str) -> dict[str, str]:
    token = get_access_token()
    who = {"subject": (token.subject or "") if token else "", "client": token.client_id if token else ""}
    with CALLS.open("a") as f:
        f.write(json.dumps({"tool": tool, **who}) + "\n")
    return who


@server.tool(description="Who the access token was issued to.")
def whoami() -> str:
    return json.dumps(_record("whoami"))


@server.tool(description="Answer the text back.")
def echo(text: str) -> str:
    _record("echo")
    return text


if TOOL_SCOPES:

    @server.tool(description="Write a note (needs files:write).")
    def write_note(text: str) -> str:
        _record("write_note")
        return f"noted: {text}"

    @server.tool(description="An administrator's report (needs files:admin).")
    def admin_report() -> str:
        _record("admin_report")
        return "report"

    @server.tool(description="Refused by this server's policy whatever the token holds.")
    def locked() -> str:
        _record("locked")
        return "never"


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def _token_scopes(authorization: str) -> set[str]:
    # The SDK's middleware verifies the token after this; here only its scope claim is read.
    try:
        payload = authorization.split(" ", 1)[1].split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return set(str(claims.get("scope", "")).split())
    except (IndexError, ValueError):
        return set()


def _refusal(body: bytes, authorization: str) -> str | None:
    """The scope to challenge with when ``body`` calls a tool the token lacks scope for."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    need = NEEDS.get(str((message.get("params") or {}).get("name")))
    if need is None or need[0] in _token_scopes(authorization):
        return None
    return need[1]


def _log(http: str, body: bytes) -> None:
    if REQUESTS is None:
        return
    try:
        message = json.loads(body) if body else None
    except ValueError:
        message = None
    rpc = message.get("method") if isinstance(message, dict) else None
    with REQUESTS.open("a") as f:
        f.write(json.dumps({"http": http, "rpc": rpc}) + "\n")


def front(app: App) -> App:
    """In front of the SDK's app: every request to /mcp logged; with ``--tool-scopes``, per-tool scope
    checks: 403 ``insufficient_scope`` for a call that lacks its tool's scope (the request body is
    read first, then handed on unchanged)."""

    async def scoped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/mcp"):
            await app(scope, receive, send)
            return
        if scope["method"] != "POST":
            _log(scope["method"], b"")
            await app(scope, receive, send)
            return
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        _log("POST", body)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        named = _refusal(body, headers.get("authorization", "")) if TOOL_SCOPES else None
        if named is not None:
            metadata = f"http://127.0.0.1:{PORT}/.well-known/oauth-protected-resource/mcp"
            challenge = f'Bearer error="insufficient_scope", scope="{named}", resource_metadata="{metadata}"'
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"www-authenticate", challenge.encode()),
                                    (b"content-type", b"application/json")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b'{"error":"insufficient_scope"}'})
            return

        async def replay() -> MutableMapping[str, Any]:
            return messages.pop(0) if messages else await receive()

        await app(scope, replay, send)

    return scoped


if __name__ == "__main__":
    # What MCPServer.run("streamable-http") does, with the front in place.
    import uvicorn

    uvicorn.run(front(server.streamable_http_app(host="127.0.0.1")), host="127.0.0.1", port=PORT,
                log_level=server.settings.log_level.lower())  # fmt: skip
