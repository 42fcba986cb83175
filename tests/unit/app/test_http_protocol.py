"""The local server's HTTP protocol (foldgate.app.http_protocol): a response's head goes out in the
same socket write as its first body bytes, and every kind of response still arrives whole."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import uvicorn

from foldgate.app.http_protocol import HeadWithBody, http_protocol
from foldgate.dev.procs import free_port


class _Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else None


HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


async def test_a_head_is_written_with_the_first_body_bytes() -> None:
    inner = _Recorder()
    transport = HeadWithBody(inner)
    transport.write(HEAD)
    assert inner.writes == []
    transport.write(b"ok")
    transport.write(b"more")
    assert inner.writes == [HEAD + b"ok", b"more"]
    assert transport.get_extra_info("peername") == ("127.0.0.1", 1)  # everything else is the transport's


async def test_a_head_without_body_bytes_goes_out_on_the_next_loop_turn_or_at_close() -> None:
    inner = _Recorder()
    transport = HeadWithBody(inner)
    transport.write(HEAD)
    await asyncio.sleep(0)
    assert inner.writes == [HEAD]
    transport.write(HEAD)
    transport.close()
    assert inner.writes == [HEAD, HEAD]
    assert inner.closed


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/empty":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    if path == "/stream":
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        for part in (b"one ", b"two ", b"three"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
            await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b""})
        return
    body = b"hello " + path.encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def _served() -> AsyncIterator[str]:
    port = free_port()
    config = uvicorn.Config(_app, host="127.0.0.1", port=port, log_level="warning", http=http_protocol())
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def test_every_kind_of_response_arrives_whole_over_a_real_socket() -> None:
    assert http_protocol() != "auto"  # httptools is a dependency: the protocol is ours
    async with _served() as base, httpx2.AsyncClient(base_url=base) as client:
        for _ in range(3):  # one kept-alive connection, several responses
            r = await client.get("/hello")
            assert (r.status_code, r.text) == (200, "hello /hello")
        assert (await client.head("/hello")).status_code == 200
        assert (await client.get("/empty")).status_code == 204
        r = await client.get("/stream")
        assert (r.status_code, r.text) == (200, "one two three")
        assert (await client.get("/after")).text == "hello /after"
