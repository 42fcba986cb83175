"""The client side: list and call tools on upstream MCP servers (Streamable HTTP; stdio locally).

This module and ``foldgate.mcp_server`` are the only ones that touch the ``mcp`` SDK. Listings are
read raw (one dict per tool, exactly as the upstream sent it) so unknown annotation keys survive and
one malformed tool is skipped and reported instead of failing the whole page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import TypeAdapter, ValidationError

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamError, UpstreamTimeoutError
from foldgate.upstream.net_guard import check_upstream_url_async, guarded_http_client

__all__ = ["Listing", "UpstreamClient"]

log = logging.getLogger(__name__)

MAX_PAGES = 200
_RAW = TypeAdapter(dict[str, Any])

HeaderSource = Callable[[ServerConfig], Mapping[str, str]]


@dataclass
class Listing:
    """Tools an upstream listed (raw wire dicts) and the ones skipped, with reasons."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    leaf = _leaf(exc)
    text = str(leaf).strip() or type(leaf).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def check_tool_entry(raw: Any) -> str | None:
    """Why an upstream tool entry cannot be published (None when it can)."""
    # The per-version serializers are heavy to import and only the indexer needs them.
    import mcp_types as types
    from mcp_types.methods import serialize_server_result
    from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS

    if not isinstance(raw, dict):
        return "entry is not an object"
    if not isinstance(raw.get("name"), str) or not raw["name"]:
        return "entry has no name"
    try:
        types.Tool.model_validate(raw)
        # The SDK re-checks every tools/list answer per protocol version (e.g. inputSchema must be an
        # object schema there); one such tool would fail a whole page, so it is caught here.
        page = {"tools": [raw], "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
        for version in SUPPORTED_PROTOCOL_VERSIONS:
            serialize_server_result("tools/list", version, page)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"rejected by the MCP types: {where}: {first['msg']}"
    except Exception as exc:  # any other refusal of the SDK's serializer is the same verdict
        return f"rejected by the MCP types: {_describe(exc)}"
    return None


class UpstreamClient:
    """Talks to upstreams. HTTP sessions are opened per operation (stateless, Lambda-friendly);
    stdio servers (local mode only) keep one long-lived session each.

    ``headers`` resolves a server's request headers (e.g. from a secret parameter) at call time.
    ``allow_private`` lets HTTP upstreams live on loopback/private networks; metadata, link-local and
    other never-legitimate targets are refused either way (``foldgate.net_guard``).
    """

    def __init__(
        self, *, headers: HeaderSource | None = None, allow_private: bool = True, allow_stdio: bool = False
    ) -> None:
        self._headers = headers or (lambda s: s.headers)
        self._allow_private = allow_private
        # Spawning a process from a tenant's config is for local mode only (foldgate serve / index):
        # in the cloud the child would run with the function's credentials.
        self._allow_stdio = allow_stdio
        self._stdio: dict[str, _StdioSession] = {}

    @contextlib.asynccontextmanager
    async def _session(self, server: ServerConfig) -> AsyncIterator[Any]:
        if server.transport == "stdio":
            if not self._allow_stdio:
                raise UpstreamError(
                    f"{server.name}: stdio upstreams run only in local mode (foldgate serve); "
                    "this process starts no programs from a tenant config"
                )
            session = self._stdio.get(server.name)
            if session is None or session.broken:
                session = self._stdio[server.name] = _StdioSession(server)
            yield await session.get()
            return
        # The SDK (~0.4 s to import) loads on first use, not at init.
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        assert server.url is not None  # the config guarantees a url for HTTP servers
        try:
            # Before any header (secret) is resolved or sent: the indexer and the call path both land here.
            await check_upstream_url_async(server.url, allow_private=self._allow_private)
        except UpstreamError as exc:
            raise UpstreamError(f"{server.name}: {exc.message}") from None
        headers = dict(self._headers(server))
        async with guarded_http_client(headers, allow_private=self._allow_private) as http:
            transport = streamable_http_client(server.url, http_client=http, terminate_on_close=False)
            async with Client(transport, cache=None, read_timeout_seconds=server.timeout_s) as client:
                yield client.session

    async def list_tools(self, server: ServerConfig) -> Listing:
        """Every tool of a server, following pagination cursors; raises UpstreamError on failure."""
        try:
            with anyio.fail_after(server.timeout_s):
                return await self._list(server)
        except TimeoutError as exc:
            raise UpstreamTimeoutError(
                f"{server.name}: no tool listing within {server.timeout_s:g}s"
            ) from exc
        except UpstreamError:
            raise
        except Exception as exc:
            raise UpstreamError(f"{server.name}: cannot list tools: {_describe(exc)}") from exc

    async def _list(self, server: ServerConfig) -> Listing:
        # The SDK (~0.4 s to import) loads on first use, not at init.
        import mcp_types as types

        listing = Listing()
        seen_cursors: set[str] = set()
        names: set[str] = set()
        async with self._session(server) as session:
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.send_request(types.ListToolsRequest(params=params), _RAW)
                raw_tools = page.get("tools")
                if not isinstance(raw_tools, list):
                    raise UpstreamError(f"{server.name}: tools/list result has no tools array")
                for raw in raw_tools:
                    reason = check_tool_entry(raw)
                    name = str(raw.get("name")) if isinstance(raw, dict) else "?"
                    if reason is None and name in names:
                        reason = "listed twice"
                    if reason is not None:
                        listing.skipped.append((name, reason))
                        continue
                    names.add(name)
                    listing.tools.append(raw)
                cursor = page.get("nextCursor")
                if not cursor:
                    return listing
                if not isinstance(cursor, str) or cursor in seen_cursors:
                    raise UpstreamError(f"{server.name}: tools/list pagination repeats a cursor")
                seen_cursors.add(cursor)
        raise UpstreamError(f"{server.name}: tools/list did not end within {MAX_PAGES} pages")

    async def call_tool(self, server: ServerConfig, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool; returns the raw CallToolResult dict. Transport failures raise UpstreamError."""
        # The SDK (~0.4 s to import) loads on first use, not at init.
        import mcp_types as types

        try:
            with anyio.fail_after(server.timeout_s):
                async with self._session(server) as session:
                    request = types.CallToolRequest(
                        params=types.CallToolRequestParams(name=name, arguments=arguments)
                    )
                    result: dict[str, Any] = await session.send_request(request, _RAW)
                    return result
        except TimeoutError as exc:
            raise UpstreamTimeoutError(
                f"{server.name}: {name} did not answer within {server.timeout_s:g}s"
            ) from exc
        except UpstreamError:
            raise  # raised by foldgate itself (refused URL, stdio start): already names the server
        except Exception as exc:
            # The SDK (~0.4 s to import) loads on first use, not at init.
            from mcp.shared.exceptions import MCPError

            leaf = _leaf(exc)
            if isinstance(leaf, MCPError):
                raise UpstreamError(f"{server.name}: {name} failed upstream: {leaf.error.message}") from exc
            raise UpstreamError(f"{server.name}: {name} failed: {_describe(exc)}") from exc

    async def aclose(self) -> None:
        """Stop long-lived stdio sessions."""
        for session in self._stdio.values():
            await session.close()
        self._stdio.clear()


class _StdioSession:
    """One stdio upstream process with a session held open by a background task."""

    def __init__(self, server: ServerConfig) -> None:
        self.server = server
        self.broken = False
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._session: Any = None
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        # The SDK (~0.4 s to import) loads on first use, not at init.
        from mcp import Client, StdioServerParameters

        command = self.server.command or []
        params = StdioServerParameters(command=command[0], args=command[1:], env=self.server.env or None)
        try:
            async with Client(params, cache=None, read_timeout_seconds=self.server.timeout_s) as client:
                self._session = client.session
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # the process died or never started: report it to waiters
            self._error = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            self.broken = True
            self._ready.set()

    async def get(self) -> Any:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()
        if self._session is None or self.broken:
            why = _describe(self._error or RuntimeError("exited"))
            raise UpstreamError(f"{self.server.name}: stdio server did not start: {why}")
        return self._session

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 5)
