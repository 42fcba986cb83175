"""One MCP endpoint (a surface at a path): refuse what needs no body or caller (a non-POST method with
405, a foreign Host/Origin with 403), read and cap the body, authenticate, check the content headers,
refuse batches, answer a plain ``tools/list`` on the fast path, and hand everything else to the SDK with
the caller's scope set. All of it inside :func:`foldgate.edge.guard.shielded`: nothing escapes.
Plain initialize, ping, notifications/initialized, server/discover and tools/call are answered
without the SDK (:mod:`foldgate.edge.plain_rpc`).

Each SDK request runs in its own stateless session manager, so there is no lifespan to manage (Mangum
can run with ``lifespan="off"``).
"""

from __future__ import annotations

import logging
import time

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope, Send

from foldgate.edge.access import Access, RateLimited
from foldgate.edge.elicitation import note_initialize
from foldgate.edge.fast_path import plain_tools_list, send_listing
from foldgate.edge.guard import BATCH_REFUSAL, is_batch, method_not_allowed, shielded
from foldgate.edge.hosts import HostPolicy
from foldgate.edge.indexed_request import IndexedRequest
from foldgate.edge.input_relay import call_relay
from foldgate.edge.jsonrpc import plain_request, unserved_request
from foldgate.edge.oauth import challenge_headers
from foldgate.edge.observe import counting, finish, open_observation, record_refusal
from foldgate.edge.param_headers import param_header_refusal
from foldgate.edge.plain_rpc import answer
from foldgate.edge.protocol import MODERN_PROTOCOL_VERSIONS, jsonrpc_error, modern_error_status
from foldgate.edge.streaming import LAMBDA_NOTIFICATION_BYTES, answer_streamed, streamable, take_reply
from foldgate.errors import AuthError, FoldgateError, InsufficientScopeError, StoreError
from foldgate.model.activity import Outcome
from foldgate.model.bounded import bounded
from foldgate.model.deadline import answering_by, request_deadline
from foldgate.model.principal import Principal
from foldgate.model.rpc_body import RpcBody
from foldgate.serve.gateway import Gateway
from foldgate.serve.recording import observing
from foldgate.telemetry.traceparent import incoming_traceparent
from foldgate.telemetry.tracing import Span, request_trace, span
from foldgate.upstream.relay import relaying

__all__ = ["STORE_RETRY_AFTER_S", "McpEndpoint", "invocation_deadline"]

log = logging.getLogger(__name__)

# Seconds a client should wait when the token store is down (DynamoDB throttling or an outage).
STORE_RETRY_AFTER_S = 5
# A refusal before the gateway, for the activity log: (outcome, detail, the caller when known, the
# tenant to record it under when not).
Refused = tuple[Outcome, str, Principal | None, str]


