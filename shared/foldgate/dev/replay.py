"""Replay upstream: serve a recorded catalog as real MCP servers over Streamable HTTP, for tests and demos.

One MCP server per catalog server at ``/<slug>/mcp``; tools/list returns the recorded entries (paginated),
tools/call validates arguments against the recorded inputSchema and answers with a deterministic echo.
Every call received is logged on the app (``app.calls``, ``GET``/``DELETE /_calls``).
``PUT /_tools/<slug>`` with a JSON array of tool entries replaces what that server lists, as a deploy
of the upstream would (tests of change triggers).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
import socket
import sys
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result
from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS
from pydantic import ValidationError
from referencing import Registry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from foldgate.dev.corpus import load_catalog
from foldgate.errors import ConfigError
from foldgate.model.jsonutil import compact
from foldgate.model.tool import Tool, tool_from_wire

__all__ = ["ReplayApp", "SkippedTool", "build_replay_app", "listening_socket", "replay_slugs", "run_replay"]

logger = logging.getLogger(__name__)

_SLUG_JUNK = re.compile(r"[^a-z0-9_-]+")
_MAX_SAMPLE_DEPTH = 16


@dataclass(frozen=True, slots=True)
class SkippedTool:
    """A recorded tool the replay could not serve (the SDK rejected its entry, or a duplicate name)."""

    server: str
    name: str
    reason: str


def replay_slugs(servers: Iterable[str]) -> dict[str, str]:
    """Map URL slug -> server name for distinct server names, in first-seen order.

    Lower-cased, runs outside ``[a-z0-9_-]`` become ``-``, trimmed; collisions get ``-2``, ``-3``...
    """
    out: dict[str, str] = {}
    for name in dict.fromkeys(servers):
        base = _SLUG_JUNK.sub("-", name.lower()).strip("-") or "server"
        slug, n = base, 1
        while slug in out:
            n += 1
            slug = f"{base}-{n}"
        out[slug] = name
    return out


def _compile(schema: Any) -> Validator | None:
    """A compiled validator (dialect from ``$schema``, else 2020-12, as the gateway and the SDK client do),
    or None when the schema cannot compile: callers fail open."""
    if not isinstance(schema, dict):
        return None
    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        validator: Validator = cls(schema, registry=Registry())
    except Exception:  # SchemaError, or a schema hostile enough to break compilation
        return None
    return validator


def _first_error(validator: Validator | None, instance: Any) -> str | None:
    """The best validation error message, or None when valid (or when validation itself blows up)."""
    if validator is None:
        return None
    try:
        error = best_match(validator.iter_errors(instance))
    except Exception:  # unresolvable $ref, recursion...: fail open
        return None
    return None if error is None else str(error.message)


def _sample(schema: Any, root: Any, depth: int = 0) -> Any:
    """A minimal instance of a schema (best effort; the caller validates it)."""
    if not isinstance(schema, dict) or depth > _MAX_SAMPLE_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, dict) else None
        return _sample(target, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _sample(schema[key][0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    if kind == "object" or (kind is None and props):
        required = [r for r in schema.get("required", []) if isinstance(r, str)]
        return {r: _sample(props.get(r, {}), root, depth + 1) for r in required}
    if kind == "array":
        count = schema.get("minItems", 0) if isinstance(schema.get("minItems"), int) else 0
        return [_sample(schema.get("items", {}), root, depth + 1) for _ in range(min(count, 8))]
    if kind == "string":
        length = schema.get("minLength", 0)
        return "x" * min(length, 64) if isinstance(length, int) else ""
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        base = low + 1 if isinstance(low, int | float) and "minimum" not in schema else low
        return base if isinstance(base, int | float) else 0
    return False if kind == "boolean" else None


def _check_wire(tool: types.Tool) -> None:
    """Raise ValidationError unless every protocol version's tools/list surface accepts the tool.

    ``types.Tool`` takes e.g. ``inputSchema: {"type": 5}``, but the per-version serializer the server
    runs on each answer rejects it, which would fail the whole page; such a tool must be skipped up front.
    """
    entry = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    # The envelope keys the runner adds on modern versions; older surfaces ignore them.
    page = {"tools": [entry], "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
    for version in SUPPORTED_PROTOCOL_VERSIONS:
        serialize_server_result("tools/list", version, page)


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"replay:{offset}".encode()).decode()


def _offset(cursor: str, total: int) -> int:
    with contextlib.suppress(ValueError):  # binascii.Error and UnicodeDecodeError are ValueErrors
        prefix, _, number = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if prefix == "replay" and 0 < (offset := int(number)) < total:
            return offset
    raise MCPError(code=types.INVALID_PARAMS, message="invalid cursor")


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


class _ReplayServer:
    """One catalog server: its listed tools, compiled validators and the MCP handlers."""

    def __init__(self, name: str, slug: str, tools: list[Tool], page_size: int, app: ReplayApp) -> None:
        self.name, self.slug, self.page_size, self.app = name, slug, page_size, app
        self.load(tools)
        self.server: Server[Any] = Server(
            name,
            version="replay",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            get_tool_input_schema=self.input_schema,
        )

    def load(self, tools: list[Tool]) -> None:
        """Serve these tools from now on (the server's whole listing)."""
        self.listed: list[types.Tool] = []
        self.tools: dict[str, Tool] = {}
        app, name = self.app, self.name
        for tool in tools:
            if tool.name in self.tools:
                app.skipped.append(SkippedTool(name, tool.name, "duplicate tool name"))
                continue
            try:
                listed = types.Tool.model_validate(tool.to_wire())
                _check_wire(listed)
            except ValidationError as exc:
                reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                app.skipped.append(SkippedTool(name, tool.name, reason))
                continue
            self.listed.append(listed)
            self.tools[tool.name] = tool
        self._validators: dict[str, Validator | None] = {}
        self._outputs: dict[str, Validator | None] = {}

    def input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.tools.get(name)
        return tool.input_schema if tool is not None and isinstance(tool.input_schema, dict) else None

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        start = 0 if cursor is None else _offset(cursor, len(self.listed))
        end = start + self.page_size
        next_cursor = _cursor(end) if end < len(self.listed) else None
        return types.ListToolsResult(tools=self.listed[start:end], next_cursor=next_cursor)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments: dict[str, Any] = dict(params.arguments or {})
        entry: dict[str, Any] = {"server": self.name, "slug": self.slug, "tool": params.name}
        entry["arguments"] = arguments
        self.app.calls.append(entry)
        tool = self.tools.get(params.name)
        if tool is None:
            entry.update(valid=False, outcome="unknown_tool")
            return _text(f"unknown tool: {params.name}", is_error=True)
        if params.name not in self._validators:
            self._validators[params.name] = _compile(tool.input_schema)
        error = _first_error(self._validators[params.name], arguments)
        if error is not None:
            entry.update(valid=False, outcome="invalid_arguments", error=error)
            return _text(f"invalid arguments: {error}", is_error=True)
        entry.update(valid=True, outcome="echo")
        echo: dict[str, Any] = {"server": self.name, "tool": tool.name, "arguments": arguments}
        result = _text(compact(echo))
        if tool.output_schema is None:
            result.structured_content = echo
            return result
        # Clients require structured content that conforms to a declared outputSchema (mcp 2.3's client
        # raises otherwise): send the echo if it conforms, else a minimal sample of the schema, else none.
        if params.name not in self._outputs:
            self._outputs[params.name] = _compile(tool.output_schema)
        validator = self._outputs[params.name]
        if validator is not None:
            for candidate in (echo, _sample(tool.output_schema, tool.output_schema)):
                if isinstance(candidate, dict) and validator.is_valid(candidate):
                    result.structured_content = candidate
                    break
        return result


class ReplayApp(Starlette):
    """The replay ASGI app; ``calls`` logs every tools/call received, ``skipped`` the unserved tools."""

    calls: list[dict[str, Any]]
    skipped: list[SkippedTool]
    slugs: dict[str, str]
    servers: dict[str, _ReplayServer]
    managers: dict[str, StreamableHTTPSessionManager]


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def _calls(request: Request) -> Response:
    app: ReplayApp = request.app
    if request.method == "DELETE":
        app.calls.clear()
        return Response(status_code=204)
    return JSONResponse(app.calls)


async def _replace_tools(request: Request) -> Response:
    app: ReplayApp = request.app
    served = app.servers.get(request.path_params["slug"])
    if served is None:
        return PlainTextResponse("unknown server", status_code=404)
    try:
        entries = await request.json()
        if not isinstance(entries, list):
            raise ValueError("expected a JSON array of tool entries")
        tools = [tool_from_wire(served.name, e) for e in entries]
    except (ValueError, TypeError, AttributeError, ValidationError) as exc:
        return PlainTextResponse(f"bad tool list: {exc}", status_code=400)
    served.load(tools)
    return JSONResponse({"server": served.name, "tools": len(served.listed)})


class _McpEndpoint:
    # A class instance (not a function) makes Starlette's Route treat the endpoint as a raw ASGI app.
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app: ReplayApp = scope["app"]
        manager = app.managers.get(scope["path_params"]["slug"])
        if manager is None:
            await PlainTextResponse("unknown server", status_code=404)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    assert isinstance(app, ReplayApp)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    # Fresh managers per lifespan cycle: a manager's run() can only be entered once.
    app.managers = {
        slug: StreamableHTTPSessionManager(
            app=rs.server, stateless=True, json_response=True, security_settings=security
        )
        for slug, rs in app.servers.items()
    }
    async with contextlib.AsyncExitStack() as stack:
        for manager in app.managers.values():
            await stack.enter_async_context(manager.run())
        yield


def build_replay_app(
    catalog_path_or_tools: str | Path | Iterable[Tool], *, server: str | None = None, page_size: int = 50
) -> tuple[ReplayApp, dict[str, str]]:
    """Build the replay app for a catalog file (anything ``load_catalog`` reads) or a list of Tools.

    ``server`` serves only that catalog server (by name, or by slug). Returns the app and the served
    ``slug -> server name`` map; each server answers at ``/<slug>/mcp``. Tools the SDK rejects are
    skipped, logged and listed in ``app.skipped``.
    """
    if page_size < 1:
        raise ConfigError(f"page_size must be at least 1, got {page_size}")
    if isinstance(catalog_path_or_tools, str | Path):
        tools = load_catalog(catalog_path_or_tools)
    else:
        tools = list(catalog_path_or_tools)
    slugs = replay_slugs(t.server for t in tools)
    if server is not None:
        chosen = [s for s, n in slugs.items() if n == server] or [s for s in slugs if s == server]
        if not chosen:
            raise ConfigError(f"server {server!r} is not in the catalog")
        slugs = {chosen[0]: slugs[chosen[0]]}
    app = ReplayApp(
        routes=[
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/_calls", _calls, methods=["GET", "DELETE"]),
            Route("/_tools/{slug}", _replace_tools, methods=["PUT"]),
            Route("/{slug}/mcp", _McpEndpoint(), methods=["GET", "POST", "DELETE"]),
        ],
        lifespan=_lifespan,
    )
    app.calls, app.skipped, app.slugs, app.managers = [], [], slugs, {}
    by_server: dict[str, list[Tool]] = {name: [] for name in slugs.values()}
    for tool in tools:
        if tool.server in by_server:
            by_server[tool.server].append(tool)
    app.servers = {
        slug: _ReplayServer(name, slug, by_server[name], page_size, app) for slug, name in slugs.items()
    }
    for skipped in app.skipped:
        logger.warning("replay skips %s:%s: %s", skipped.server, skipped.name, skipped.reason)
    return app, slugs


def listening_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket whose accepted connections send without Nagle's delay.

    Its proto is TCP, named: asyncio turns Nagle off only on sockets whose proto says TCP, so a
    proto-0 socket's connections kept it, and a keep-alive client waited ~40 ms on every answer after
    its first (the answer's body held until the client's delayed ACK of its head)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def run_replay(
    catalog: str | Path | Iterable[Tool],
    host: str = "127.0.0.1",
    port: int = 0,
    server: str | None = None,
    page_size: int = 50,
) -> None:
    """Serve a catalog until interrupted, printing ``<server name>\\t<url>`` per served server.

    ``port=0`` picks a free port; the socket is listening before the lines are printed, so a reader
    may connect as soon as it sees them.
    """
    # The SDK loads only when a replay server starts.
    import uvicorn

    app, slugs = build_replay_app(catalog, server=server, page_size=page_size)
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    url_host = f"[{host}]" if sock.family == socket.AF_INET6 else host
    for skipped in app.skipped:
        print(f"skipped {skipped.server}:{skipped.name}: {skipped.reason}", file=sys.stderr)
    for slug, name in slugs.items():
        print(f"{name}\thttp://{url_host}:{bound}/{slug}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
