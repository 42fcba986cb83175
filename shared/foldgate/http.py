"""The FastAPI app: MCP endpoints over stateless Streamable HTTP (JSON responses), health, admin.

Per request: cap the body, resolve the tenant, answer a plain ``tools/list`` straight from the
pre-rendered listing (the hot path: no model building, no re-serialization), and hand everything
else to the SDK with the caller's scope set.

The SDK (~0.4 s to import) is loaded on the first request that needs it, not at init: in the
stateless protocol era a new Lambda instance often serves a tools/list first, and that never needs
it. Each SDK request runs in its own stateless session manager, so there is no lifespan to manage
(Mangum can run with ``lifespan="off"``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, Final

from fastapi import APIRouter, FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from foldgate import __version__
from foldgate.access import TENANT_HEADER, Access, RateLimited
from foldgate.errors import AuthError, FoldgateError, InsufficientScopeError
from foldgate.gateway import Gateway

__all__ = ["TENANT_HEADER", "create_app"]

SERVER_NAME: Final = "foldgate"
# The protocol versions of mcp 2.3 (mcp_types.version), spelled out so the hot path never imports the
# SDK; a unit test keeps them equal to the SDK's.
MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)
HANDSHAKE_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
_PROTOCOL_META: Final = "io.modelcontextprotocol/protocolVersion"
_SERVER_INFO: Final = json.dumps(
    {"io.modelcontextprotocol/serverInfo": {"name": SERVER_NAME, "version": __version__}},
    separators=(",", ":"),
)


def _jsonrpc_error(
    status: int, code: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status, headers=headers)


def _plain_tools_list(body: bytes, request: Request) -> tuple[Any, bool] | None:
    """(id, modern) when the body is a single, plain tools/list request the fast path may answer."""
    if b"tools/list" not in body:
        return None
    accept = request.headers.get("accept", "")
    if "application/json" not in accept and "*/*" not in accept:
        return None
    if not request.headers.get("content-type", "").startswith("application/json"):
        return None
    try:
        msg = json.loads(body)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or msg.get("method") != "tools/list":
        return None
    rid = msg.get("id")
    if (
        isinstance(rid, bool)
        or not isinstance(rid, int | str)
        or not set(msg) <= {"jsonrpc", "id", "method", "params"}
    ):
        return None
    params = msg.get("params") or {}
    if (
        not isinstance(params, dict)
        or params.get("cursor") is not None
        or not set(params) <= {"_meta", "cursor"}
    ):
        return None
    version = request.headers.get("mcp-protocol-version")
    if version in MODERN_PROTOCOL_VERSIONS:
        meta = params.get("_meta")
        if request.headers.get("mcp-method") != "tools/list" or not isinstance(meta, dict):
            return None
        if meta.get(_PROTOCOL_META) != version:
            return None  # let the SDK answer the mismatch with its own error
        return rid, True
    if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
        return rid, False
    return None


class _Sdk:
    """The SDK half of the edge, built on first use: the MCP server and its transport settings."""

    def __init__(self, gateway: Gateway, allowed_hosts: list[str] | None, max_body: int) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        from foldgate.mcp_server import build_mcp_server

        self.server = build_mcp_server(gateway)
        self.max_body = max_body
        if allowed_hosts:
            self.security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts
            )
        else:
            # Behind API Gateway the Host is the API's own domain and callers authenticate by token.
            self.security = TransportSecuritySettings(enable_dns_rebinding_protection=False)

    async def check_transport(self, request: Request) -> Any:
        """The SDK's DNS-rebinding/content-type verdict for a request (None when it passes)."""
        from mcp.server.transport_security import TransportSecurityMiddleware

        return await TransportSecurityMiddleware(self.security).validate_request(request, is_post=True)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request with a fresh stateless session manager (cheap; no state to keep)."""
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        mgr = StreamableHTTPSessionManager(
            app=self.server, stateless=True, json_response=True, security_settings=self.security,
            max_request_body_size=self.max_body,
        )  # fmt: skip
        async with mgr.run():
            await mgr.handle_request(scope, receive, send)


class McpEndpoint:
    """ASGI endpoint for one MCP surface."""

    def __init__(self, app: FastAPI, surface: str, access: Access, max_body: int, path: str) -> None:
        self.app = app
        self.surface = surface
        self.path = path
        self.access = access
        self.max_body = max_body

    def _sdk(self) -> _Sdk:
        sdk: _Sdk | None = self.app.state.sdk
        if sdk is None:
            with self.app.state.sdk_lock:
                sdk = self.app.state.sdk
                if sdk is None:
                    sdk = self.app.state.sdk = _Sdk(
                        self.app.state.gateway, self.app.state.allowed_hosts, self.max_body
                    )
        return sdk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        body = b""
        if scope["method"] == "POST":
            declared = request.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.max_body:
                await _jsonrpc_error(413, -32600, f"request body exceeds {self.max_body} bytes")(
                    scope, receive, send
                )
                return
            chunks = []
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > self.max_body:
                    await _jsonrpc_error(413, -32600, f"request body exceeds {self.max_body} bytes")(
                        scope, receive, send
                    )
                    return
                chunks.append(chunk)
            body = b"".join(chunks)
        try:
            principal = await self.access.resolve(request, self.path)
        except (AuthError, InsufficientScopeError) as exc:
            from foldgate.auth.oauth.edge import challenge_headers

            challenge = challenge_headers(
                self.access.oauth, self.access.default_tenant, self.path, request, exc
            )
            status = 403 if isinstance(exc, InsufficientScopeError) else 401
            await _jsonrpc_error(status, -32001, exc.message, challenge)(scope, receive, send)
            return
        except RateLimited as exc:
            retry = {"retry-after": str(max(1, round(exc.retry_after)))}
            await _jsonrpc_error(429, -32002, str(exc), retry)(scope, receive, send)
            return
        if scope["method"] == "POST":
            # Answered here, in JSON-RPC, rather than by the SDK's transport (plain-text or empty 4xx).
            if not request.headers.get("content-type", "").lower().startswith("application/json"):
                await _jsonrpc_error(415, -32700, "Content-Type must be application/json")(
                    scope, receive, send
                )
                return
            accept = request.headers.get("accept", "").lower()
            if "application/json" not in accept and "*/*" not in accept:
                await _jsonrpc_error(406, -32600, "Accept must include application/json")(
                    scope, receive, send
                )
                return
        try:
            gateway: Gateway = self.app.state.gateway
            plain = _plain_tools_list(body, request) if body else None
            if plain is not None:
                if self.app.state.allowed_hosts:  # local serve: the SDK's DNS-rebinding check applies
                    rejection = await self._sdk().check_transport(request)
                    if rejection is not None:
                        await rejection(scope, receive, send)
                        return
                listing = gateway.listing_json(principal, self.surface)
                await self._send_listing(plain[0], plain[1], listing, send)
                return
            # Validates the tenant before the SDK runs (unknown tenants fail here, clearly).
            gateway.config(principal.tenant)
        except FoldgateError as exc:
            await _jsonrpc_error(404 if exc.code == "not_found" else 400, -32600, exc.message)(
                scope, receive, send
            )
            return
        sdk = self._sdk()
        from foldgate.mcp_server import RequestScope, current_scope

        token = current_scope.set(RequestScope(principal, self.surface))
        try:
            await sdk.handle(scope, _replay(body), send)
        finally:
            current_scope.reset(token)

    @staticmethod
    async def _send_listing(rid: Any, modern: bool, listing: str, send: Send) -> None:
        head = '{"jsonrpc":"2.0","id":' + json.dumps(rid) + ',"result":{'
        if modern:
            text = (
                head + '"cacheScope":"private","resultType":"complete","tools":' + listing
                + ',"ttlMs":0,"_meta":' + _SERVER_INFO + "}}"
            )  # fmt: skip
        else:
            text = head + '"tools":' + listing + "}}"
        payload = text.encode("utf-8")
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


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
) -> FastAPI:
    """Build the HTTP app around a Gateway.

    ``allowed_hosts`` enables the SDK's DNS-rebinding protection for those Host values (local serve);
    None disables it (behind API Gateway the Host is the API's domain, and auth is by token).
    """
    app = FastAPI(
        title="foldgate",
        version=__version__,
        openapi_url="/api/v1/openapi.json",
        docs_url="/api/v1/docs",
        redoc_url=None,
    )
    app.state.gateway = gateway
    app.state.allowed_hosts = allowed_hosts
    app.state.sdk = None
    app.state.sdk_lock = threading.Lock()
    access = access or Access(default_tenant=default_tenant, allow_tenant_header=allow_tenant_header)
    surfaces = (("/mcp", "routed"), ("/mcp/all", "direct"), ("/mcp/call", "call"), ("/mcp/code", "code"))
    for path, surface in surfaces:
        endpoint = McpEndpoint(app, surface, access, max_body_bytes, path)
        # A class instance is routed as a raw ASGI app (mounting would answer 307 to /mcp).
        app.router.add_route(path, endpoint, methods=["GET", "POST", "DELETE"])  # type: ignore[arg-type]

    if admin is not None:
        app.include_router(admin)
    from foldgate.auth.oauth.edge import add_metadata_routes

    add_metadata_routes(app, lambda: access.oauth, access.default_tenant)

    @app.exception_handler(RequestValidationError)
    async def invalid_input(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's default echoes the raw input, and cannot encode a body that is not UTF-8 (a 500);
        # where and why is what a client can act on.
        errors = [
            {
                "loc": [str(part) for part in e.get("loc", ())],
                "msg": str(e.get("msg")),
                "type": str(e.get("type")),
            }
            for e in exc.errors()
        ]
        return JSONResponse({"detail": errors}, 422)

    @app.get("/healthz")
    def healthz() -> JSONResponse:
        ok = ready() if ready is not None else True
        return JSONResponse({"status": "ok" if ok else "starting"}, 200 if ok else 503)

    return app
