"""The client side: list and call tools on upstream MCP servers (Streamable HTTP; stdio locally).

HTTP upstreams are reached through the session pool's plain JSON-RPC sessions (no SDK on the call
path, see ``foldgate.upstream.plain_session``); stdio upstreams and listing validation use the ``mcp``
SDK, loaded on first use (only ``upstream/`` and ``edge/`` touch it). Listings are
read raw (one dict per tool, exactly as the upstream sent it) so unknown annotation keys survive and
one malformed tool is skipped and reported instead of failing the whole page.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from pydantic import TypeAdapter, ValidationError

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamDeadlineError, UpstreamError, UpstreamTimeoutError
from foldgate.model.bounded import bounded
from foldgate.model.deadline import time_left
from foldgate.model.param_headers import HeaderParam, param_headers
from foldgate.telemetry.tracing import span
from foldgate.upstream import tasks as upstream_tasks
from foldgate.upstream.call_errors import (
    as_mcp_error,
    describe,
    leaf_of,
    lost_in_transit,
    passed_through,
    rpc_error_message,
)
from foldgate.upstream.changes import ChangeListener
from foldgate.upstream.credentials import (
    UpstreamAuth,
    after_refusal,
    credential_identity,
    raise_if_refused,
    resolve_headers,
    split_authorization,
)
from foldgate.upstream.net_guard import check_upstream_url_async
from foldgate.upstream.offerings import Offerings, list_offerings_on, request_of
from foldgate.upstream.plain_session import PlainSession
from foldgate.upstream.pool import AuthRefusedError, PooledSession, SessionKey, SessionPool, retry_safe
from foldgate.upstream.relay import (
    MAX_INPUT_ROUNDS,
    Relay,
    current_relay,
    handshake_relay,
    refusal,
    relaying,
)
from foldgate.upstream.stdio_session import StdioSession

__all__ = ["Listing", "Offerings", "UpstreamClient"]  # Offerings re-exported for the indexer

log = logging.getLogger(__name__)

MAX_PAGES = 200
_RAW = TypeAdapter(dict[str, Any])

HeaderSource = Callable[[ServerConfig], Mapping[str, str]]
T = TypeVar("T")

# What an agent (or its user) can do about an upstream_timeout: which one depends on the bound that ended
# the wait, the server's own timeout or the request's deadline (the function's limit on the cloud path).
TIMEOUT_HINT: Final = (
    "The upstream did not answer within its server's timeout_s. Retry later, or make a narrower request "
    "so it answers sooner; the operator can raise the server's timeout_s."
)
DEADLINE_HINT: Final = (
    "The gateway stopped waiting so that it could still answer before its own time limit (on the cloud "
    "path a request gets at most about 27 s, time spent before this call included). Retry later, or make "
    "a narrower request so the tool answers sooner; the operator can raise the function's timeout (API "
    "Gateway caps it at 30 s) or, once long-running calls are available, use them for this tool."
)


@dataclass
class Listing:
    """Tools an upstream listed (raw wire dicts) and the ones skipped, with reasons."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # The upstream's own freshness hint (``ttlMs`` of its first page), when it gave a sane one.
    ttl_ms: int | None = None
    # The operator's declared tools (a per_user server with no shared grant), not the upstream's.
    declared: bool = False


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
        return f"rejected by the MCP types: {describe(exc)}"
    return None