class _Sdk:
    """The SDK half of the edge, built on first use: the MCP server and its transport settings."""

    def __init__(self, gateway: Gateway, max_body: int) -> None:
        # The SDK (~0.4 s to import) loads with the first request that needs it, not at init.
        from mcp.server.transport_security import TransportSecuritySettings

        from foldgate.edge.mcp_server import build_mcp_server

        self.server = build_mcp_server(gateway)
        self.max_body = max_body
        # Host and Origin are checked by the endpoint before the SDK runs (see foldgate.edge.hosts).
        self.security = TransportSecuritySettings(enable_dns_rebinding_protection=False)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request with a fresh stateless session manager (cheap; no state to keep)."""
        # Lazy with the rest of the SDK (see __init__).
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        mgr = StreamableHTTPSessionManager(
            app=self.server, stateless=True, json_response=True, security_settings=self.security,
            max_request_body_size=self.max_body,
        )  # fmt: skip
        async with mgr.run():
            await mgr.handle_request(scope, receive, send)


class McpEndpoint:
    """ASGI endpoint for one MCP surface."""

    def __init__(self, app: Starlette, surface: str, access: Access, max_body: int, path: str) -> None:
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
                    sdk = self.app.state.sdk = _Sdk(self.app.state.gateway, self.max_body)
        return sdk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Upstream work ends in time for a tool error to reach the agent before the function's deadline.
        with answering_by(invocation_deadline(scope)):
            # Nothing escapes to the server or Mangum: an unexpected error is a logged JSON-RPC -32603.
            await shielded(self._serve)(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request = IndexedRequest(scope, receive)
        refusal = self._early_refusal(request)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        raw = await self._read_body(request)
        if isinstance(raw, Response):
            await raw(scope, receive, send)
            return
        # Parsed at most once, whoever reads it on the way (see foldgate.model.rpc_body).
        body = RpcBody(raw)
        # Every request that gets this far belongs to a trace: the client's (header or _meta), or new.
        incoming = incoming_traceparent(request.headers.get("traceparent"), body)
        with request_trace(incoming, surface=self.surface) as traced:
            await self._observed(request, body, started, traced, send)

    async def _observed(
        self, request: Request, body: RpcBody, started: float, traced: Span, send: Send
    ) -> None:
        """Authenticate and answer, as one activity event (a refusal is one too)."""
        scope, receive = request.scope, request.receive
        principal = await self._authenticate(request)
        if isinstance(principal, tuple):
            answer, refused = principal
            await answer(scope, receive, send)
            self._record_refusal(request, body, started, refused)
            return
        gateway: Gateway = self.app.state.gateway
        traced.set(tenant=principal.tenant)
        with span("foldgate.activity"):
            observation = open_observation(
                gateway.recorder, scope, request, principal, self.path, started, body
            )
        with observing(observation):
            try:
                await self._answer(request, body, principal, counting(observation, send), traced)
            except BaseException as exc:
                observation.failed(exc)
                raise
            finally:
                with span("foldgate.activity"):
                    finish(observation, body)

    def _record_refusal(self, request: Request, body: RpcBody, started: float, refused: Refused) -> None:
        """Refused before the gateway: an event of its own when it asked for work. The answer is out
        already, so nothing here may raise: without a gateway the app's recorder takes the event, and
        a failure is one line in the log (a store outage refuses every request; no traceback each)."""
        gateway: Gateway | None = getattr(self.app.state, "gateway", None)
        recorder = gateway.recorder if gateway is not None else self.app.state.recorder
        named = gateway.tool_target if gateway is not None else None
        try:
            record_refusal(recorder, request.scope, request, body, self.path, started, refused, named)
        except Exception as exc:  # a recorder must not raise; the refusal has been answered
            log.warning("a refused request was not recorded: %s", type(exc).__name__)

    async def _answer(
        self, request: Request, body: RpcBody, principal: Principal, send: Send, traced: Span
    ) -> None:
        """Answer an authenticated request."""
        scope, receive = request.scope, request.receive
        refusal = _content_refusal(request)
        if refusal is None and is_batch(body.raw):
            refusal = jsonrpc_error(400, -32600, BATCH_REFUSAL)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        try:
            if await self._fast_path(request, body, principal, send):
                traced.set(method="tools/list")
                return
            # Validates the tenant before the SDK runs (unknown tenants fail here, clearly).
            self.app.state.gateway.config(principal.tenant)
        except FoldgateError as exc:
            status = 404 if exc.code == "not_found" else 400
            await jsonrpc_error(status, -32600, exc.message)(scope, receive, send)
            return
        # A handshake-era initialize declares the client's capabilities once; the stateless edge keeps
        # whether they include URL elicitation for this credential (edge/elicitation.py).
        note_initialize(body, principal)
        if take_reply(body, principal):
            # A client's answer to a request for input relayed on a call's stream (edge/streaming.py).
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        gateway: Gateway = self.app.state.gateway
        # SEP-2243: a call whose Mcp-Param-* headers disagree with its arguments runs nowhere.
        with span("foldgate.param_headers"):
            mismatch = param_header_refusal(request, body, gateway, principal, self.surface)
        if mismatch is not None:
            traced.set(method="tools/call")
            await mismatch(scope, receive, send)
            return
        if gateway.tasks is not None and body:
            # Durable tasks (tasks/* answered here, handles and capabilities added); loaded only where a
            # task store is wired, so a cold start without one pays nothing for them.
            from foldgate.edge.tasks import task_scope

            async with task_scope(request, body, gateway, principal, self.surface, send) as send_on:
                if send_on is not None:
                    await self._dispatch(request, body, principal, send_on, traced)
            return
        await self._dispatch(request, body, principal, send, traced)

    async def _dispatch(
        self, request: Request, body: RpcBody, principal: Principal, send: Send, traced: Span
    ) -> None:
        """The plain path, else the SDK."""
        if await self._plain(request, body, principal, send, traced):
            return
        unserved = unserved_request(body)
        if unserved is not None:
            traced.set(method=unserved[1])
            error = {"code": -32601, "message": f"Method not found: {unserved[1]}"}
            modern = request.headers.get("mcp-protocol-version") in MODERN_PROTOCOL_VERSIONS
            status = modern_error_status(-32601) if modern else 200
            unserved_answer = JSONResponse({"jsonrpc": "2.0", "id": unserved[0], "error": error}, status)
            await unserved_answer(request.scope, request.receive, send)
            return
        sdk = self._sdk()
        # The scope variable lives with the SDK server glue, loaded with it.
        from foldgate.edge.mcp_server import RequestScope, current_scope

        token = current_scope.set(RequestScope(principal, self.surface))
        try:
            await sdk.handle(request.scope, _replay(body.raw), send)
        finally:
            current_scope.reset(token)

    async def _read_body(self, request: Request) -> bytes | Response:
        """The whole body, or a 413 as soon as it is known to exceed the cap."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            return self._too_big()
        chunks = []
        size = 0
        receive = request.receive
        # The ASGI messages read directly (what Request.stream() does, without its generator).
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return self._too_big()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _too_big(self) -> Response:
        return jsonrpc_error(413, -32600, f"request body exceeds {self.max_body} bytes")

    async def _authenticate(self, request: Request) -> Principal | tuple[Response, Refused]:
        """The caller, or the 401/403/429/503 to answer (401 and 403 carry the OAuth challenge when
        the tenant accepts OAuth access tokens) with how the activity log records the refusal: a
        caller refused before it is known is recorded under the default tenant."""
        tenant = self.access.default_tenant
        try:
            return await self.access.resolve(request, self.path)
        except (AuthError, InsufficientScopeError) as exc:
            challenge = challenge_headers(
                self.access.oauth, self.access.default_tenant, self.path, request, exc
            )
            status = 403 if isinstance(exc, InsufficientScopeError) else 401
            return jsonrpc_error(status, -32001, exc.message, challenge), ("denied", exc.code, None, tenant)
        except RateLimited as exc:
            retry = {"retry-after": str(max(1, round(exc.retry_after)))}
            refused: Refused = ("rate_limited", "rate_limit", exc.principal, tenant)
            return jsonrpc_error(429, -32002, str(exc), retry), refused
        except StoreError as exc:
            # The token table is unreachable: not the caller's fault, and worth retrying shortly.
            # One line per refusal, no traceback: an outage refuses every request alike.
            why = bounded(exc.message, 200)
            log.warning("token verification failed: the token store is unavailable (%s)", why)
            message = "the gateway cannot verify credentials right now; retry shortly"
            answer = jsonrpc_error(503, -32003, message, {"retry-after": str(STORE_RETRY_AFTER_S)})
            return answer, ("internal_error", "token_store_unavailable", None, tenant)

    def _early_refusal(self, request: Request) -> Response | None:
        """What needs neither body nor caller: the method (405), then Host and Origin (403)."""
        if request.method != "POST":
            return method_not_allowed(request.method)
        hosts: HostPolicy | None = self.app.state.host_policy
        if hosts is not None:
            why = hosts.refusal(request.headers.get("host"), request.headers.get("origin"))
            if why is not None:
                return jsonrpc_error(403, -32600, why)
        return None

    async def _fast_path(self, request: Request, body: RpcBody, principal: Principal, send: Send) -> bool:
        """Answer a plain tools/list from the pre-rendered listing; False when the SDK must answer."""
        plain = plain_tools_list(body, request) if body else None
        if plain is None:
            return False
        gateway: Gateway = self.app.state.gateway
        listing = gateway.listing_json(principal, self.surface)
        await send_listing(plain[0], plain[1], listing, send, gateway.list_hint())
        return True

    async def _plain(
        self, request: Request, body: RpcBody, principal: Principal, send: Send, traced: Span
    ) -> bool:
        """Answer initialize, ping, notifications/initialized, server/discover and tools/call without
        the SDK (edge/plain_rpc.py); False when the SDK must answer."""
        req = plain_request(body, request) if body else None
        if req is None:  # Host and Origin were checked first (see _early_refusal)
            return False
        traced.set(method=req.method)
        gateway: Gateway = self.app.state.gateway
        # Only one process can route a client's reply back to the call waiting for it (edge/streaming.py).
        local = request.scope.get("aws.context") is None
        inputs = streamable(req, request, principal, asks=local)
        if inputs is not None:
            # On Lambda the response (buffered behind API Gateway) is the result's first.
            cap = None if local else LAMBDA_NOTIFICATION_BYTES
            await answer_streamed(
                req, gateway, principal, self.surface, send, answer, inputs, notification_bytes=cap
            )
            return True
        if req.method != "tools/call":
            await answer(req, gateway, principal, self.surface, send)
            return True
        # A JSON answer relays no notifications; an upstream's input_required reaches a client that takes it.
        with relaying(call_relay(gateway, principal, self.surface, req.version, req.params)):
            await answer(req, gateway, principal, self.surface, send)
        return True


def invocation_deadline(scope: Scope) -> float | None:
    """By when this request's upstream work must end, on Lambda (Mangum puts the invocation's context
    in the scope as ``aws.context``); None without one (local serve: the servers' timeouts only)."""
    remaining = getattr(scope.get("aws.context"), "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    try:
        ms = float(remaining())
    except (TypeError, ValueError):
        return None
    return request_deadline(ms)


def _content_refusal(request: Request) -> Response | None:
    """Content-Type and Accept checked here, in JSON-RPC, rather than by the SDK's transport (which
    answers plain-text or empty 4xx)."""
    if not request.headers.get("content-type", "").lower().startswith("application/json"):
        return jsonrpc_error(415, -32700, "Content-Type must be application/json")
    accept = request.headers.get("accept", "").lower()
    if "application/json" not in accept and "*/*" not in accept:
        return jsonrpc_error(406, -32600, "Accept must include application/json")
    return None


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive
