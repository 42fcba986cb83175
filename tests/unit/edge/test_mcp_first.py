"""``mcp_first``: a request for an MCP endpoint's path goes to the endpoint without the app's middleware
and router, with the very answer the app gives; everything else (other paths, a path under a
root_path, lifespan) goes through the app as before."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from starlette.types import ASGIApp, Receive, Scope, Send

from foldgate.config.source import StaticConfigSource
from foldgate.edge.app import create_app, mcp_first
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = {**H, "mcp-protocol-version": "2025-11-25"}


class _Seen:
    """A middleware that notes every path it saw."""

    def __init__(self, app: ASGIApp, seen: list[str]) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append(scope["path"])
        await self.app(scope, receive, send)


def _app(seen: list[str]) -> Any:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    gateway = Gateway(
        store, StaticConfigSource({"default": demo_config()}), RecordingUpstream(), catalog_ttl=0.0
    )
    app = create_app(gateway)
    app.add_middleware(_Seen, seen=seen)
    return app


async def _exchange(app: ASGIApp, requests: list[tuple[str, str, Any]]) -> list[tuple[int, Any]]:
    out = []
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
        for method, path, body in requests:
            r = await client.request(method, path, headers=LEGACY, content=json.dumps(body) if body else None)
            out.append((r.status_code, r.json() if r.content else None))
    return out


_REQUESTS: list[tuple[str, str, Any]] = [
    ("POST", "/mcp/all", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ("POST", "/mcp/all", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "crm__find_contact", "arguments": {"query": "ada"}}}),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    ("GET", "/mcp/call", None),
    ("POST", "/mcp/nope", {"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    ("GET", "/healthz", None),
]  # fmt: skip


async def test_mcp_paths_skip_the_stack_and_answer_as_the_app_does() -> None:
    seen_app: list[str] = []
    seen_front: list[str] = []
    through_app = await _exchange(_app(seen_app), _REQUESTS)
    through_front = await _exchange(mcp_first(_app(seen_front)), _REQUESTS)
    assert through_front == through_app
    assert [status for status, _ in through_app] == [200, 200, 200, 405, 404, 200]
    assert seen_app == [path for _, path, _ in _REQUESTS]
    assert seen_front == ["/mcp/nope", "/healthz"]  # the MCP paths went straight to their endpoints


async def test_a_path_under_a_root_path_and_lifespan_go_through_the_app() -> None:
    seen: list[str] = []
    front = mcp_first(_app(seen))
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    incoming = iter([{"type": "http.request", "body": body, "more_body": False}])

    async def receive() -> Any:
        return next(incoming)

    headers = [(k.encode(), v.encode()) for k, v in LEGACY.items()] + [(b"host", b"testserver")]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/api/mcp/all", "raw_path": b"/api/mcp/all", "root_path": "/api", "query_string": b"",
        "headers": headers, "client": ("127.0.0.1", 1), "server": ("testserver", 80),
    }  # fmt: skip
    await front(scope, receive, send)
    assert seen == ["/api/mcp/all"]
    assert sent[0]["status"] == 200

    lifespan = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    events: list[str] = []

    async def lifespan_receive() -> Any:
        return next(lifespan)

    async def lifespan_send(message: Any) -> None:
        events.append(message["type"])

    await front({"type": "lifespan", "asgi": {"version": "3.0"}}, lifespan_receive, lifespan_send)
    assert events == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