class UpstreamClient:
    """Talks to upstreams over warm sessions: HTTP upstreams through a ``SessionPool`` (one pinned
    client and MCP session per upstream identity, reused across requests and Lambda invocations);
    stdio servers (local mode only) keep one long-lived session each.

    ``headers`` resolves a server's request headers (e.g. from a secret parameter) at call time;
    ``auth`` adds the OAuth Authorization header of ``auth:`` kinds other than ``static``, for the
    tenant and subject of :func:`foldgate.model.caller.current_caller` (see :meth:`request_headers`).
    ``allow_private`` lets HTTP upstreams live on loopback/private networks; metadata, link-local and
    other never-legitimate targets are refused either way (``foldgate.upstream.net_guard``).
    ``on_change`` hears the server's name whenever a held session receives a ``list_changed``
    notification for tools, prompts or resources (local mode reindexes that server).
    """

    def __init__(
        self,
        *,
        headers: HeaderSource | None = None,
        auth: UpstreamAuth | None = None,
        allow_private: bool = True,
        allow_stdio: bool = False,
        on_change: ChangeListener | None = None,
    ) -> None:
        self._headers = headers or (lambda s: s.headers)
        self._auth = auth
        self._allow_private = allow_private
        # Spawning a process from a tenant's config is for local mode only (foldgate serve / index):
        # in the cloud the child would run with the function's credentials.
        self._allow_stdio = allow_stdio
        self._stdio: dict[str, StdioSession] = {}
        self._on_change = on_change
        self._pool = SessionPool(allow_private=allow_private, on_change=on_change)

    async def _stdio_session(self, server: ServerConfig) -> Any:
        if not self._allow_stdio:
            raise UpstreamError(
                f"{server.name}: stdio upstreams run only in local mode (foldgate serve); "
                "this process starts no programs from a tenant config"
            )
        session = self._stdio.get(server.name)
        # A session started on another (finished) event loop cannot be used from this one.
        if session is None or session.broken or session.loop is not asyncio.get_running_loop():
            session = self._stdio[server.name] = StdioSession(server, self._on_change)
        return await session.get()

    @contextlib.asynccontextmanager
    async def _pooled(
        self, server: ServerConfig, *, relays_input: bool = False
    ) -> AsyncIterator[PooledSession]:
        """The warm pooled session of an HTTP upstream (see ``foldgate.upstream.pool``).

        ``relays_input``: the request may relay requests for input (a tool call, a prompt). With the
        server's ``protocol`` on ``auto``, such a request from a 2025-era client that takes them on its
        stream goes to a handshake-era session of the upstream when it accepts one: an upstream
        half-upgraded to 2026-07-28 may ask for input only in the handshake era (server-to-client
        requests), and at 2025 anything it asks reaches that client directly. An upstream that refuses
        the handshake is remembered and keeps its newest version (its ``input_required`` is then asked
        on the stream by :meth:`call_tool`)."""
        assert server.url is not None  # the config guarantees a url for HTTP servers
        try:
            # Before any header (secret) is resolved or sent: the indexer and the call path both land here.
            # A cached verdict costs a dict look-up; new connections are pinned again by the guarded client.
            await check_upstream_url_async(server.url, allow_private=self._allow_private)
        except UpstreamError as exc:
            raise UpstreamError(f"{server.name}: {exc.message}") from None
        headers = await self.request_headers(server)
        # The token is sent per request: a refreshed one keeps the session (see foldgate.upstream.pool).
        authorization = split_authorization(server, headers)
        key = SessionKey.of(server, headers, credential_identity(server))
        async with contextlib.AsyncExitStack() as stack:
            pooled: PooledSession | None = None
            relayed = relays_input and key.protocol == "auto" and handshake_relay(current_relay())
            if relayed and self._pool.may_speak_handshake(key):
                legacy = dataclasses.replace(key, protocol="legacy")
                try:
                    pooled = await stack.enter_async_context(
                        self._pool.session(legacy, timeout_s=server.timeout_s, authorization=authorization)
                    )
                except AuthRefusedError:
                    raise
                except Exception as exc:
                    self._pool.refuses_handshake(key)
                    log.info(
                        "%s: no handshake-era session (%s); staying on its newest",
                        server.name,
                        describe(exc),
                    )
            if pooled is None:
                pooled = await stack.enter_async_context(
                    self._pool.session(key, timeout_s=server.timeout_s, authorization=authorization)
                )
            yield pooled

    async def request_headers(self, server: ServerConfig) -> dict[str, str]:
        """The one place a server's request headers are resolved: static ones (literal and secret),
        plus the OAuth Authorization header for the current caller when the server uses OAuth."""
        return await resolve_headers(server, self._headers(server), self._auth)

    async def list_tools(self, server: ServerConfig) -> Listing:
        """Every tool of a server, following pagination cursors; raises UpstreamError on failure."""

        async def run(session: Any) -> Listing:
            return await self._list(server, session)

        listing: Listing = await self._on_session(
            server,
            run,
            "tools/list",
            retry=True,  # listing is read-only: a refused or lost page is safe to ask for again
            timeout_text="no tool listing within",
            failure_text="cannot list tools",
            rpc_errors=False,  # the indexer keeps the last good tools on any UpstreamError
        )
        return listing

    async def _list(self, server: ServerConfig, session: Any) -> Listing:
        # The SDK (~0.4 s to import) loads on first use, not at init.
        import mcp_types as types

        listing = Listing()
        seen_cursors: set[str] = set()
        names: set[str] = set()
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.send_request(types.ListToolsRequest(params=params), _RAW)
            raw_tools = page.get("tools")
            ttl = page.get("ttlMs")
            if cursor is None and isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0:
                listing.ttl_ms = ttl
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

    async def call_tool(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        *,
        annotations: Mapping[str, Any] | None = None,
        header_params: tuple[HeaderParam, ...] = (),
    ) -> dict[str, Any]:
        """Call a tool; returns the raw CallToolResult dict. Transport failures raise UpstreamError.
        ``header_params``: the tool's ``x-mcp-header`` arguments, sent to a 2026-07-28 upstream in
        ``Mcp-Param-*`` headers as well (SEP-2243).

        What the upstream sends back while the call runs goes through the running request's relay
        (:mod:`foldgate.upstream.relay`: progress, logs, requests for input; a task runner hears each
        progress notification through ``foldgate.upstream.relay.listening``). A request
        for input nothing could carry, or an ``input_required`` result the client cannot take, ends
        the call in UpstreamInputError naming what was asked (the upstream was refused at once).

        A session the upstream expired is re-initialised once and the call sent again (the upstream
        refused it before running it). A call lost in transit is sent again only when ``annotations``
        mark the tool read-only or idempotent: it may already have run. Waiting for one of the
        server's ``max_concurrency`` slots longer than its ``queue_timeout_s`` raises UpstreamBusyError.
        On Lambda the request's deadline bounds the whole call, retry and slot wait included (see
        ``_bounded``).
        """

        relay = (current_relay() or Relay()).for_call()

        async def work() -> dict[str, Any]:
            if server.transport == "stdio":
                return await _send_call(await self._stdio_session(server), name, arguments)
            for _ in range(MAX_INPUT_ROUNDS + 1):
                try:
                    with relaying(relay):
                        result = await self._call_http(
                            server, name, arguments, retry_safe(annotations), header_params
                        )
                except Exception as exc:
                    # The upstream failed the call because it was told no: what it asked is the news.
                    if relay.refused:
                        raise refusal(server.name, name, relay.refused) from exc
                    raise
                if relay.refused:
                    raise refusal(server.name, name, relay.refused)
                if result.get("resultType") != "input_required":
                    return result
                # A handshake-era client was asked on its stream: the call is sent again with the replies.
                resume = await relay.answer_input_required(server.name, name, result)
                if resume is None:
                    return result  # the edge relays it to a 2026-07-28 client
                relay.resume = resume
            raise UpstreamError(
                f"{server.name}: {name} still asked for input after {MAX_INPUT_ROUNDS} rounds"
            )

        # The span is the parent the upstream is told of (traceparent); outcomes only, never messages.
        with span(
            "foldgate.upstream", "client", server=server.name, tool=name, method="tools/call"
        ) as traced:
            try:
                result = await self._bounded(server, work, f"{name} did not answer within")
            except UpstreamTimeoutError:
                traced.fail("upstream_timeout")
                raise
            except UpstreamError:
                traced.fail("upstream_error")
                raise  # raised by foldgate itself (refused URL, stdio start, busy): already names the server
            except Exception as exc:
                traced.fail("upstream_error")
                leaf = leaf_of(exc)
                passed = passed_through(leaf)
                if passed is not None:
                    raise passed from exc
                said = rpc_error_message(leaf)
                if said is not None:
                    # Its code is kept (never shown to the agent): a task's call fails with it.
                    code = getattr(leaf, "code", None)
                    rpc_code = code if isinstance(code, int) and not isinstance(code, bool) else -32603
                    raise UpstreamError(
                        f"{server.name}: {name} failed upstream: {bounded(said)}", rpc_code=rpc_code
                    ) from exc
                raise UpstreamError(f"{server.name}: {name} failed: {describe(exc)}") from exc
            traced.set(outcome="tool_error" if result.get("isError") is True else "ok")
            return result

    async def _call_http(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        idempotent: bool,
        header_params: tuple[HeaderParam, ...] = (),
    ) -> dict[str, Any]:
        for attempt in (1, 2):
            try:
                async with self._pooled(server, relays_input=True) as pooled:
                    try:
                        return await _send_call(await pooled.ready(), name, arguments, header_params)
                    except Exception as exc:
                        raise_if_refused(exc, server.name)
                        # The upstream refused the session's id: the call did not run.
                        refused = pooled.expired
                        lost = not refused and lost_in_transit(exc)
                        if refused or lost:
                            self._pool.discard(pooled)  # the next attempt (or call) opens a fresh session
                        if attempt == 2 or not (refused or (lost and idempotent)):
                            raise
                        log.info("%s: %s; retrying %s on a new session", server.name, describe(exc), name)
            except AuthRefusedError as exc:
                # 401/403: the upstream ran nothing, so one more attempt with fresh credentials is safe.
                await after_refusal(server, self._auth, exc, attempt)
        raise AssertionError("unreachable")  # the second attempt returns or raises

    async def task_request(
        self, server: ServerConfig, method: str, task_id: str, params: dict[str, Any]
    ) -> None:
        """Forward ``tasks/update`` or ``tasks/cancel`` to an upstream's task (a call of the running
        caller's followed it, see ``foldgate.upstream.tasks``); its JSON-RPC error re-raised as the
        SDK's MCPError, a transport failure as UpstreamError."""

        async def run(session: Any) -> None:
            if not isinstance(session, PlainSession):
                raise UpstreamError(f"{server.name}: only an HTTP upstream runs tasks")
            await upstream_tasks.forward(session, method, task_id, params)

        with span("foldgate.upstream", "client", server=server.name, method=method):
            # Neither is sent twice: an update delivered twice could answer a later question.
            await self._on_session(server, run, method, retry=False)

    async def list_offerings(self, server: ServerConfig) -> Offerings:
        """Every prompt, resource and resource template of a server that declares the capability,
        following cursors; raises UpstreamError on failure (the caller keeps the last good ones)."""

        async def run(session: Any) -> Offerings:
            return await list_offerings_on(server, session)

        offerings: Offerings = await self._on_session(server, run, "list prompts and resources", retry=True)
        return offerings

    async def request(self, server: ServerConfig, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one read-only request (``resources/read``, ``prompts/get``, ``completion/complete``)
        and return the raw result; an upstream JSON-RPC error is re-raised as the SDK's MCPError (the
        client may act on its code), a transport failure as UpstreamError. A ``prompts/get`` relays
        as a tool call does (see :meth:`call_tool`); an ``input_required`` result the running
        request's relay does not take ends in UpstreamInputError naming what was asked."""

        async def run(session: Any) -> dict[str, Any]:
            result: dict[str, Any] = await session.send_request(request_of(method, params), _RAW)
            return result

        relay = (current_relay() or Relay()).for_call()
        what = str(params.get("name") or params.get("uri") or method)[:200]
        with span("foldgate.upstream", "client", server=server.name, method=method) as traced:
            try:
                with relaying(relay):
                    result: dict[str, Any] = await self._on_session(server, run, method, retry=True)
            except Exception as exc:
                if relay.refused:
                    raise refusal(server.name, what, relay.refused) from exc
                raise
            if relay.refused:
                raise refusal(server.name, what, relay.refused)
            if result.get("resultType") == "input_required":
                relay.check_input_required(server.name, what, result)
            traced.set(outcome="ok")
            return result

    async def _on_session(
        self,
        server: ServerConfig,
        run: Callable[[Any], Any],
        what: str,
        *,
        retry: bool,
        timeout_text: str | None = None,
        failure_text: str | None = None,
        rpc_errors: bool = True,
    ) -> Any:
        """Run ``run(session)`` under the server's concurrency slot and timeout and the request's
        deadline (see ``_bounded``). A session the upstream expired is replaced and the work sent once
        more; with ``retry`` (read-only work) also when the request was lost in transit. ``rpc_errors``
        re-raises an upstream JSON-RPC error as the SDK's MCPError (the client may act on its code);
        otherwise every failure is an UpstreamError."""

        async def work() -> Any:
            if server.transport == "stdio":
                return await run(await self._stdio_session(server))
            for attempt in (1, 2):
                try:
                    async with self._pooled(server, relays_input=what == "prompts/get") as pooled:
                        try:
                            return await run(await pooled.ready())
                        except Exception as exc:
                            raise_if_refused(exc, server.name)
                            lost = lost_in_transit(exc)
                            if pooled.expired or lost:
                                self._pool.discard(pooled)
                            if attempt == 2 or not (pooled.expired or (lost and retry)):
                                raise
                except AuthRefusedError as exc:
                    await after_refusal(server, self._auth, exc, attempt)
            raise AssertionError("unreachable")  # the second attempt returns or raises

        try:
            return await self._bounded(server, work, timeout_text or f"{what} did not answer within")
        except UpstreamError:
            raise
        except Exception as exc:
            leaf = leaf_of(exc)
            if rpc_errors and rpc_error_message(leaf) is not None:
                raise as_mcp_error(leaf) from exc
            failed = failure_text or f"{what} failed"
            raise UpstreamError(f"{server.name}: {failed}: {describe(exc)}") from exc

    async def _bounded(self, server: ServerConfig, work: Callable[[], Awaitable[T]], waited: str) -> T:
        """``work()`` under the server's concurrency slot and ``timeout_s``, and the running request's
        deadline (:mod:`foldgate.model.deadline`), which also bounds the wait for a slot: past it an
        answer could no longer be delivered. Either bound ends in UpstreamTimeoutError saying which,
        with the bound (``timeout_s``) and what to do (``hint``). A retry inside ``work`` shares both
        bounds; a request cut off mid-flight leaves its pooled session as any timeout does (see
        ``foldgate.upstream.pool``)."""
        left = time_left()  # None locally: only the server's own timeout applies
        if left is not None and left <= 0:
            # Out of time already: nothing is started (an asyncio timeout fires a loop turn late, and
            # the request could be on the wire by then).
            raise _out_of_time(server, waited, left)
        # asyncio's own timeouts (half what anyio's cancel scopes cost on every call); ``deadline``
        # tells which bound ended the wait.
        deadline = asyncio.timeout(left)
        try:
            async with deadline, self._pool.slot(server), asyncio.timeout(server.timeout_s):
                return await work()
        except TimeoutError as exc:
            if not deadline.expired():
                raise UpstreamTimeoutError(
                    f"{server.name}: {waited} {server.timeout_s:g}s",
                    timeout_s=round(server.timeout_s, 1),
                    hint=TIMEOUT_HINT,
                ) from exc
        assert left is not None  # only the request's deadline expires here
        raise _out_of_time(server, waited, left)

    async def aclose(self) -> None:
        """Close pooled HTTP sessions and stop long-lived stdio sessions."""
        await self._pool.aclose()
        for session in self._stdio.values():
            if session.loop is asyncio.get_running_loop():
                await session.close()
        self._stdio.clear()


