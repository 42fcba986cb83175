"""The HTTP side of OAuth: the bearer credential, the challenge headers and the metadata routes.

Kept apart from the HTTP app so the edge only calls three functions: :func:`oauth_bearer` (is this
request's credential an OAuth access token?), :func:`challenge_headers` (what a 401/403 carries) and
:func:`add_metadata_routes` (RFC 9728 documents at ``/.well-known/oauth-protected-resource`` and
``/.well-known/oauth-protected-resource/mcp/...``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from foldgate.auth.oauth.metadata import MCP_PATHS, PRM_PATH
from foldgate.errors import InsufficientScopeError
from foldgate.model.agent_token import looks_like_token

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request

    from foldgate.auth.oauth.verifier import OAuthVerifier

__all__ = ["add_metadata_routes", "bearer_credential", "challenge_headers", "oauth_bearer"]

_REALM: Final = {"www-authenticate": 'Bearer realm="foldgate"'}


def bearer_credential(request: Request) -> str | None:
    """The credential of an ``Authorization: Bearer`` header; None when absent or another scheme."""
    scheme, _, credential = request.headers.get("authorization", "").partition(" ")
    credential = credential.strip()
    return credential if scheme.lower() == "bearer" and credential else None


def oauth_bearer(request: Request) -> str | None:
    """The bearer credential when it is not an ``fgt_`` agent token (so: an OAuth access token)."""
    credential = bearer_credential(request)
    return None if credential is None or looks_like_token(credential) else credential


def challenge_headers(
    verifier: OAuthVerifier | None, tenant: str, path: str, request: Request, exc: Exception
) -> dict[str, str]:
    """``WWW-Authenticate`` for a refusal at MCP endpoint ``path``.

    With OAuth on for the tenant it points at the endpoint's metadata (how an MCP client discovers
    the authorization server) and carries the scope needed; ``error`` is ``insufficient_scope`` for a
    403 and ``invalid_token`` when a credential was presented (RFC 6750 §3.1).
    """
    if verifier is None or verifier.config(tenant) is None:
        return dict(_REALM)
    if isinstance(exc, InsufficientScopeError):
        value = verifier.challenge(tenant, path, error="insufficient_scope", scope=exc.scope)
    else:
        presented = bool(request.headers.get("authorization"))
        value = verifier.challenge(tenant, path, error="invalid_token" if presented else None)
    return {"www-authenticate": value}


def add_metadata_routes(app: Starlette, verifier: Callable[[], OAuthVerifier | None], tenant: str) -> None:
    """Serve RFC 9728 metadata for the base URL and each MCP endpoint (404 while OAuth is off)."""
    # Loaded where the app is built, not when access imports the bearer helpers.
    from starlette.responses import JSONResponse

    def route(path: str) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def metadata(request: Request) -> JSONResponse:
            current = verifier()
            doc = None if current is None else current.metadata_document(tenant, path)
            if doc is None:
                return JSONResponse({"detail": "Not Found"}, 404)
            # Public and rarely changing, but per deployment: a short shared cache is enough.
            return JSONResponse(doc, headers={"cache-control": "public, max-age=300"})

        return metadata

    for path in ("", *MCP_PATHS):
        app.router.add_route(PRM_PATH + path, route(path), methods=["GET"], include_in_schema=False)
