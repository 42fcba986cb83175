"""Upstream requests in one socket write (foldgate.upstream.one_write): the head goes with the body,
a read never waits on a held head, and real requests through the guarded client arrive whole."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import uvicorn

from foldgate.dev.procs import free_port
from foldgate.upstream import net_guard
from foldgate.upstream.one_write import one_write_stream


class _Inner:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.reads = 0

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.writes.append(buffer)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.reads += 1
        return b"HTTP/1.1 200 OK\r\n\r\n"

    async def aclose(self) -> None:
        pass

    def get_extra_info(self, info: str) -> Any:
        return "extra" if info == "socket" else None


async def test_each_requests_head_is_written_with_its_body() -> None:
    inner = _Inner()
    stream = one_write_stream(inner)  # type: ignore[arg-type]
    await stream.write(b"POST / HTTP/1.1\r\n\r\n")
    assert inner.writes == []
    await stream.write(b'{"a":1}')
    await stream.write(b"")  # end of message
    await stream.read(100)
    await stream.write(b"GET / HTTP/1.1\r\n\r\n")  # the next request on the connection
    await stream.write(b"")
    assert inner.writes == [b'POST / HTTP/1.1\r\n\r\n{"a":1}', b"", b"GET / HTTP/1.1\r\n\r\n"]
    assert stream.get_extra_info("socket") == "extra"


async def test_a_read_sends_a_held_head_first() -> None:
    inner = _Inner()
    stream = one_write_stream(inner)  # type: ignore[arg-type]
    await stream.write(b"GET / HTTP/1.1\r\n\r\n")
    await stream.read(100)
    assert inner.writes == [b"GET / HTTP/1.1\r\n\r\n"]
    assert inner.reads == 1


async def _echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    out = json.dumps({"method": scope["method"], "body": body.decode()}).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": out})


async def test_requests_through_the_guarded_client_arrive_whole() -> None:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_echo, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        async with net_guard.guarded_http_client({}, allow_private=True) as client:
            for i in range(3):  # one kept-alive connection
                r = await client.post(f"http://127.0.0.1:{port}/", content=b"x" * (i * 5000))
                assert r.json() == {"method": "POST", "body": "x" * (i * 5000)}
                r = await client.get(f"http://127.0.0.1:{port}/")
                assert r.json() == {"method": "GET", "body": ""}
    finally:
        server.should_exit = True
        await task
