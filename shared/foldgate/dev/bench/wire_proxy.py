"""A loopback TCP proxy in front of one HTTP/1.1 MCP upstream that counts what crosses the wire.

``foldgate bench call`` puts it between the gateway and an upstream to count upstream HTTP round trips
per proxied call (and TCP connections, to show keep-alive); tests use its fault switches to make a real
upstream look like one that expired a session, lost a response or hangs. Bytes are forwarded verbatim;
only request framing (request line, headers, ``Content-Length`` body) is parsed, to label each request
``"<VERB> <json-rpc method>"``.

Faults, by JSON-RPC method:

* ``hold``: requests are not forwarded (the upstream seems to hang) until ``release()``;
* ``drop_response[method] = n``: the next n such requests are forwarded (they reach the upstream and
  run) but the connection is cut instead of relaying the answer (a response lost in transit);
* ``expire()``: every session id seen so far is answered ``404 Not Found`` from then on (the spec's
  answer for a session the server has forgotten).

The proxy runs its own event loop in a daemon thread so a held request never blocks the caller's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

__all__ = ["WireProxy", "wire_proxy"]

_NOT_FOUND = (
    b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 81\r\n\r\n"
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}'
)
_HEAD_LIMIT = 64 * 1024


def _label(verb: str, body: bytes) -> str:
    """``"POST tools/call"``, ``"GET"``, ``"POST batch"``: the verb and the JSON-RPC method if any."""
    if not body:
        return verb
    try:
        doc: Any = json.loads(body)
    except ValueError:
        return f"{verb} ?"
    if isinstance(doc, list):
        return f"{verb} batch"
    method = doc.get("method") if isinstance(doc, dict) else None
    return f"{verb} {method}" if isinstance(method, str) else f"{verb} response"


class WireProxy:
    """Counts requests and connections between a client and ``upstream_host:upstream_port``."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.requests: Counter[str] = Counter()
        self.connections = 0
        self.hold: set[str] = set()
        self.drop_response: Counter[str] = Counter()
        self.port = 0
        self._sessions: set[str] = set()
        self._expired: set[str] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._released: asyncio.Event | None = None

    def url(self, path: str) -> str:
        """The proxy's URL for an upstream path (``/mcp``)."""
        return f"http://127.0.0.1:{self.port}{path}"

    def count(self, label: str | None = None) -> int:
        """Requests seen with this label (every request when None)."""
        with self._lock:
            return sum(self.requests.values()) if label is None else self.requests[label]

    def reset(self) -> None:
        """Forget the counts (not the sessions or faults)."""
        with self._lock:
            self.requests.clear()
            self.connections = 0

    def sessions(self) -> set[str]:
        """Every MCP session id a client has sent so far."""
        with self._lock:
            return set(self._sessions)

    def expire(self) -> None:
        """Answer 404 to every session id seen so far, as an upstream that forgot them would."""
        with self._lock:
            self._expired |= self._sessions

    def release(self) -> None:
        """Forward every held request and stop holding."""
        self.hold.clear()
        if self._loop is not None and self._released is not None:
            self._loop.call_soon_threadsafe(self._released.set)

    async def _serve(self, started: threading.Event) -> None:
        self._released = asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        started.set()
        async with server:
            await server.serve_forever()

    async def _client(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        with self._lock:
            self.connections += 1
        try:
            ureader, uwriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        drop = asyncio.Event()
        pump = asyncio.create_task(self._responses(ureader, cwriter, drop))
        try:
            await self._requests(creader, cwriter, uwriter, drop)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            pass
        finally:
            pump.cancel()
            uwriter.close()
            cwriter.close()

    async def _requests(
        self,
        creader: asyncio.StreamReader,
        cwriter: asyncio.StreamWriter,
        uwriter: asyncio.StreamWriter,
        drop: asyncio.Event,
    ) -> None:
        while True:
            head = await creader.readuntil(b"\r\n\r\n")
            if len(head) > _HEAD_LIMIT:
                return
            lines = head.decode("latin-1").split("\r\n")
            verb = lines[0].split(" ", 1)[0]
            pairs = (ln.partition(":") for ln in lines[1:] if ln)
            headers = {k.strip().lower(): v.strip() for k, _, v in pairs}
            body = await creader.readexactly(int(headers.get("content-length", "0")))
            label = _label(verb, body)
            session = headers.get("mcp-session-id")
            with self._lock:
                self.requests[label] += 1
                if session:
                    self._sessions.add(session)
                expired = session in self._expired
            if expired:
                cwriter.write(_NOT_FOUND)
                await cwriter.drain()
                continue
            method = label.split(" ", 1)[-1]
            if method in self.hold and self._released is not None:
                await self._released.wait()
            with self._lock:
                if self.drop_response[method] > 0:
                    self.drop_response[method] -= 1
                    drop.set()
            uwriter.write(head + body)
            await uwriter.drain()

    async def _responses(
        self, ureader: asyncio.StreamReader, cwriter: asyncio.StreamWriter, drop: asyncio.Event
    ) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while chunk := await ureader.read(65536):
                if drop.is_set():
                    # The upstream answered a request whose answer must be lost: cut the client off.
                    cwriter.transport.abort()
                    return
                cwriter.write(chunk)
                await cwriter.drain()
        cwriter.close()


@contextlib.contextmanager
def wire_proxy(upstream_host: str, upstream_port: int) -> Iterator[WireProxy]:
    """Run a ``WireProxy`` in a daemon thread for the duration of the block."""
    proxy = WireProxy(upstream_host, upstream_port)
    started = threading.Event()
    loop = asyncio.new_event_loop()
    proxy._loop = loop

    def run() -> None:
        asyncio.set_event_loop(loop)
        task = loop.create_task(proxy._serve(started))
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(task)

    thread = threading.Thread(target=run, name="wire-proxy", daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("the wire proxy did not start")
    try:
        yield proxy
    finally:

        def stop() -> None:
            for task in asyncio.all_tasks(loop):
                task.cancel()

        loop.call_soon_threadsafe(stop)
        thread.join(5)
