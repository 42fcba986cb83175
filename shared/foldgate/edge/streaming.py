"""A ``tools/call`` answered on an event stream: what the upstream sends meanwhile, relayed.

A plain ``tools/call`` whose client accepts ``text/event-stream`` may be answered as a stream when
there is something to relay: the client sent a ``progressToken`` in ``_meta``, it hears the upstream's
logs (a handshake-era client always, as it has no per-request say; a 2026-07-28 one when its ``_meta``
names a log level), or (handshake era) its ``initialize`` declared form-mode elicitation or sampling.
The stream starts with the first thing relayed; a call that relays nothing gets its usual JSON answer.
The stream carries, in the order the upstream sent them, its progress (with the client's token) and
log notifications, its elicitation and sampling requests (handshake-era client: as requests on the
stream, with ids of the gateway's own, a 2026-07-28 upstream's ``input_required`` too), then the
call's response (:mod:`foldgate.upstream.relay` checks and rebuilds all).

Behind the buffered Lambda response (API Gateway) the same event stream is sent whole when the call
ends: the notifications still precede the result, in order. What a Lambda response holds (6 MB) is
the result's first, so there the notifications one call relays are capped at
:data:`LAMBDA_NOTIFICATION_BYTES` in all; later ones are dropped (the result never is).

The client answers such a request with a separate POST carrying a JSON-RPC response; the edge routes
it here (:func:`take_reply`) to the call waiting for it, when it comes from the same credential,
and answers 202. That call waits in this process: on a stateless deployment with several instances
(Lambda) another instance cannot route the reply, so the cloud path never streams requests for input
(see ``streamable``); a client that never answers is bounded by the upstream's ``timeout_s``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from starlette.requests import Request
from starlette.types import Message, Send

from foldgate.edge.elicitation import CLIENTS
from foldgate.edge.input_relay import call_relay
from foldgate.edge.jsonrpc import PlainRequest
from foldgate.errors import UpstreamInputError
from foldgate.model.bounded import bounded
from foldgate.model.jsonutil import wire_text
from foldgate.model.principal import Principal
from foldgate.model.rpc_body import RpcBody
from foldgate.serve.gateway import Gateway
from foldgate.upstream.relay import LOG_LEVEL_META, LOG_LEVELS, URL_ELICITATION, Relay, relaying

__all__ = ["LAMBDA_NOTIFICATION_BYTES", "PENDING", "answer_streamed", "streamable", "take_reply"]

# On Lambda, the notifications one call relays take at most this many bytes of its response.
LAMBDA_NOTIFICATION_BYTES: Final = 1024 * 1024

_ID_PREFIX: Final = "foldgate-"
_ID_PREFIX_BYTES: Final = _ID_PREFIX.encode()
# At most this many requests for input wait for a client's answer in one process.
_MAX_PENDING: Final = 1_000
_HEADERS: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]

# The plain path's answer (edge/plain_rpc.py), whose one JSON body becomes the stream's last event.
Answer = Callable[[PlainRequest, Gateway, Principal, str, Send], Awaitable[None]]


@dataclass(slots=True)
class _Waiting:
    stamp: str
    answer: asyncio.Future[dict[str, Any]]


PENDING: Final[dict[str, _Waiting]] = {}


def streamable(
    req: PlainRequest, request: Request, principal: Principal, *, asks: bool
) -> frozenset[str] | None:
    """The requests for input the stream may carry when this call is to be answered as a stream
    (an empty set: progress and logs only), else None (a JSON answer). ``asks``: whether this
    deployment can route a client's reply back to the call (one process: ``foldgate serve``)."""
    if req.method != "tools/call" or "text/event-stream" not in request.headers.get("accept", "").lower():
        return None
    meta = req.params.get("_meta")
    progress = isinstance(meta, dict) and "progressToken" in meta
    # A handshake-era client hears every log level (it cannot ask per request); a 2026-07-28 client
    # only when it names a level, and then the upstream is asked for logs (relay.call_meta).
    logs = not req.modern or (isinstance(meta, dict) and meta.get(LOG_LEVEL_META) in LOG_LEVELS)
    # Handshake era only: at 2026-07-28 a request for input is an input_required result instead.
    inputs = CLIENTS.inputs(principal.stamp) if asks and not req.modern else frozenset()
    # URL mode alone is not asked on a stream: such a client's connect-link elicitation
    # (edge/elicitation.py) is a JSON-RPC error its answer carries, and an upstream seldom asks for a URL.
    if not inputs - {URL_ELICITATION}:
        inputs = frozenset()
    if not progress and not logs and not inputs:
        return None
    return inputs


