"""Reading one JSON-RPC answer off a Streamable HTTP response body: plain JSON or a bounded SSE stream
(and, for httpcore clients, keeping the connection under a closed answer reusable: ``keep_alive``;
the pooled sessions' own transport, ``http1_transport``, does that itself).

The upstream is hostile input. A POST's answer is either ``application/json`` (one message) or
``text/event-stream``: any number of events -- progress and logging notifications, requests the server
makes of the client -- before the response that carries our request's id. Everything here is bounded:
one message at most ``MAX_MESSAGE_BYTES``, a whole stream at most ``MAX_STREAM_BYTES`` and
``MAX_EVENTS`` events, so an upstream that streams forever or sends one endless line fails with a clear
``UpstreamError`` instead of holding memory (the caller's deadline bounds the time).

No MCP SDK here: this is what keeps a cold first call from importing it (see ``plain_session``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from foldgate.errors import UpstreamError

__all__ = [
    "DRAIN_BYTES",
    "DRAIN_SECONDS",
    "MAX_EVENTS",
    "MAX_MESSAGE_BYTES",
    "MAX_STREAM_BYTES",
    "WireError",
    "parse_message",
    "sse_messages",
]

# One message: far above any sane tool result, far below what would hurt a 1 GB Lambda.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# A whole answer stream, notifications included.
MAX_STREAM_BYTES = 64 * 1024 * 1024
MAX_EVENTS = 10_000
# A response body this close to its end is read out on close so its connection stays reusable.
DRAIN_BYTES = 64 * 1024
DRAIN_SECONDS = 0.05


class WireError(UpstreamError):
    """The upstream answered, but not with a readable JSON-RPC message (garbled, oversized, wrong type).

    The request reached the upstream, so this is never a "lost in transit" failure.
    """


def parse_message(data: bytes | str, where: str) -> dict[str, Any]:
    """One JSON-RPC message (a JSON object) from ``data``; WireError otherwise."""
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):
        raise WireError(f"{where}: not JSON") from None
    if not isinstance(message, dict):
        raise WireError(f"{where}: not a JSON-RPC message object")
    return message


@dataclass(slots=True)
class _Event:
    kind: str = "message"
    data: list[str] | None = None
    size: int = 0

    def add(self, value: str) -> None:
        if self.data is None:
            self.data = []
        self.data.append(value)
        self.size += len(value) + 1
        if self.size > MAX_MESSAGE_BYTES:
            raise WireError(f"SSE event larger than {MAX_MESSAGE_BYTES} bytes")


class _Lines:
    """Lines of an event stream fed chunk by chunk (``\\n``, ``\\r\\n`` or ``\\r`` ends one), each bounded
    in size: the complete lines of each chunk split at once, the rest held for the next."""

    __slots__ = ("_buffer", "_scanned", "_total")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scanned = 0  # no line end before this offset of the buffer: big lines are not rescanned
        self._total = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The lines ``chunk`` completes."""
        self._total += len(chunk)
        if self._total > MAX_STREAM_BYTES:
            raise WireError(f"SSE stream longer than {MAX_STREAM_BYTES} bytes")
        buffer = self._buffer
        buffer += chunk
        scanned = self._scanned
        cut = max(buffer.rfind(b"\n", scanned), buffer.rfind(b"\r", scanned))
        if cut == len(buffer) - 1 and buffer[cut] == 0x0D:
            # A \r at the end of a chunk may be the first half of \r\n: what precedes it waits for more.
            cut = max(buffer.rfind(b"\n", scanned, cut), buffer.rfind(b"\r", scanned, cut))
        lines: list[str] = []
        if cut >= 0:
            lines = [line.decode("utf-8", errors="replace") for line in buffer[: cut + 1].splitlines()]
            del buffer[: cut + 1]
        self._scanned = len(buffer) - 1 if buffer.endswith(b"\r") else len(buffer)
        if len(buffer) > MAX_MESSAGE_BYTES:
            raise WireError(f"SSE line longer than {MAX_MESSAGE_BYTES} bytes")
        return lines

    def rest(self) -> list[str]:
        """What the stream ended with after its last line end, as one line (none when nothing)."""
        return [self._buffer.decode("utf-8", errors="replace")] if self._buffer else []


async def sse_messages(chunks: AsyncIterator[bytes]) -> AsyncGenerator[dict[str, Any], None]:
    """The JSON-RPC messages of an event stream, in order (``message`` events with data only).

    Comments, ``id``/``retry`` fields, priming events without data and events of other types are
    skipped, as the SDK's transport does; a ``message`` event whose data is not a JSON object is a
    WireError (the SDK answers it with a parse error too). Lines are read chunk by chunk, with no
    iterator of their own in between (one per line cost more than the parsing).
    """
    lines = _Lines()
    events = _Events()
    async for chunk in chunks:
        for line in lines.feed(chunk):
            message = events.line(line)
            if message is not None:
                yield message
    for line in lines.rest():
        events.line(line)  # an event the stream ended inside is dropped, as the SSE spec says


class _Events:
    """The events of a stream's lines, as they complete."""

    __slots__ = ("count", "event")

    def __init__(self) -> None:
        self.event = _Event()
        self.count = 0

    def line(self, line: str) -> dict[str, Any] | None:
        """The message ``line`` completes (a blank line ends an event), else None."""
        event = self.event
        if not line:
            self.event = _Event()
            if event.data is not None and event.kind == "message" and any(event.data):
                self.count += 1
                if self.count > MAX_EVENTS:
                    raise WireError(f"SSE stream with more than {MAX_EVENTS} events")
                return parse_message("\n".join(event.data), "SSE event")
            return None
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            event.add(value)
        elif field == "event":
            event.kind = value
        return None


def keep_alive(transport: Any) -> Any:
    """Wrap an httpx2 transport so responses closed just short of their end keep their connection.

    A session closes an SSE answer as soon as the JSON-RPC response event arrives, before the end of the
    HTTP body (the last chunk) is read; httpcore then drops the connection and the next call pays a new
    TCP (and TLS) handshake. Upstreams end the body right after that event, so reading on briefly (at
    most ``DRAIN_BYTES`` for ``DRAIN_SECONDS``) returns the connection to the pool; a stream that
    stays open is closed as before. The caller already has its answer: the drain costs it nothing.
    """
    # httpx2 loads with the first pooled session, not at init.
    import httpx2

    class _Drained(httpx2.AsyncByteStream):
        def __init__(self, inner: httpx2.AsyncByteStream) -> None:
            self._inner = inner
            self._chunks = inner.__aiter__()  # one iterator, so closing can read on where reading stopped

        async def __aiter__(self) -> AsyncIterator[bytes]:
            while True:
                try:
                    yield await self._chunks.__anext__()
                except StopAsyncIteration:
                    return

        async def aclose(self) -> None:
            budget = DRAIN_BYTES
            with contextlib.suppress(Exception):
                async with asyncio.timeout(DRAIN_SECONDS):
                    async for chunk in self:
                        budget -= len(chunk)
                        if budget < 0:
                            break
            await self._inner.aclose()

    class _KeepAlive(httpx2.AsyncBaseTransport):
        def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
            self._inner = inner

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            response = await self._inner.handle_async_request(request)
            # Only answers to POSTs: the GET stream is meant to stay open until the session ends.
            if request.method == "POST" and isinstance(response.stream, httpx2.AsyncByteStream):
                response.stream = _Drained(response.stream)
            return response

        async def aclose(self) -> None:
            await self._inner.aclose()

    return _KeepAlive(transport)
