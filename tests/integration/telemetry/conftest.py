"""Servers for the trace tests, on loopback in this process: an MCP upstream that keeps what each
request carried (its ``traceparent`` header and ``_meta``), an OTLP/HTTP receiver that decodes what an
exporter sends, and uvicorn in a thread for any ASGI app (foldgate, the upstream)."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import Receive, Scope, Send

TOOLS = [
    {
        "name": "echo",
        "description": "Echo a text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "fail",
        "description": "Fail, quoting the text in the error.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
]


@dataclass
class Seen:
    """One request the upstream received."""

    method: str
    traceparent: str | None
    meta: dict[str, Any]
    headers: dict[str, str]


@dataclass
class TracedUpstream:
    """A handshake-era MCP upstream answering in JSON: ``echo`` returns its text, ``fail`` answers a
    JSON-RPC error quoting it. Every request is kept in ``seen``."""

    seen: list[Seen] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["method"] != "POST":
            await _send(send, 405, b"")
            return
        msg = json.loads(body)
        params = msg.get("params") or {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        self.seen.append(Seen(msg.get("method", ""), headers.get("traceparent"), meta, headers))
        if "id" not in msg:
            await _send(send, 202, b"")
            return
        await _send(send, 200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], **_answer(msg)}).encode())


def _answer(msg: dict[str, Any]) -> dict[str, Any]:
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "traced", "version": "1"},
            }
        }
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call":
        text = str((params.get("arguments") or {}).get("text"))
        if params.get("name") == "fail":
            return {"error": {"code": -32000, "message": f"cannot do {text}"}}
        return {"result": {"content": [{"type": "text", "text": text}], "isError": False}}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


async def _send(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.contextmanager
def serving(app: Any, *, lifespan: str = "on") -> Iterator[str]:
    """Run an ASGI app with uvicorn on a free loopback port in a thread; yields the base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:  # uvicorn offers no event to wait on; bounded and checked
        assert thread.is_alive(), "server died on startup"
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


class OtlpReceiver:
    """A tiny OTLP/HTTP traces receiver: decodes each POST /v1/traces (protobuf) into its spans and
    wakes :meth:`wait_for` as they arrive."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.requests: list[dict[str, str]] = []
        self.resources: list[dict[str, Any]] = []
        self._arrived = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                # The protobuf messages of the OTLP collector API ship with the exporter.
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceRequest,
                    ExportTraceServiceResponse,
                )

                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver._arrived:
                    receiver.requests.append(
                        {k.lower(): v for k, v in self.headers.items()} | {"path": self.path}
                    )
                    for rs in request.resource_spans:
                        resource = {a.key: a.value.string_value for a in rs.resource.attributes}
                        receiver.resources.append(resource)
                        for ss in rs.scope_spans:
                            receiver.spans.extend(ss.spans)
                    receiver._arrived.notify_all()
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, names: set[str], timeout: float = 10.0) -> list[Any]:
        """The spans received once every name in ``names`` is among them (AssertionError after
        ``timeout``)."""
        with self._arrived:
            ok = self._arrived.wait_for(lambda: names <= {s.name for s in self.spans}, timeout)
            assert ok, f"spans received: {sorted({s.name for s in self.spans})}, wanted {sorted(names)}"
            return list(self.spans)
