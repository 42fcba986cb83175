"""An abandoned upstream request (a cancelled task, a call handed to a worker) is cancelled upstream
(issue 28): a handshake-era session sends ``notifications/cancelled`` naming it, on its session; at
2026-07-28 closing the response is the cancellation and no notice is sent; an abandoned era probe
sends none either (there is no session yet)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest

from foldgate.upstream import plain_session
from tests.unit.upstream.test_plain_session import Upstream


class Hanging(Upstream):
    """Answers every tools/call only after ``release`` (never, in these tests); notes when one starts."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.calling = asyncio.Event()

    async def handle_async(self, request: httpx2.Request) -> httpx2.Response:
        if b'"tools/call"' in request.content:
            self.handle(request)
            self.calling.set()
            await asyncio.Event().wait()  # an upstream that never answers this call
        return self.handle(request)

    def session(self, era: tuple[str, Any] | None = None) -> plain_session.PlainSession:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle_async))
        return plain_session.PlainSession("up", "http://up.test/mcp", http, era=era)


async def abandon(up: Hanging, era: tuple[str, Any]) -> None:
    session = up.session(era)
    await session.open()
    call = asyncio.ensure_future(session.request("tools/call", {"name": "slow", "arguments": {}}))
    await up.calling.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_a_handshake_era_call_abandoned_is_cancelled_by_notice() -> None:
    up = Hanging()
    await abandon(up, ("legacy", None))
    notes = [
        (m, h) for verb, m, h in up.seen if m is not None and m.get("method") == "notifications/cancelled"
    ]
    calls = [m for _, m, _ in up.seen if m is not None and m.get("method") == "tools/call"]
    assert len(notes) == 1
    assert notes[0][0]["params"] == {"requestId": calls[0]["id"]}
    assert notes[0][1]["mcp-session-id"] == "s-1"


async def test_a_modern_call_abandoned_sends_no_notice() -> None:
    up = Hanging(modern=True)
    await abandon(up, ("auto", None))
    assert not [m for _, m, _ in up.seen if m is not None and m.get("method") == "notifications/cancelled"]
