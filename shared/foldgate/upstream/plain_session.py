"""A plain JSON-RPC client session to one Streamable HTTP upstream, without the MCP SDK.

Importing the SDK's client (``mcp`` with its model graph) costs several times what the rest of a cold
Lambda does, and the pool pays it on the first proxied call. A pooled session needs only a small part
of the client: POST one JSON-RPC request, read its answer (JSON or an SSE stream, see ``wire``),
negotiate the era once and keep the session's headers. That part is written out here over the same
pinned httpx2 client the pool gives it (``http1_transport.session_http_client``); a differential test
holds it to the SDK.

* **Era.** As the SDK's ``mode="auto"``: a ``server/discover`` probe at the newest modern version (one
  retry at a version a ``-32022`` answer names); positive modern evidence adopts it, anything else
  answered falls back to ``initialize`` + ``notifications/initialized``. A remembered era skips the
  probe (``legacy``) or the whole handshake (a modern version with its discover result).
* **Handshake era.** ``initialize`` offers the newest handshake version and accepts any handshake
  version back; anything else is refused with both lists named. Later requests carry the session's
  ``Mcp-Session-Id`` and ``MCP-Protocol-Version``; ``aclose`` sends the session's DELETE.
* **Modern era (2026-07-28).** Stateless: every request carries the version, client info and
  capabilities in ``_meta`` and the ``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` headers.
* **Expiry.** A 404, or a 400 naming the session, to a request that carried a session id means the
  upstream refused the session before running anything: ``expired`` is set and ``SessionExpiredError``
  raised; the caller may re-initialise and send the request again.
* **Trace context.** Inside a request every POST carries the request's W3C ``traceparent`` header, and
  every request's params carry it in ``_meta`` too (``foldgate.telemetry.tracing``); none outside one.
* **Results** are returned raw, as the SDK session returns them: a negative ``ttlMs`` floored to 0 and,
  on a handshake-era session, the fields only later revisions define dropped.

Server-to-client requests inside an answer stream are answered so the upstream does not wait on them:
``ping`` with an empty result; during a ``tools/call`` elicitation and sampling go to the call's relay
(``foldgate.upstream.relay``: to the client when it can take them, else refused at once), as do the
call's progress and log notifications; anything else (roots) gets "method not found". The gateway
declares elicitation and sampling (:data:`CLIENT_CAPABILITIES`) because it relays them.

Redirects are followed as the SDK follows them: within the URL's origin and keeping the method
(a trailing-slash 307/308); any other is reported with its location, never followed (the SSRF guard
pins addresses, but the origin is the tenant's choice).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from foldgate import __version__
from foldgate.errors import UpstreamError
from foldgate.model.deadline import time_left
from foldgate.telemetry.tracing import outgoing_traceparent
from foldgate.upstream.relay import Relay, current_relay
from foldgate.upstream.wire import DRAIN_SECONDS, MAX_MESSAGE_BYTES, WireError, parse_message, sse_messages

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "CLIENT_CAPABILITIES",
    "HANDSHAKE_VERSIONS",
    "MODERN_VERSIONS",
    "CredentialsRefusedError",
    "PlainSession",
    "RpcError",
    "SessionExpiredError",
]

# mcp 2.3's protocol versions (mcp_types.version); a unit test keeps them equal to the SDK's.
HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS: Final = ("2026-07-28",)
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
# As the SDK's probe: an upstream that never answers server/discover is taken for a handshake-era one.
DISCOVER_SECONDS = 10.0
CLIENT_INFO: Final = {"name": "foldgate", "version": __version__}
# What the gateway can relay to its own clients during a call (elicitation in both modes, sampling):
# an upstream that needs them offers its tools for them, and a client that cannot take them is told so.
CLIENT_CAPABILITIES: Final[dict[str, dict[str, Any]]] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {},
}
_CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
# Result fields a revision later than a handshake-era session's defines, per method (the SDK session's
# ``_later_revision_fields``; a unit test keeps them equal). They are outside that session's contract.
_LATER_FIELDS: Final = {
    "tools/call": frozenset({"inputRequests", "requestState", "resultType"}),
    "prompts/get": frozenset({"inputRequests", "requestState", "resultType"}),
    "completion/complete": frozenset({"resultType"}),
    "resources/read": frozenset({"cacheScope", "inputRequests", "requestState", "resultType", "ttlMs"}),
    **dict.fromkeys(
        ("tools/list", "prompts/list", "resources/list", "resources/templates/list"),
        frozenset({"cacheScope", "resultType", "ttlMs"}),
    ),
}
_RELAYED: Final = frozenset({"tools/call", "prompts/get"})
_NAME_PARAM: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    **dict.fromkeys(("tasks/get", "tasks/update", "tasks/cancel"), "taskId"),
}
_ACCEPT: Final = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
_ERROR_BODY_BYTES = 64 * 1024
_REDIRECTS = 5  # the last answer is used as it is (a redirect past the budget is reported)


# How long a notifications/cancelled for an abandoned request may take to send.
log = logging.getLogger(__name__)

_CANCEL_NOTE_S: Final = 2.0
# Cancel notices still in flight (a task the loop only weakly references could vanish mid-send).
_NOTICES: set[asyncio.Future[Any]] = set()


def _notice_done(notice: asyncio.Future[Any]) -> None:
    """Read a cancel notice's outcome (best effort: a failure is expected when the upstream is gone)."""
    _NOTICES.discard(notice)
    if not notice.cancelled() and notice.exception() is not None:
        log.debug("a cancel notice was not delivered: %s", type(notice.exception()).__name__)


