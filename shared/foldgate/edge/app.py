"""The ASGI app: the MCP endpoints (one per surface), health, the admin API and the operator console.

The SDK (~0.4 s to import) is loaded on the first request that needs it, not at init (see
:mod:`foldgate.edge.endpoint` and :mod:`foldgate.edge.fast_path`). An app that serves agents only (the
cloud's McpFunction and CodeFunction, :func:`create_agents_app`) is a plain Starlette app: FastAPI, its
OpenAPI models, the admin API and the console are never imported there; its few FastAPI routes (the
OAuth client's ``/oauth/...``) are built on their first request (:mod:`foldgate.edge.lazy_routes`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from foldgate import __version__
from foldgate.edge.access import TENANT_HEADER, Access
from foldgate.edge.endpoint import McpEndpoint
from foldgate.edge.hosts import HostPolicy
from foldgate.edge.lazy_routes import LazyRoutes
from foldgate.edge.oauth import add_metadata_routes
from foldgate.model.activity import NullRecorder, Recorder
from foldgate.serve.gateway import Gateway

if TYPE_CHECKING:
    from fastapi import APIRouter, FastAPI

__all__ = ["TENANT_HEADER", "create_agents_app", "create_app", "mcp_first"]

_SURFACES = (("/mcp", "routed"), ("/mcp/all", "direct"), ("/mcp/call", "call"), ("/mcp/code", "code"))


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
    # Loaded where an app has admin or console routes (FastAPI's): agents-only apps never pay for it.
    from fastapi import APIRouter, FastAPI

    # The OpenAPI document and its docs page are served by the admin router, behind the operator
    # credential (see foldgate.edge.admin), not by FastAPI to anyone.
    app = FastAPI(title="foldgate", version=__version__, openapi_url=None, docs_url=None, redoc_url=None)
    access = access or Access(default_tenant=default_tenant, allow_tenant_header=allow_tenant_header)
    _serve(app, gateway, access, allowed_hosts, max_body_bytes, recorder, agents)
    if admin is not None:
        app.include_router(admin)
    if isinstance(console, APIRouter):
        app.include_router(console)
    elif console is not None:
        # A factory: the console is built on its first request (see foldgate.edge.console.lazy).
        _add_lazy(app, "/console", console, bare=True)
    _add_error_handlers(app)
    _add_health(app, ready)
    return app


def create_agents_app(
    gateway: Gateway,
    *,
    access: Access,
    allowed_hosts: list[str] | None = None,
    max_body_bytes: int = 1_048_576,
    ready: Callable[[], bool] | None = None,
    recorder: Recorder | None = None,
    lazy: Mapping[str, Callable[[], APIRouter]] | None = None,
) -> Starlette:
    """The app of a function that serves agents only: the MCP endpoints, their OAuth metadata and
    health, on Starlette; ``lazy`` maps a path prefix (``/oauth``) to a router factory built on the
    prefix's first request. Same paths and answers as :func:`create_app` without admin and console."""
    # 404 and 405 as FastAPI answers them (JSON), so both kinds of app answer an unknown path alike.
    app = Starlette(exception_handlers={HTTPException: _http_error})
    _serve(app, gateway, access, allowed_hosts, max_body_bytes, recorder, True)
    for prefix, factory in (lazy or {}).items():
        _add_lazy(app, prefix, factory, bare=False)
    _add_health(app, ready)
    return app


def _serve(
    app: Starlette,
    gateway: Gateway,
    access: Access,
    allowed_hosts: list[str] | None,
    max_body_bytes: int,
    recorder: Recorder | None,
    agents: bool,
) -> None:
    """State, MCP endpoints and OAuth metadata, the same on either kind of app."""
    app.state.gateway = gateway
    app.state.recorder = recorder if recorder is not None else NullRecorder()
    app.state.host_policy = HostPolicy(allowed_hosts) if allowed_hosts else None
    app.state.sdk = None
    app.state.sdk_lock = threading.Lock()
    for path, surface in _SURFACES if agents else ():
        endpoint = McpEndpoint(app, surface, access, max_body_bytes, path)
        # A class instance is routed as a raw ASGI app (mounting would answer 307 to /mcp). Every
        # method reaches it, so GET, DELETE and the rest get its JSON 405, not Starlette's plain text.
        app.router.add_route(path, endpoint)  # type: ignore[arg-type]
    if agents:
        add_metadata_routes(app, lambda: access.oauth, access.default_tenant)
    if recorder is not None:
        # One recorder per app: its agents' calls (the gateway's surfaces) and its operators' actions
        # (the admin API, the console, the OAuth callback, all built on the gateway) alike.
        gateway.recorder = recorder


def mcp_first(app: Starlette) -> ASGIApp:
    """``app`` with its MCP endpoints answered before its middleware stack and router: a request for one
    of their paths goes straight to the endpoint; everything else (lifespan, other paths, a path under a
    ``root_path``) to ``app`` as before.

    An endpoint answers every error itself (:func:`foldgate.edge.guard.shielded`), so the error
    middleware, exception handlers and route matching around it did nothing for it but cost: a ninth of
    the gateway's own CPU per proxied call (``foldgate bench call --own-cpu``). FastAPI's own
    OpenTelemetry instrumentation, on where a process configures a global provider, no longer wraps
    these requests; foldgate's ``foldgate.request`` span does (docs/operate.md)."""
    endpoints = {
        route.path: route.app
        for route in app.router.routes
        if isinstance(route, Route) and isinstance(route.app, McpEndpoint)
    }

    async def front(scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = endpoints.get(scope["path"]) if scope["type"] == "http" else None
        if endpoint is None or scope.get("root_path"):
            await app(scope, receive, send)
            return
        scope["app"] = app  # what Starlette would have set (Request.app)
        await endpoint(scope, receive, send)

    return front


def _add_lazy(app: Starlette, prefix: str, factory: Callable[[], APIRouter], *, bare: bool) -> None:
    lazy = LazyRoutes(factory, configure=_add_error_handlers)
    for path in (prefix, f"{prefix}/{{rest:path}}") if bare else (f"{prefix}/{{rest:path}}",):
        app.router.add_route(path, lazy, include_in_schema=False)  # type: ignore[arg-type]


def _add_health(app: Starlette, ready: Callable[[], bool] | None) -> None:
    async def healthz(request: Request) -> JSONResponse:
        ok = ready() if ready is not None else True
        return JSONResponse({"status": "ok" if ok else "starting"}, 200 if ok else 503)

    app.router.add_route("/healthz", healthz, methods=["GET"], include_in_schema=False)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's HTTP errors as FastAPI renders them: ``{"detail": ...}`` (no body where none may be)."""
    assert isinstance(exc, HTTPException)
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=exc.headers)
    return JSONResponse({"detail": exc.detail}, exc.status_code, headers=exc.headers)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


async def _invalid_input(request: Request, exc: Exception) -> JSONResponse:
    # Loaded with the FastAPI routes it answers for.
    from fastapi.exceptions import RequestValidationError

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
    """The error answers every FastAPI app of ours gives (the main app and the lazily built routes)."""
    # Loaded with the FastAPI routes it answers for.
    from fastapi.exceptions import RequestValidationError

    app.add_exception_handler(RequestValidationError, _invalid_input)
    app.add_exception_handler(405, _method_not_allowed)
