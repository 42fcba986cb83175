"""The local server's HTTP protocol: uvicorn's, with a response's head and first body bytes in one write.

uvicorn writes a response's status line and headers as soon as the app sends ``http.response.start``
and its body with ``http.response.body``: two socket writes for every answer, each a system call and,
on loopback, a wake-up of the client that can read only half an answer from the first. Here the head is
held until the body's first bytes and written with them (a response that never sends body bytes, a
HEAD or a 204, has its head written on the event loop's next turn). Nothing else changes: the same
parser, flow control and keep-alive, and the same bytes on the wire.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["HeadWithBody", "http_protocol"]


class HeadWithBody:
    """A transport whose writes of a response head (``HTTP/...\\r\\n\\r\\n``) wait for the next write."""

    __slots__ = ("_head", "_inner")

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        """Write ``data``, after a held head; a head alone is held until the next write."""
        if self._head is not None:
            head, self._head = self._head, None
            self._inner.write(head + data)
        elif data.startswith(b"HTTP/") and data.endswith(b"\r\n\r\n"):
            self._head = data
            # A response with no body bytes to follow (HEAD, 204, 304) is not left waiting.
            asyncio.get_running_loop().call_soon(self.flush)
        else:
            self._inner.write(data)

    def flush(self) -> None:
        """Write a held head now."""
        if self._head is not None:
            head, self._head = self._head, None
            if not self._inner.is_closing():
                self._inner.write(head)

    def close(self) -> None:
        """Close the connection after writing what is held."""
        self.flush()
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def http_protocol() -> Any:
    """uvicorn's httptools protocol writing heads with bodies; ``"auto"`` when httptools is absent."""
    try:
        # Loaded by the local server only (the Lambda functions answer through Mangum, no socket).
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "auto"

    class HeadWithBodyProtocol(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            # A stand-in with the transport's every method (delegated), write held as above.
            super().connection_made(HeadWithBody(transport))  # type: ignore[arg-type]

    return HeadWithBodyProtocol