@dataclass(slots=True)
class _Exchange:
    """One request's response, and the answer stream it was read from up to its answer (``rest``)."""

    response: httpx2.Response
    rest: AsyncGenerator[dict[str, Any], None] | None = None


async def _finish(exchange: _Exchange) -> None:
    """Close an answered response. An answer stream read up to its answer is first read on to its
    end, briefly (its end follows the answer): every iterator under it (the SSE parser, httpx2's
    byte and raw iterators, the transport's body) then ends by itself, where one dropped mid-stream
    is finalized by the event loop, a cross-thread wake-up and a task per iterator on every call."""
    rest = exchange.rest
    if rest is not None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(DRAIN_SECONDS):
                async for _ in rest:
                    pass  # what follows the answer is not ours to act on (as before, unread)
        with contextlib.suppress(Exception):
            await rest.aclose()
    await exchange.response.aclose()


def _close_after(exchange: _Exchange) -> None:
    """Close an answered response once its answer is on its way (:func:`_finish`: reading the rest of
    the body, the event stream's end, returns the connection to the pool), a wait for the upstream's
    last bytes that the answer need not make. Only where the request has no deadline
    (:func:`foldgate.model.deadline.time_left`: the local server's long-lived loop); an MCP Lambda's
    request has its invocation's, and there the loop freezes once the answer is out, so the
    connection is returned to the pool before it."""
    closing = asyncio.ensure_future(_finish(exchange))
    _NOTICES.add(closing)
    closing.add_done_callback(_closed)


def _closed(closing: asyncio.Future[Any]) -> None:
    _NOTICES.discard(closing)
    if not closing.cancelled() and closing.exception() is not None:
        log.debug("an answered response did not close cleanly: %s", type(closing.exception()).__name__)


class RpcError(Exception):
    """The upstream answered a request with a JSON-RPC error (it may have run: never "lost")."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class CredentialsRefusedError(UpstreamError):
    """The upstream answered 401/403 to a request carrying credentials: it ran nothing, and the OAuth
    provider may fix the credentials (see ``foldgate.upstream.credentials``). ``sent`` is the
    Authorization value that request carried (never put in a message)."""

    def __init__(self, what: str, status: int, challenge: str | None, sent: str) -> None:
        super().__init__(f"{what}: the upstream refused the credentials (HTTP {status})")
        self.status = status
        self.challenge = challenge
        self.sent = sent


class SessionExpiredError(UpstreamError):
    """The upstream refused the session's id: the request did not run and may be sent again."""


def _header_value(value: str) -> str:
    """A name as an ``Mcp-Name`` value: verbatim when printable ASCII, else base64-wrapped (as the SDK)."""
    if (
        value.isascii()
        and value.isprintable()
        and value == value.strip()
        and not (value.startswith("=?base64?") and value.endswith("?="))
    ):
        return value
    # Only names outside printable ASCII get here; base64 is stdlib and cheap.
    import base64

    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


