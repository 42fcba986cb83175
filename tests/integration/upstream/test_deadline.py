"""The request's deadline bounds upstream work (issue 24, item 10), against the real replay upstream
behind a loopback proxy that can hold a request (an upstream that hangs).

Under :func:`foldgate.model.deadline.answering_by` a call ends as ``upstream_timeout`` when the request
runs out of time, whatever the server's longer ``timeout_s``; the wait for a concurrency slot counts
too (an answer after the deadline can never be delivered); the error carries the bound and the hint;
the slot and the pooled session are usable afterwards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.dev.bench.wire_proxy import WireProxy, wire_proxy
from foldgate.errors import UpstreamTimeoutError
from foldgate.model.deadline import answering_by
from foldgate.upstream.client import DEADLINE_HINT, TIMEOUT_HINT, UpstreamClient
from tests.procs import Replay, replay


@pytest.fixture(scope="module")
def rp() -> Iterator[Replay]:
    with replay() as running:
        yield running


@pytest.fixture
def crm(rp: Replay) -> Iterator[tuple[WireProxy, str]]:
    parts = urlsplit(rp.urls["crm"])
    assert parts.hostname is not None
    assert parts.port is not None
    with wire_proxy(parts.hostname, parts.port) as proxy:
        yield proxy, proxy.url(parts.path)


def server(url: str, **kw: object) -> ServerConfig:
    return ServerConfig.model_validate({"name": "crm", "url": url, "timeout_s": 10, **kw})


async def until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll a condition the proxy exposes no event for, failing after ``timeout_s``."""
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def find(client: UpstreamClient, cfg: ServerConfig) -> dict[str, object]:
    return await client.call_tool(cfg, "find_contact", {"query": "ada"}, annotations={"readOnlyHint": True})


async def test_a_hanging_call_ends_at_the_requests_deadline_not_the_servers_timeout(
    crm: tuple[WireProxy, str],
) -> None:
    proxy, url = crm
    client = UpstreamClient(allow_private=True)
    cfg = server(url, max_concurrency=1)
    try:
        assert "content" in await find(client, cfg)
        proxy.hold.add("tools/call")
        started = time.monotonic()
        with answering_by(started + 0.6), pytest.raises(UpstreamTimeoutError) as info:
            await find(client, cfg)
        elapsed = time.monotonic() - started
        proxy.release()
        assert 0.5 <= elapsed < 1.5
        assert info.value.code == "upstream_timeout"
        assert 0.4 <= info.value.details["timeout_s"] <= 0.6
        assert info.value.details["hint"] == DEADLINE_HINT
        assert "before the gateway's own deadline" in info.value.message
        # The only slot was freed and the pooled session still answers.
        assert "content" in await find(client, cfg)
    finally:
        await client.aclose()


async def test_the_wait_for_a_slot_counts_against_the_deadline(crm: tuple[WireProxy, str]) -> None:
    proxy, url = crm
    client = UpstreamClient(allow_private=True)
    cfg = server(url, max_concurrency=1, queue_timeout_s=5)
    try:
        assert "content" in await find(client, cfg)
        proxy.hold.add("tools/call")
        first = asyncio.create_task(find(client, cfg))
        await until(lambda: proxy.count("POST tools/call") == 2)  # the held call holds the only slot
        started = time.monotonic()
        with answering_by(started + 0.3), pytest.raises(UpstreamTimeoutError) as info:
            await find(client, cfg)  # never gets the slot: a timeout at the deadline, not upstream_busy
        assert time.monotonic() - started < 1.0
        assert info.value.details["hint"] == DEADLINE_HINT
        proxy.release()
        assert "content" in await first
    finally:
        await client.aclose()


async def test_a_deadline_later_than_the_servers_timeout_leaves_the_servers_timeout(
    crm: tuple[WireProxy, str],
) -> None:
    proxy, url = crm
    client = UpstreamClient(allow_private=True)
    cfg = server(url, timeout_s=0.4)
    try:
        assert "content" in await find(client, cfg)
        proxy.hold.add("tools/call")
        with answering_by(time.monotonic() + 20), pytest.raises(UpstreamTimeoutError) as info:
            await find(client, cfg)
        proxy.release()
        assert info.value.details == {"timeout_s": 0.4, "hint": TIMEOUT_HINT}
        assert info.value.message == "crm: find_contact did not answer within 0.4s"
    finally:
        await client.aclose()


async def test_a_request_out_of_time_never_reaches_the_upstream(crm: tuple[WireProxy, str]) -> None:
    proxy, url = crm
    client = UpstreamClient(allow_private=True)
    try:
        assert "content" in await find(client, server(url))
        sent = proxy.count("POST tools/call")
        with answering_by(time.monotonic() - 1), pytest.raises(UpstreamTimeoutError):
            await find(client, server(url))
        assert proxy.count("POST tools/call") == sent
    finally:
        await client.aclose()


async def test_listings_resources_and_prompts_are_bounded_by_the_deadline_too(
    crm: tuple[WireProxy, str],
) -> None:
    """tools/list here; resources/read, prompts/get and completions take the same path (_on_session)."""
    proxy, url = crm
    client = UpstreamClient(allow_private=True)
    try:
        await client.list_tools(server(url))  # warm: the session, and the SDK types a listing loads
        proxy.hold.add("tools/list")
        started = time.monotonic()
        with answering_by(started + 0.4), pytest.raises(UpstreamTimeoutError) as info:
            await client.list_tools(server(url))
        proxy.release()
        assert time.monotonic() - started < 1.2
        assert info.value.details["hint"] == DEADLINE_HINT
    finally:
        await client.aclose()
