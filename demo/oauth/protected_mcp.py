"""An upstream MCP server that requires OAuth access tokens: the MCP Python SDK's resource-server support.
The demo's OAuth-protected upstream (demo/run.sh) and the one the upstream OAuth tests connect to.

Usage: ``python protected_mcp.py <port> <issuer> "<scope> ..."`` serves Streamable HTTP on
``http://127.0.0.1:<port>/mcp``. The SDK answers a request without a valid token with 401 and
``WWW-Authenticate: Bearer resource_metadata=...`` and serves the RFC 9728 document naming ``issuer``;
tokens are checked here as real resource servers do: an ES256/RS256 JWT from the issuer's JWKS, ``iss``
the issuer, ``aud`` this server's URL (RFC 8707), unexpired, carrying every scope named (else 403
``insufficient_scope``).

Tools: ``whoami`` answers the subject and client the token was issued to (tests check whose grant a
call used); ``echo`` answers its text. Every tool call is appended to ``<port>.calls`` beside this file's
working directory as one JSON line (subject, tool), so a test can count what really ran upstream.
"""

from __future__ import annotations

import json
import sys
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


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT)