class PlainSession:
    """One negotiated MCP session (or stateless era) over one httpx2 client, which it owns."""

    def __init__(
        self,
        name: str,
        url: str,
        http: httpx2.AsyncClient,
        *,
        era: tuple[str, Any] | None,
        pinned: str | None = None,
    ) -> None:
        self.name = name
        self.url = url
        self.http = http
        self.expired = False
        self.version: str | None = None
        self.session_id: str | None = None
        self.server_capabilities: dict[str, Any] | None = None
        self.discover: dict[str, Any] | None = None  # the adopted discover result (modern era)
        self._era = era
        # "legacy" (any handshake-era version) or one version this session must speak, else None.
        self.pinned = pinned
        self._ids = itertools.count(1)

    @property
    def modern(self) -> bool:
        """True once the session speaks a stateless (2026-07-28) version."""
        return self.version in MODERN_VERSIONS

    async def open(self) -> None:
        """Settle the era: adopt a remembered one, or probe and fall back to the handshake."""
        mode, prior = self._era if self._era is not None else ("auto", None)
        if self.pinned is not None:
            await self._open_pinned(self.pinned, mode, prior)
        elif mode == "legacy":
            await self._initialize()
        elif mode in MODERN_VERSIONS and isinstance(prior, dict) and self._adopt(prior):
            return
        else:
            await self._negotiate()

    async def _open_pinned(self, pinned: str, mode: str, prior: Any) -> None:
        """Speak exactly ``pinned`` (or any handshake-era version for ``"legacy"``), or fail naming it."""
        if pinned == "legacy" or pinned in HANDSHAKE_VERSIONS:
            await self._initialize(None if pinned == "legacy" else pinned)
            return
        if mode == pinned and isinstance(prior, dict) and self._adopt(prior, pinned):
            return
        meta = {"_meta": self._meta(pinned)}
        headers = {"mcp-protocol-version": pinned, "mcp-method": "server/discover"}
        try:
            async with asyncio.timeout(DISCOVER_SECONDS):
                raw = await self._call("server/discover", meta, headers)
        except (RpcError, WireError, TimeoutError) as exc:
            raise UpstreamError(
                f"{self.name}: protocol is pinned to {pinned}, and the upstream did not answer "
                f"server/discover at it ({str(exc)[:200] or type(exc).__name__})"
            ) from None
        if not self._adopt(raw, pinned):
            raise UpstreamError(
                f"{self.name}: protocol is pinned to {pinned}, which the upstream does not list"
            )

    async def _negotiate(self) -> None:
        version = MODERN_VERSIONS[-1]
        for attempt in (1, 2):
            meta = {"_meta": self._meta(version)}
            headers = {"mcp-protocol-version": version, "mcp-method": "server/discover"}
            try:
                async with asyncio.timeout(DISCOVER_SECONDS):
                    raw = await self._call("server/discover", meta, headers)
            except (WireError, TimeoutError):
                await self._initialize()  # an unreadable or missing answer to the probe is no modern evidence
                return
            except RpcError as exc:
                supported = _supported(exc)
                if exc.code == UNSUPPORTED_PROTOCOL_VERSION and supported is not None:
                    mutual = [v for v in MODERN_VERSIONS if v in supported]
                    if mutual and attempt == 1:
                        version = mutual[-1]
                        continue
                    if not any(v in HANDSHAKE_VERSIONS for v in supported):
                        named = ", ".join(str(v)[:40] for v in supported[:10])
                        raise UpstreamError(
                            f"{self.name}: no protocol version in common: the upstream speaks "
                            f"{named}; foldgate speaks "
                            f"{', '.join(HANDSHAKE_VERSIONS + MODERN_VERSIONS)}"
                        ) from None
                await self._initialize()  # any other refusal of the probe: a handshake-era upstream
                return
            if not self._adopt(raw):
                await self._initialize()  # a discover answer with no modern version we speak is legacy
            return

    def _adopt(self, discover: dict[str, Any], only: str | None = None) -> bool:
        supported = discover.get("supportedVersions")
        ours = MODERN_VERSIONS if only is None else (only,)
        mutual = [v for v in ours if isinstance(supported, list) and v in supported]
        caps = discover.get("capabilities")
        if not mutual or not isinstance(caps, dict):
            return False
        self.version, self.discover, self.server_capabilities = mutual[-1], discover, caps
        return True

    async def _initialize(self, exactly: str | None = None) -> None:
        """The handshake, offering the newest handshake version (or ``exactly``, which the answer must
        then name)."""
        params = {
            "protocolVersion": exactly or HANDSHAKE_VERSIONS[-1],
            "capabilities": _capabilities(),
            "clientInfo": CLIENT_INFO,
        }
        result = await self._call("initialize", params, {})
        version, caps = result.get("protocolVersion"), result.get("capabilities")
        if version not in HANDSHAKE_VERSIONS:
            raise UpstreamError(
                f"{self.name}: the upstream answered initialize with protocol version {str(version)[:40]!r}; "
                f"foldgate speaks {', '.join(HANDSHAKE_VERSIONS)} (and {', '.join(MODERN_VERSIONS)})"
            )
        if exactly is not None and version != exactly:
            raise UpstreamError(
                f"{self.name}: protocol is pinned to {exactly}, and the upstream answered initialize "
                f"with {str(version)[:40]!r}"
            )
        self.version = str(version)
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self._headers(), None)

    def _meta(self, version: str) -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": dict(CLIENT_INFO),
            _CAPABILITIES_META: _capabilities(),
        }

    def _headers(self) -> dict[str, str]:
        headers = dict(_ACCEPT)
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.version is not None:
            headers["mcp-protocol-version"] = self.version
        return headers

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        headers: Mapping[str, str] | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Send one request on the settled session and return its raw result.

        Raises RpcError (the upstream's JSON-RPC error), SessionExpiredError, WireError (an unreadable
        answer) or UpstreamError / httpx2 errors (no answer: the request may or may not have run).
        ``headers`` are added to this request only (per-call credentials); ``extensions`` are declared
        in this 2026-07-28 request's capabilities (the tasks extension, ``foldgate.upstream.tasks``).
        """
        body = dict(params or {})
        extra = self._headers()
        traceparent = outgoing_traceparent()
        if traceparent is not None:
            # The request's trace, in _meta (MCP's own carrier) as well as the HTTP header (see _call).
            own = body.get("_meta")
            body["_meta"] = {**(own if isinstance(own, dict) else {}), "traceparent": traceparent}
            extra["traceparent"] = traceparent
        if self.modern:
            assert self.version is not None
            own = body.get("_meta")
            body["_meta"] = {**(own if isinstance(own, dict) else {}), **self._meta(self.version)}
            extra["mcp-method"] = method
            name = body.get(_NAME_PARAM.get(method, ""))
            if isinstance(name, str):
                extra["mcp-name"] = _header_value(name)
        extra.update(headers or {})
        # Only a tool call or a prompt relays what its upstream sends meanwhile (foldgate.upstream.relay).
        relay = current_relay() if method in _RELAYED else None
        if relay is not None:
            progress = relay.call_meta(modern=self.modern)
            if progress:
                own = body.get("_meta")
                body["_meta"] = {**(own if isinstance(own, dict) else {}), **progress}
            if relay.resume is not None and self.modern:
                body.update(relay.resume)
            offered = relay.offered_capabilities() if self.modern else None
            if offered is not None:
                # The client's own capabilities (SEP-2322: the upstream asks only for what can reach it).
                body["_meta"] = {**body["_meta"], _CAPABILITIES_META: offered}
        if extensions and self.modern:
            caps = dict(body["_meta"][_CAPABILITIES_META])
            caps["extensions"] = {**caps.get("extensions", {}), **extensions}
            body["_meta"] = {**body["_meta"], _CAPABILITIES_META: caps}
        raw = await self._call(method, body, extra, relay)
        ttl = raw.get("ttlMs")
        if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl < 0:
            raw["ttlMs"] = 0  # as the SDK: a negative hint is floored, not an error
        later = _LATER_FIELDS.get(method) if not self.modern else None
        if later is not None and not later.isdisjoint(raw):
            raw = {k: v for k, v in raw.items() if k not in later}
        return raw

    async def send_request(self, request: Any, result_type: Any) -> dict[str, Any]:
        """The SDK session's ``send_request`` for callers that build SDK request models (the listing
        paths): the result is validated for the negotiated version as the SDK session does."""
        # Only the listing paths come here, and they have loaded the SDK's types already.
        from mcp_types import methods

        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        raw = await self.request(data["method"], data.get("params"))
        with contextlib.suppress(KeyError):  # a method without a per-version result schema
            methods.validate_server_result(data["method"], self.version or HANDSHAKE_VERSIONS[-1], raw)
        return raw

    async def _call(
        self, method: str, params: Mapping[str, Any], headers: dict[str, str], relay: Relay | None = None
    ) -> dict[str, Any]:
        rid = next(self._ids)
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        # initialize is the negotiation itself: no session and no version header yet.
        headers = dict(_ACCEPT) if method == "initialize" else {**self._headers(), **headers}
        try:
            answer = await self._post(message, headers, rid, relay)
        except asyncio.CancelledError:
            # Abandoned (a cancelled task, a call handed to a worker): the upstream may stop the work.
            await self._cancelled(rid)
            raise
        assert answer is not None  # a request always gets an answer or an exception
        return answer

    async def _cancelled(self, rid: int) -> None:
        """Tell a handshake-era upstream an abandoned request's answer is no longer wanted (best effort,
        bounded, shielded from the cancellation that abandons it). At 2026-07-28 the closed response
        stream is the cancellation, and no notice is expected (basic/patterns/cancellation); and an
        abandoned era probe has no session to cancel in."""
        if self.modern or self.version is None:
            return
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
        # The notice outlives this wait when it times out or is cancelled: kept referenced until done,
        # and its outcome read then, so a failure is one debug line, never an unread task exception.
        notice = asyncio.ensure_future(self._post(note, self._headers(), None))
        _NOTICES.add(notice)
        notice.add_done_callback(_notice_done)
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_CANCEL_NOTE_S):
                await asyncio.shield(notice)

    @contextlib.asynccontextmanager
    async def _send(
        self, method: str, headers: dict[str, str], body: bytes, *, close_after: bool = False
    ) -> AsyncIterator[_Exchange]:
        """One HTTP request and its streamed response, closed when the block ends. ``close_after``: a
        response the block read its answer from is closed after the answer is handed on (see
        :func:`_close_after`), not before it."""
        request = self.http.build_request(method, self.url, headers=headers, content=body)
        for _ in range(_REDIRECTS):
            response = await self.http.send(request, stream=True, follow_redirects=False)
            follow = response.next_request
            # As the SDK: only a redirect that keeps the method (307/308) on the same origin, and brings
            # no credentials of its own, is followed; anything else is reported (``_refused``).
            if (
                follow is None
                or follow.method != request.method
                or (follow.url.scheme, follow.url.host, follow.url.port)
                != (request.url.scheme, request.url.host, request.url.port)
                or (follow.url.userinfo and follow.url.userinfo != request.url.userinfo)
            ):
                break
            await response.aclose()
            request = follow
        exchange = _Exchange(response)
        try:
            yield exchange
        except BaseException:
            await response.aclose()
            raise
        if close_after and time_left() is None:
            _close_after(exchange)
        else:
            await _finish(exchange)

    async def _post(
        self, message: dict[str, Any], headers: dict[str, str], rid: int | None, relay: Relay | None = None
    ) -> dict[str, Any] | None:
        """POST one message; its answer for a request (``rid``), None for a notification or reply."""
        body = json.dumps(message, separators=(",", ":")).encode()
        what = f"{self.name}: {message.get('method') or 'reply'}"
        if "traceparent" not in headers:
            # The handshake (and any reply) a request's work sends is part of that request's trace too.
            traceparent = outgoing_traceparent()
            if traceparent is not None:
                headers = {**headers, "traceparent": traceparent}
        async with self._send("POST", headers, body, close_after=True) as exchange:
            response = exchange.response
            status = response.status_code
            if status >= 300:
                await self._refused(response, what, "mcp-session-id" in headers)
            if message.get("method") == "initialize":
                self._take_session_id(response)
            if rid is None:
                return None
            if status == 202:
                raise WireError(f"{what}: the upstream answered a request with 202 Accepted")
            kind = response.headers.get("content-type", "").lower()
            if kind.startswith("application/json"):
                return _answer(parse_message(await _read(response, MAX_MESSAGE_BYTES, what), what), rid, what)
            if not kind.startswith("text/event-stream"):
                raise WireError(f"{what}: unexpected content type {kind[:60]!r}")
            messages = sse_messages(response.aiter_bytes())
            try:
                async for msg in messages:
                    if msg.get("id") == rid and not isinstance(msg.get("id"), bool) and "method" not in msg:
                        exchange.rest = messages  # read on to the stream's end once answered (_finish)
                        return _answer(msg, rid, what)
                    if "method" in msg and "id" in msg:
                        await self._reply(msg, relay)
                    elif "method" in msg and relay is not None:
                        await relay.notification(self.name, msg)
                    # Anything else (other ids, notifications nobody relays) is not ours to act on.
            except WireError as exc:
                if exc.message.startswith(what):
                    raise
                raise WireError(f"{what}: {exc.message}") from None
        raise UpstreamError(f"{what}: the upstream's event stream ended without a response")

    def _take_session_id(self, response: httpx2.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid is None:
            return
        # Visible ASCII only (the spec's rule), so a hostile id cannot smuggle anything into our headers.
        if not sid or len(sid) > 1024 or not all(0x21 <= ord(c) <= 0x7E for c in sid):
            raise WireError(f"{self.name}: the upstream sent an invalid Mcp-Session-Id")
        self.session_id = sid

    async def _refused(self, response: httpx2.Response, what: str, had_session: bool) -> None:
        status = response.status_code
        if 300 <= status < 400:
            where = response.headers.get("location", "")[:200]
            raise WireError(f"{what}: HTTP {status} redirect to {where!r} not followed; configure that URL")
        sent = response.request.headers.get("authorization")
        if status in (401, 403) and sent is not None:
            # Per request: the session stays good, and its next request carries whatever credentials
            # are current then (the pool's sessions outlive any one access token).
            raise CredentialsRefusedError(what, status, response.headers.get("www-authenticate"), sent)
        body = await _read(response, _ERROR_BODY_BYTES, what, cut=True)
        if had_session and (status == 404 or (status == 400 and b"session" in body[:2000].lower())):
            self.expired = True
            raise SessionExpiredError(f"{what}: the upstream ended the session (HTTP {status})")
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            with contextlib.suppress(WireError):
                error = parse_message(body, what).get("error")
                if isinstance(error, dict):
                    _answer({"error": error}, None, what)  # raises the upstream's own JSON-RPC error
        if status == 404:
            raise RpcError(-32601, f"Not Found (HTTP 404 from {self.name})")
        raise RpcError(-32603, f"Server returned an error response (HTTP {status})")

    async def _reply(self, msg: dict[str, Any], relay: Relay | None) -> None:
        """Answer a server-to-client request found in an answer stream (see the module doc)."""
        if relay is not None:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"], **await relay.request(self.name, msg)}
        elif msg.get("method") == "ping":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
        else:
            error = {"code": -32601, "message": "Method not found: not relayed outside a tool call"}
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": error}
        with contextlib.suppress(Exception):  # best effort: the answer we wait for is what matters
            await self._post(reply, self._headers(), None)

    async def aclose(self, *, timeout_s: float = 5.0) -> None:
        """End the session (DELETE when the upstream gave one; a dead upstream is not waited on long)
        and close the HTTP client."""
        try:
            if self.session_id is not None and not self.expired:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(timeout_s), self._send("DELETE", self._headers(), b""):
                        pass
        finally:
            await self.http.aclose()

    def negotiated(self) -> tuple[str, Any] | None:
        """``("legacy", None)`` or ``(modern version, discover result)``; None before ``open``."""
        if self.version is None:
            return None
        return (self.version, self.discover) if self.modern else ("legacy", None)


def _capabilities() -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(CLIENT_CAPABILITIES))  # a deep copy, per request
    return copied


def _supported(exc: RpcError) -> list[Any] | None:
    data = exc.data
    supported = data.get("supported") if isinstance(data, dict) else None
    return supported if isinstance(supported, list) else None


def _answer(msg: dict[str, Any], rid: int | None, what: str) -> dict[str, Any]:
    """The result of a response message, or its error raised as RpcError."""
    if "error" in msg:
        error = msg["error"]
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), int)
            or isinstance(error.get("code"), bool)
        ):
            raise WireError(f"{what}: malformed JSON-RPC error")
        text = error.get("message")
        raise RpcError(error["code"], text if isinstance(text, str) else "", error.get("data"))
    if rid is not None and (msg.get("id") != rid or isinstance(msg.get("id"), bool)):
        raise WireError(f"{what}: the response carries another request's id")
    result = msg.get("result")
    if not isinstance(result, dict):
        raise WireError(f"{what}: the response has no result object")
    return result


async def _read(response: httpx2.Response, limit: int, what: str, *, cut: bool = False) -> bytes:
    """The body, at most ``limit`` bytes (WireError past it, or the first ``limit`` bytes with ``cut``)."""
    chunks = bytearray()
    async for chunk in response.aiter_bytes():
        chunks += chunk
        if len(chunks) > limit:
            if cut:
                return bytes(chunks[:limit])
            raise WireError(f"{what}: answer larger than {limit} bytes")
    return bytes(chunks)