def _out_of_time(server: ServerConfig, waited: str, left: float) -> UpstreamDeadlineError:
    """The request's own deadline ended the wait (``left``: what it had when the call began)."""
    return UpstreamDeadlineError(
        f"{server.name}: {waited} {max(left, 0.0):.1f}s, the time this request had left before the "
        "gateway's own deadline",
        timeout_s=round(max(left, 0.0), 1),
        hint=DEADLINE_HINT,
    )


async def _send_call(
    session: Any, name: str, arguments: dict[str, Any], header_params: tuple[HeaderParam, ...] = ()
) -> dict[str, Any]:
    # Mcp-Param-* headers are a 2026-07-28 thing (SEP-2243): an older upstream is sent none.
    modern = isinstance(session, PlainSession) and session.modern
    mirrored = param_headers(header_params, arguments) if modern and header_params else None
    # A task of the upstream's own where the call's link asks for one (foldgate.upstream.tasks).
    as_task = await upstream_tasks.call_tool(session, name, arguments, headers=mirrored)
    if as_task is not None:
        return as_task
    if isinstance(session, PlainSession):
        return await session.request("tools/call", {"name": name, "arguments": arguments}, headers=mirrored)
    # A stdio session is the SDK's, which is loaded already.
    import mcp_types as types

    request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
    result: dict[str, Any] = await session.send_request(request, _RAW)
    return result
