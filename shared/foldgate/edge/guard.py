"""The MCP endpoints' outer shell: answers that need no caller, body or SDK, and the last line of
defence against an exception.

* ``GET`` (the SSE stream a client opens after ``initialize``) and ``DELETE`` (session end), and any
  other method but ``POST``, get a **405** with ``Allow: POST`` and a JSON-RPC body. A stateless
  gateway has no stream to offer (the transport spec allows the 405), and answering before the SDK
  matters on Lambda: Mangum cannot relay the SDK's never-ending GET stream (it raised
  ``AttributeError: 'HTTPCycle' object has no attribute 'body'``, a 500 and a Lambda error per session).
* A JSON array body (a JSON-RPC batch; no MCP version since 2025-06-18 allows one) gets a fixed error:
  the SDK's 400 for it quoted fragments of the request back.
* Anything unexpected becomes a JSON-RPC internal error (HTTP 500, code -32603) whose ``data`` carries
  a request id that is also in the log, so an operator can find the traceback from what the client saw.
  Nothing escapes to the ASGI server or Mangum.
"""

from __future__ import annotations

import logging
import os
from typing import Final

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from foldgate.edge.protocol import jsonrpc_error

__all__ = ["BATCH_REFUSAL", "is_batch", "method_not_allowed", "request_id", "shielded"]

log = logging.getLogger(__name__)

BATCH_REFUSAL = "JSON-RPC batches are not supported: send one request per HTTP POST"


def method_not_allowed(method: str) -> JSONResponse:
    """The 405 for a non-POST request on an MCP path."""
    message = f"{method} is not supported: this gateway is stateless, send each JSON-RPC request by POST"
    return jsonrpc_error(405, -32600, message, {"allow": "POST"})


def is_batch(body: bytes) -> bool:
    """Whether a body is a JSON array (a batch), judged by its first non-whitespace byte."""
    return body.lstrip(b" \t\r\n").startswith(b"[")


_REQUEST_ID: Final = "foldgate.request_id"


def request_id(scope: Scope) -> str:
    """The Lambda request id when running under Mangum (it is in the function's logs), else a new one;
    the same for the whole request (kept in its scope), so the activity log and an internal error's
    answer name it alike."""
    known = scope.get(_REQUEST_ID)
    if isinstance(known, str):
        return known
    context = scope.get("aws.context")
    rid = getattr(context, "aws_request_id", None)
    # 32 random hex digits, as uuid4().hex but a quarter of its cost (it is made for every event).
    rid = rid if isinstance(rid, str) and rid else os.urandom(16).hex()
    scope[_REQUEST_ID] = rid
    return rid


def shielded(app: ASGIApp) -> ASGIApp:
    """``app`` with every exception turned into a logged JSON-RPC internal error."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        started = finished = False

        async def tracking_send(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            await app(scope, receive, tracking_send)
        except Exception:
            rid = request_id(scope)
            log.exception("request %s: unhandled error on %s %s", rid, scope.get("method"), scope.get("path"))
            if started:
                # The status line is out: only end the body, so the server (or Mangum) has a response.
                if not finished:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            response = jsonrpc_error(500, -32603, "internal error", data={"request_id": rid})
            await response(scope, receive, send)

    return guarded
