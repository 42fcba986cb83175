"""The ASGI app: the MCP endpoints (one per surface), health, the admin API and the operator console.

The SDK (~0.4 s to import) is loaded on the first request that needs it, not at init (see
:mod:`foldgate.edge.endpoint` and :mod:`foldgate.edge.fast_path`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from fastapi import APIRouter, FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.routing import Match

from foldgate import __version__
from foldgate.edge.access import TENANT_HEADER, Access
from foldgate.edge.console.lazy import LazyConsole
from foldgate.edge.endpoint import McpEndpoint
from foldgate.edge.hosts import HostPolicy
from foldgate.edge.oauth import add_metadata_routes
from foldgate.model.activity import NullRecorder, Recorder
from foldgate.serve.gateway import Gateway

__all__ = ["TENANT_HEADER", "create_app"]


def create_app(
    gateway: Gateway,
    *,
    default_tenant: str = "default",
    allow_tenant_header: bool = True,
    access: Access | None = None,
    allowed_hosts: list[str] | None = None,
    max_body_bytes: int = 1_048_576,
    ready: Callable[[], bool] | None = None,
    admin: APIRouter | None = None,
    console: APIRouter | Callable[[], APIRouter] | None = None,
    recorder: Recorder | None = None,
    agents: bool = True,
) -> FastAPI:
    """Build the HTTP app around a Gateway.

    ``recorder`` takes the activity events of this app's requests (``app.state.recorder``; a
    NullRecorder when None).

    ``allowed_hosts`` enables DNS-rebinding protection on the MCP paths for those Host values (and
    Origins naming them); a loopback entry admits every loopback spelling on any port (see
    :mod:`foldgate.edge.hosts`). None or empty disables it (behind API Gateway without configured
    public hosts: the Host is the API's domain, and auth is by token).

    ``agents`` False leaves out every path agents use (the MCP endpoints and their OAuth metadata):
    the cloud's AdminFunction serves only the admin API and the console.
    """
    # The OpenAPI document and its docs page are served by the admin router, behind the operator
    # credential (see foldgate.edge.admin), not by FastAPI to anyone.
    app = FastAPI(title="foldgate", version=__version__, openapi_url=None, docs_url=None, redoc_url=None)
    app.state.gateway = gateway
    app.state.recorder = recorder if recorder is not None else NullRecorder()
    app.state.host_policy = HostPolicy(allowed_hosts) if allowed_hosts else None
    app.state.sdk = None
    app.state.sdk_lock = threading.Lock()
    access = access or Access(default_tenant=default_tenant, allow_tenant_header=allow_tenant_header)
    surfaces = (("/mcp", "routed"), ("/mcp/all", "direct"), ("/mcp/call", "call"), ("/mcp/code", "code"))
    for path, surface in surfaces if agents else ():
        endpoint = McpEndpoint(app, surface, access, max_body_bytes, path)
        # A class instance is routed as a raw ASGI app (mounting would answer 307 to /mcp). Every
        # method reaches it, so GET, DELETE and the rest get its JSON 405, not Starlette's plain text.
        app.router.add_route(path, endpoint)  # type: ignore[arg-type]

    if admin is not None:
        app.include_router(admin)
    if isinstance(console, APIRouter):
        app.include_router(console)
    elif console is not None:
        # A factory: the console is built on its first request (see foldgate.edge.console.lazy).
        lazy = LazyConsole(console, configure=_add_error_handlers)
        for path in ("/console", "/console/{rest:path}"):
            app.router.add_route(path, lazy, include_in_schema=False)  # type: ignore[arg-type]
    if agents:
        add_metadata_routes(app, lambda: access.oauth, access.default_tenant)
    if recorder is not None:
        # One recorder per app: its agents' calls (the gateway's surfaces) and its operators' actions
        # (the admin API, the console, the OAuth callback, all built on the gateway) alike.
        gateway.recorder = recorder

    _add_error_handlers(app)

    @app.get("/healthz", responses={503: {"description": "Starting: the first index run has not finished"}})
    def healthz() -> JSONResponse:
        ok = ready() if ready is not None else True
        return JSONResponse({"status": "ok" if ok else "starting"}, 200 if ok else 503)

    return app


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


async def _invalid_input(request: Request, exc: Exception) -> JSONResponse:
    # FastAPI's default echoes the raw input, and cannot encode a body that is not UTF-8 (a 500);
    # where and why is what a client can act on.
    assert isinstance(exc, RequestValidationError)
    errors = [
        {
            "loc": [str(part) for part in e.get("loc", ())],
            "msg": str(e.get("msg")),
            "type": str(e.get("type")),
        }
        for e in exc.errors()
    ]
    return JSONResponse({"detail": errors}, 422)


async def _method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    # Starlette's 405 names the methods of the first route matching the path only; a path several
    # routes serve (GET and POST /api/v1/approvals) allows all of theirs, as the OpenAPI document says.
    allowed = [
        method
        for method in _METHODS
        if any(
            r.matches({**request.scope, "method": method})[0] is Match.FULL for r in request.app.router.routes
        )
    ]
    headers = {"allow": ", ".join(allowed)} if allowed else None
    return JSONResponse({"detail": "Method Not Allowed"}, 405, headers=headers)


def _add_error_handlers(app: FastAPI) -> None:
    """The error answers every app of ours gives (the main app and the lazily built console)."""
    app.add_exception_handler(RequestValidationError, _invalid_input)
    app.add_exception_handler(405, _method_not_allowed)