async def answer_streamed(
    req: PlainRequest,
    gateway: Gateway,
    principal: Principal,
    surface: str,
    send: Send,
    answer: Answer,
    inputs: frozenset[str],
    *,
    notification_bytes: int | None = None,
) -> None:
    """Answer ``req`` with the plain path's ``answer``, turned into an event stream by the first
    notification or request relayed (then the response is the stream's last event); a call that
    relays nothing is answered exactly as without a stream (one JSON body).
    ``inputs``: the requests for input the client takes on this stream (see :func:`streamable`);
    ``notification_bytes``: at most this many bytes of notifications are relayed (None: no cap)."""
    lock = asyncio.Lock()
    started = False
    budget = notification_bytes

    async def write(message: dict[str, Any]) -> None:
        nonlocal started, budget
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        if budget is not None and "id" not in message:
            size = len(wire_text(data))
            if size > budget:
                budget = 0  # past the cap: this and every later notification are dropped, in order
                return
            budget -= size
        async with lock:
            if not started:
                started = True
                await send({"type": "http.response.start", "status": 200, "headers": list(_HEADERS)})
            event = wire_text(f"event: message\ndata: {data}\n\n")  # lone surrogates escaped
            await send({"type": "http.response.body", "body": event, "more_body": True})

    async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if len(PENDING) >= _MAX_PENDING:
            raise UpstreamInputError(f"{method}: too many requests for input are waiting in this process")
        rid = _ID_PREFIX + secrets.token_urlsafe(18)
        waiting = _Waiting(principal.stamp, asyncio.get_running_loop().create_future())
        PENDING[rid] = waiting
        try:
            await write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            reply = await waiting.answer
        finally:
            PENDING.pop(rid, None)
        return reply

    relay: Relay = call_relay(
        gateway, principal, surface, req.version, req.params, notify=write, ask=ask, asks=inputs
    )
    held: list[Message] = []

    async def hold(message: Message) -> None:
        held.append(message)

    with relaying(relay):
        await answer(req, gateway, principal, surface, hold)
    async with lock:
        if not started:
            for message in held:  # nothing was relayed: the plain answer, as it is
                await send(message)
            return
        # The stream's status is sent already: a JSON-RPC error travels in its event, as any answer.
        body = b"".join(m.get("body", b"") for m in held if m["type"] == "http.response.body")
        event = b"event: message\ndata: " + body + b"\n\n"
        await send({"type": "http.response.body", "body": event, "more_body": False})


def take_reply(body: RpcBody, principal: Principal) -> bool:
    """Route a client's JSON-RPC response to the request for input waiting for it (same credential);
    False when ``body`` is no such reply (the SDK answers it, as any other response)."""
    if not body.mentions(_ID_PREFIX_BYTES):
        return False
    msg = body.message
    if not isinstance(msg, dict) or "method" in msg or not isinstance(msg.get("id"), str):
        return False
    waiting = PENDING.get(msg["id"])
    if waiting is None or waiting.stamp != principal.stamp or waiting.answer.done():
        return False
    if isinstance(msg.get("result"), dict):
        waiting.answer.set_result({"result": msg["result"]})
        return True
    # An error reply (the client could not or would not answer) is passed on as code and message only.
    error = msg.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    said = bounded(text, 500) if isinstance(text, str) else "the client answered with an error"
    waiting.answer.set_result(
        {
            "error": {
                "code": code if isinstance(code, int) and not isinstance(code, bool) else -32603,
                "message": said,
            }
        }
    )
    return True
