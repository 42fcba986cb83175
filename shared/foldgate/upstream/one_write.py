"""An upstream HTTP/1.1 request in one socket write: its head held until its body is written with it.

httpcore writes a request's head (the request line and headers) and then its body as separate writes:
two system calls per upstream call and, on loopback or a busy host, a wake-up of the upstream that
can read only half a request from the first. The connections the gateway dials
(:mod:`foldgate.upstream.net_guard`) hold the first write of each request (its head) and send it with
the next one: the body, or the empty end-of-message write that follows a request without a body. A
read always sends what is held first, so nothing waits for an answer to a request not fully sent.
The bytes on the wire are the same.
"""

from __future__ import annotations

import functools
import ssl
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpcore2

__all__ = ["one_write_stream"]


@functools.cache
def _stream_class() -> type[Any]:
    """The stream wrapper (built lazily: httpcore2 is only needed once an upstream is dialed)."""
    # Loaded on first use: the request path's cold start does not pay for it.
    import httpcore2

    class OneWriteStream(httpcore2.AsyncNetworkStream):
        """A network stream whose first write after a read (a request's head) waits for the next."""

        def __init__(self, inner: httpcore2.AsyncNetworkStream) -> None:
            self._inner = inner
            self._held = b""
            self._head_next = True

        async def write(self, buffer: bytes, timeout: float | None = None) -> None:
            if self._head_next:
                self._head_next = False
                self._held = buffer
                return
            if self._held:
                buffer, self._held = self._held + buffer, b""
            await self._inner.write(buffer, timeout)

        async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            if self._held:
                held, self._held = self._held, b""
                await self._inner.write(held, timeout)
            self._head_next = True  # what is written after an answer is read is the next request's head
            data: bytes = await self._inner.read(max_bytes, timeout)
            return data

        async def aclose(self) -> None:
            await self._inner.aclose()

        async def start_tls(
            self,
            ssl_context: ssl.SSLContext,
            server_hostname: str | None = None,
            timeout: float | None = None,
        ) -> httpcore2.AsyncNetworkStream:
            inner = await self._inner.start_tls(ssl_context, server_hostname=server_hostname, timeout=timeout)
            return OneWriteStream(inner)

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    return OneWriteStream


def one_write_stream(inner: httpcore2.AsyncNetworkStream) -> httpcore2.AsyncNetworkStream:
    """``inner`` sending each request's head with its body."""
    stream: httpcore2.AsyncNetworkStream = _stream_class()(inner)
    return stream
