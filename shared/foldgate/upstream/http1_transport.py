"""The pooled sessions' HTTP/1.1 transport: llhttp (``httptools``) on asyncio, dialing pinned addresses.

A proxied tool call is one POST to a warm connection. Under httpx2's default transport that POST went
through httpcore's connection pool, anyio streams and h11's pure-Python state machine: about a third
of the gateway's CPU per proxied call (py-spy under 16 concurrent callers; ``foldgate bench call``).
This transport keeps httpx2's client above it (headers, auth flows, redirects' ``next_request``,
content decoding, timeouts' configuration) and replaces what is below it with a small HTTP/1.1 client:

* **Connections** are asyncio protocols parsed by ``httptools`` (Node's llhttp, strict mode: the same
  C parser uvicorn serves with). One request at a time per connection; an idle connection is reused
  for the same origin until ``KEEPALIVE_SECONDS`` idle (under httpx's default expiry and Node's 5 s
  server keep-alive) and while its socket has nothing to read, at most ``MAX_IDLE`` kept.
  Concurrency is bounded above this transport (``SessionPool.slot``), so there is no connection cap
  of its own.
* **Pinning.** A new connection dials only the addresses ``net_guard`` accepted for the URL's host and
  port (``checked_addresses``, the same check the httpcore backend runs): a name that rebinds between
  the check and the dial is never followed. TLS verifies the certificate against the URL's host name.
* **One write per request.** The head and the body go out together (what ``one_write`` does for
  httpcore), with ``Content-Length`` framing (a chunked body is sent as one chunk).
* **Hostile answers.** Headers past ``MAX_HEADER_BYTES``, an upgrade, bytes after a response or before
  a request, a malformed message: the connection is closed and ``httpx2.RemoteProtocolError`` raised.
  Interim 1xx answers are skipped. Header names and values we send are checked (no CR, LF or NUL).
* **Flow control.** Reading pauses once ``_HIGH_WATER`` bytes wait for the reader and resumes below it.
* **Keep-alive after an early close.** A POST's answer closed before its body ended (an SSE answer read
  up to its response event) waits briefly for the end (``wire.DRAIN_SECONDS``/``DRAIN_BYTES``, as
  ``wire.keep_alive`` does for httpcore) so the connection returns to the pool; anything else closes it.

Errors are httpx2's own (``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``, ``ReadError``,
``WriteError``, ``RemoteProtocolError``), so callers see what they saw from httpcore. A connect error
never names the address dialed (see ``net_guard``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import functools
import re
import select
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from foldgate.errors import UpstreamError
from foldgate.upstream.net_guard import (
    checked_addresses,
    client_timeout,
    guarded_http_client,
    proxied_by_environment,
)
from foldgate.upstream.wire import DRAIN_BYTES, DRAIN_SECONDS, keep_alive

if TYPE_CHECKING:
    import httpx2

__all__ = ["KEEPALIVE_SECONDS", "MAX_HEADER_BYTES", "MAX_IDLE", "http1_transport", "session_http_client"]

# Under httpx's 5 s default and Node's 5 s server keep-alive: a connection the upstream is about to close
# is not sent a request.
KEEPALIVE_SECONDS: Final = 4.0
MAX_IDLE: Final = 20
MAX_HEADER_BYTES: Final = 64 * 1024
_HIGH_WATER: Final = 256 * 1024
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(rb"[\x00\r\n]")
_BAD_TARGET = re.compile(rb"[\x00-\x20\x7f]")


def _checked_head(request: httpx2.Request, body_len: int, chunked: bool) -> bytes:
    """The request's head, refusing a header or target that could split the message."""
    method = request.method.encode("ascii")
    target = request.url.raw_path
    if not _TOKEN.fullmatch(method) or not target or _BAD_TARGET.search(target):
        raise _local_error("the request's method or target is not valid HTTP/1.1")
    lines = [method + b" " + target + b" HTTP/1.1"]
    for name, value in request.headers.raw:
        low = name.lower()
        if low in (b"content-length", b"transfer-encoding"):
            continue  # framed below from the body actually sent
        if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise _local_error("a request header name or value is not valid HTTP/1.1")
        lines.append(name + b": " + value)
    if chunked:
        lines.append(b"Transfer-Encoding: chunked")
    elif body_len or request.method not in ("GET", "DELETE", "OPTIONS"):
        lines.append(b"Content-Length: " + str(body_len).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n"


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: a request at a time, its answer parsed as it arrives."""

    def __init__(self, origin: tuple[str, str, int], loop: asyncio.AbstractEventLoop) -> None:
        import httptools  # loaded with the first pooled session, never at init

        self.origin = origin
        self.loop = loop
        self.parser = httptools.HttpResponseParser(self)
        self._upgrade, self._invalid = httptools.HttpParserUpgrade, httptools.HttpParserError
        self.transport: asyncio.Transport | None = None
        self.idle_since = 0.0
        self.lost = False
        self.busy = False
        self._error: BaseException | None = None
        self._writable: asyncio.Future[None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.header_bytes = 0
        self.headers_done = False
        self.complete = False
        self._abort = ""
        self.keep_alive = False
        self.interim = False
        self.chunks: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        self.paused = False
        self._wake: asyncio.Future[None] | None = None

    # -- asyncio protocol ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A socket transport (uvloop's is not an asyncio.Transport subclass, so no isinstance check).
        self.transport = cast("asyncio.Transport", transport)

    def data_received(self, data: bytes) -> None:
        if not self.busy or self.complete:
            self.close()  # bytes outside an answer: the connection cannot be trusted with another request
            return
        try:
            self.parser.feed_data(data)
        except self._upgrade:
            self._fail("the upstream switched protocols")
        except self._invalid:
            # A callback's abort arrives wrapped in the parser's error; its reason was kept.
            if self._abort == "extra":
                self.close()  # the answer is whole; what follows it spoils the connection, not the answer
            elif self._abort == "large":
                self._fail(f"the upstream's answer headers exceed {MAX_HEADER_BYTES} bytes")
            else:
                self._fail("the upstream's answer is not valid HTTP/1.1")
        self._notify()

    def eof_received(self) -> bool | None:
        self._closed_by_peer()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._closed_by_peer()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    # -- llhttp callbacks --------------------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self.complete:
            self._abort = "extra"  # a second message after the one answer a request gets
            raise _Abort

    def on_status(self, status: bytes) -> None:
        self.reason += status
        self._count(len(status))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value))
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            self.interim = True  # an interim answer (100 Continue, 103 Early Hints): the real one follows
            return
        self.status = status
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            self.reason, self.headers, self.header_bytes = b"", [], 0
            return
        # Asked now: once a message is complete, llhttp answers False whatever the message said.
        self.keep_alive = self.parser.should_keep_alive()
        self.complete = True

    # -- helpers -------------------------------------------------------------------------------------
    def _count(self, n: int) -> None:
        self.header_bytes += n
        if self.header_bytes > MAX_HEADER_BYTES:
            self._abort = "large"
            raise _Abort

    def _closed_by_peer(self) -> None:
        if self.busy and not self.complete and self._error is None:
            if self.headers_done and not _framed(self.headers):
                self.complete = True  # a body delimited by the connection's end has ended
            else:
                self._error = _remote_error(
                    "the upstream closed the connection before its answer ended"
                    if self.headers_done
                    else "Server disconnected without sending a response."
                )
        self.lost = True
        self._notify()

    def _fail(self, message: str) -> None:
        if self._error is None:
            self._error = _remote_error(message)
        self.close()
        self._notify()

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def wait(self, timeout: float | None) -> None:
        """Until more of the answer arrived (or it ended, or failed); ReadTimeout after ``timeout``."""
        self._wake = self.loop.create_future()
        try:
            async with asyncio.timeout(timeout):
                await self._wake
        except TimeoutError:
            import httpx2  # loaded already: the request being answered is one of its objects

            raise httpx2.ReadTimeout("the upstream did not answer in time") from None
        finally:
            self._wake = None

    def failed(self) -> bool:
        """Whether the answer failed (its error is raised by :meth:`raise_error`)."""
        return self._error is not None

    def raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def take(self) -> bytes:
        """The body bytes that arrived since the last take (resuming a paused read)."""
        data = b"".join(self.chunks) if len(self.chunks) > 1 else self.chunks[0]
        self.chunks.clear()
        self.buffered = 0
        if self.paused and self.transport is not None and not self.lost:
            self.paused = False
            self.transport.resume_reading()
        return data

    async def send(self, data: bytes, timeout: float | None) -> None:
        """Write one whole request (head and body) and expect its answer."""
        # Loaded already (the request is one of its objects); named here for the errors below.
        import httpx2

        assert self.transport is not None
        self._reset()
        self.busy = True
        self.transport.write(data)
        if self._writable is not None:
            try:
                async with asyncio.timeout(timeout):
                    await self._writable
            except TimeoutError:
                raise httpx2.WriteTimeout("the upstream did not take the request in time") from None
        if self.lost and not self.chunks and not self.headers_done:
            self.raise_error()
            raise httpx2.WriteError("the upstream closed the connection")

    def quiet(self) -> bool:
        """Whether the idle socket has nothing to read: no end, reset or stray bytes the loop has not
        handled yet (a Lambda instance thawed after its upstream hung up runs requests before the
        loop polls its sockets). One poll, as httpcore checks a connection before reuse."""
        sock: Any = self.transport.get_extra_info("socket") if self.transport is not None else None
        try:
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLIN)
            return not poller.poll(0)
        except (AttributeError, OSError, ValueError):
            return False  # no socket to ask (or no poll here): not trusted with a request

    def reusable(self) -> bool:
        # A paused reader (an answer left unread past the high-water mark) would never hear the next one.
        return self.complete and self.keep_alive and not self.paused and not self.lost and self._error is None

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


class _Abort(Exception):
    """Raised in a parser callback to stop parsing (the reason is in ``_Connection._abort``)."""


def _framed(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(n.lower() in (b"content-length", b"transfer-encoding") for n, _ in headers)


def _local_error(message: str) -> Exception:
    import httpx2  # loaded already: the request is one of its objects

    return httpx2.LocalProtocolError(message)


def _remote_error(message: str) -> Exception:
    import httpx2  # loaded already: a request was sent

    return httpx2.RemoteProtocolError(message)


def _connect_error(exc: BaseException) -> Exception:
    """httpx2.ConnectError naming what failed (an errno, a TLS failure), never the address dialed."""
    import httpx2  # loaded already: a request is being sent

    if isinstance(exc, ssl.SSLError):
        return httpx2.ConnectError(f"TLS with the upstream failed ({exc.reason or type(exc).__name__})")
    code = errno.errorcode.get(exc.errno, "error") if isinstance(exc, OSError) and exc.errno else "error"
    return httpx2.ConnectError(f"cannot connect to the upstream ({code})")


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    """httpx2's default verifying context (its CA bundle loads once per process, not per session)."""
    import httpx2  # loaded already: a request is being sent

    return httpx2.create_ssl_context()


@functools.cache
def _classes() -> tuple[type[Any], type[Any]]:
    """The transport and body stream classes (built lazily: httpx2 loads with the first session)."""
    import httpx2  # the first pooled session loads it, never the init

    class _Body(httpx2.AsyncByteStream):
        """An answer's body as it arrives; closing returns the connection to the pool when it can."""

        def __init__(self, owner: Any, conn: _Connection, read_s: float | None, drain: bool) -> None:
            self._owner = owner
            self._conn: _Connection | None = conn
            self._read_s = read_s
            self._drain = drain

        async def __aiter__(self) -> AsyncIterator[bytes]:
            conn = self._conn
            if conn is None:
                return
            while True:
                if conn.chunks:
                    yield conn.take()
                    continue
                conn.raise_error()
                if conn.complete:
                    return
                await conn.wait(self._read_s)

        async def aclose(self) -> None:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            if not conn.complete and self._drain and not conn.failed():
                budget = DRAIN_BYTES
                # Read on briefly: an upstream ends an answered SSE stream right after its response event.
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(DRAIN_SECONDS):
                        while not conn.complete and not conn.failed() and budget >= 0:
                            if conn.chunks:
                                budget -= len(conn.take())
                            else:
                                await conn.wait(None)
            self._owner._release(conn)

    class Http1Transport(httpx2.AsyncBaseTransport):
        """See the module doc: pooled HTTP/1.1 connections to pinned addresses."""

        def __init__(self, *, allow_private: bool, ssl_context: ssl.SSLContext | None = None) -> None:
            self.allow_private = allow_private
            self._ssl = ssl_context
            self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
            self._all: set[_Connection] = set()
            self._closed = False

        def _ssl_context(self) -> ssl.SSLContext:
            if self._ssl is None:
                self._ssl = _default_ssl_context()
            return self._ssl

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            if self._closed:
                raise httpx2.ConnectError("the transport is closed")
            if request.method in ("HEAD", "CONNECT"):
                raise httpx2.UnsupportedProtocol(f"{request.method} is not used with upstream sessions")
            timeouts = request.extensions.get("timeout", {})
            try:
                body = request.content  # a bytes body (every session request) is read already
            except httpx2.RequestNotRead:
                body = await request.aread()
            chunked = any(
                n.lower() == b"transfer-encoding" and b"chunked" in v.lower() for n, v in request.headers.raw
            )
            head = _checked_head(request, len(body), chunked)
            if chunked:
                body = (f"{len(body):x}\r\n".encode() + body + b"\r\n" if body else b"") + b"0\r\n\r\n"
            scheme = request.url.scheme
            host = request.url.raw_host.decode("ascii", "replace")
            port = request.url.port or (443 if scheme == "https" else 80)
            origin = (scheme, host, port)
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # A cancellation (a deadline, a client gone) is pending: it lands here, before anything
                # is sent (this path has no other suspension before its write).
                await asyncio.sleep(0)
            conn = self._reuse(origin) or await self._connect(origin, timeouts.get("connect"))
            try:
                await conn.send(head + body, timeouts.get("write"))
                read_s = timeouts.get("read")
                while not conn.headers_done:
                    conn.raise_error()
                    await conn.wait(read_s)
            except BaseException:
                self._discard(conn)
                raise
            return httpx2.Response(
                conn.status,
                headers=conn.headers,
                stream=_Body(self, conn, read_s, drain=request.method == "POST"),
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": conn.reason},
            )

        def _reuse(self, origin: tuple[str, str, int]) -> _Connection | None:
            idle = self._idle.get(origin)
            now = asyncio.get_running_loop().time()
            while idle:
                conn = idle.pop()
                if not conn.lost and now - conn.idle_since < KEEPALIVE_SECONDS and conn.quiet():
                    return conn
                self._discard(conn)
            return None

        async def _connect(self, origin: tuple[str, str, int], timeout: float | None) -> _Connection:
            scheme, host, port = origin
            try:
                addresses = await checked_addresses(host, port, self.allow_private)
            except UpstreamError as exc:
                raise httpx2.ConnectError(exc.message) from None
            loop = asyncio.get_running_loop()
            tls = self._ssl_context() if scheme == "https" else None
            failure: Exception | None = None
            for address in addresses:
                conn = _Connection(origin, loop)
                try:
                    async with asyncio.timeout(timeout):
                        await loop.create_connection(
                            lambda c=conn: c, address, port, ssl=tls,
                            server_hostname=host if tls is not None else None,
                        )  # fmt: skip
                except TimeoutError:
                    failure = httpx2.ConnectTimeout("connecting to the upstream timed out")
                    conn.close()
                    continue
                except (OSError, ssl.SSLError) as exc:
                    failure = _connect_error(exc)
                    continue  # the next checked address, as a resolver-driven dial would
                self._all.add(conn)
                return conn
            assert failure is not None  # the verdict never returns an empty tuple
            raise failure

        def _release(self, conn: _Connection) -> None:
            conn.busy = False
            if not self._closed and conn.reusable():
                idle = self._idle.setdefault(conn.origin, [])
                if len(idle) < MAX_IDLE:
                    conn.idle_since = conn.loop.time()
                    idle.append(conn)
                    return
            self._discard(conn)

        def _discard(self, conn: _Connection) -> None:
            conn.close()
            self._all.discard(conn)

        async def aclose(self) -> None:
            self._closed = True
            for conn in list(self._all):
                self._discard(conn)
            self._idle.clear()

    return Http1Transport, _Body


def http1_transport(*, allow_private: bool, ssl_context: ssl.SSLContext | None = None) -> Any:
    """A pooled, pinned HTTP/1.1 transport for an httpx2 client (see the module doc)."""
    return _classes()[0](allow_private=allow_private, ssl_context=ssl_context)


def session_http_client(headers: Mapping[str, str], *, allow_private: bool) -> httpx2.AsyncClient:
    """The httpx2 client of a pooled upstream session: this transport under the SDK's timeouts.

    When the environment configures a proxy, ``net_guard.guarded_http_client`` decides as it does for
    every other upstream client (the proxy dials, so nothing here could pin), with ``wire.keep_alive``.
    """
    import httpx2  # loaded with the first pooled session, not at init

    if proxied_by_environment():
        return guarded_http_client(headers, allow_private=allow_private, wrap=keep_alive)
    transport = http1_transport(allow_private=allow_private)
    return httpx2.AsyncClient(headers=dict(headers), timeout=client_timeout(), transport=transport)
