"""A local HTTP front for a Lambda handler, standing in for API Gateway (HTTP API, payload v2).

Each HTTP request becomes a real v2 event (the shape of events/*.json), the handler is invoked with a
LambdaContext, and its response dict is written back as API Gateway would: status, headers, cookies,
and a body decoded from base64 when flagged. Lets HTTP clients that nobody here wrote (the conformance
suite, SDK clients) drive functions/*/app.py exactly as they would drive the deployed stack.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import http.server
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.lambdas import LambdaContext

__all__ = ["Handler", "lambda_http", "v2_event", "write_response"]

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

API_ID = "a1b2c3d4e5"
# API Gateway's own answer when the integration raises or returns something it cannot map.
GATEWAY_ERROR = (500, {"content-type": "application/json"}, b'{"message":"Internal Server Error"}')
_request_ids = itertools.count(1)


def v2_event(method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
    """The API Gateway HTTP API v2 event for one request (``target`` is the path plus query string)."""
    path, _, query = target.partition("?")
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, raw in headers:
        key = name.lower()
        # A field value excludes the whitespace around it (RFC 9112 5.1: a parser strips it, as
        # uvicorn does in front of `foldgate serve`); http.server keeps trailing whitespace.
        value = raw.strip(" \t")
        if key == "cookie":
            # v2 moves cookies out of the headers into their own list.
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        # v2 joins repeated headers with commas under one lower-case name.
        merged[key] = f"{merged[key]},{value}" if key in merged else value
    merged.setdefault("x-forwarded-proto", "https")
    merged.setdefault("x-forwarded-for", "127.0.0.1")
    now = time.time()
    # Text bodies arrive as text; anything that is not UTF-8 arrives base64-encoded, as on API Gateway.
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": f"ANY {path}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": merged,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": API_ID,
            "domainName": merged.get("host", f"{API_ID}.execute-api.us-east-1.amazonaws.com"),
            "domainPrefix": API_ID,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": merged.get("user-agent", ""),
            },
            "requestId": f"local-{next(_request_ids)}",
            "routeKey": f"ANY {path}",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": encoded,
    }
    if cookies:
        event["cookies"] = cookies
    if body:
        event["body"] = text
    return event


def http_response(result: Any) -> tuple[int, dict[str, str], list[str], bytes]:
    """Map a handler's return value to (status, headers, set-cookies, body) as API Gateway does."""
    if not isinstance(result, dict) or not isinstance(result.get("statusCode"), int):
        return GATEWAY_ERROR[0], dict(GATEWAY_ERROR[1]), [], GATEWAY_ERROR[2]
    headers = {str(k).lower(): str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[str(name).lower()] = ",".join(str(v) for v in values)
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    return int(result["statusCode"]), headers, [str(c) for c in result.get("cookies") or []], body


def write_response(
    handler: http.server.BaseHTTPRequestHandler, status: int, headers: dict[str, str], cookies: list[str],
    body: bytes,
) -> None:  # fmt: skip
    """Send a buffered response (API Gateway never streams a Lambda proxy response)."""
    handler.send_response(status)
    for name, value in headers.items():
        if name not in {"content-length", "transfer-encoding", "connection"}:
            handler.send_header(name, value)
    for cookie in cookies:
        handler.send_header("set-cookie", cookie)
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class _Front(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    lambda_handler: Handler
    instance: concurrent.futures.ThreadPoolExecutor
    invocations: list[dict[str, Any]]

    def _invoke(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        event = v2_event(self.command, self.path, list(self.headers.items()), body)
        try:
            result = self.instance.submit(self.lambda_handler, event, LambdaContext()).result()
        except Exception as exc:  # an unhandled error is a 500 from API Gateway, as in the cloud
            result = None
            self.invocations.append({"method": self.command, "path": event["rawPath"], "error": repr(exc)})
        else:
            status = result.get("statusCode") if isinstance(result, dict) else None
            self.invocations.append({"method": self.command, "path": event["rawPath"], "status": status})
        write_response(self, *http_response(result))

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = _invoke

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output quiet
        return


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up mid-response (a GET stream they give up on) are normal, not errors.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def lambda_http(handler: Handler) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``handler`` on a free loopback port; yields the base URL and the log of invocations
    (method, path, and the status or the exception that escaped the handler)."""
    invocations: list[dict[str, Any]] = []
    # The Lambda instance: one thread with its own event loop (Mangum runs each invocation on the
    # thread's loop, as on the runtime's main thread), so invocations run one at a time and in order.
    instance = concurrent.futures.ThreadPoolExecutor(
        max_workers=1, thread_name_prefix="lambda", initializer=_new_event_loop
    )
    front = type(
        "Front", (_Front,),
        {"lambda_handler": staticmethod(handler), "instance": instance, "invocations": invocations},
    )  # fmt: skip
    server = _Server(("127.0.0.1", 0), front)
    thread = threading.Thread(target=server.serve_forever, name="lambda-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", invocations
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
        instance.shutdown(wait=True)


def _new_event_loop() -> None:
    asyncio.set_event_loop(asyncio.new_event_loop())
