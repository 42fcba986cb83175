"""Warm upstream sessions against real servers on loopback, with a counting, fault-injecting proxy between.

server-everything (handshake era, stateful sessions) and the replay upstream (2026-07-28, stateless) are
real processes; the proxy only forwards bytes, counts requests and, when told, holds a request, cuts a
response or answers 404 for a session.
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.dev.bench.wire_proxy import WireProxy, wire_proxy
from foldgate.errors import UpstreamBusyError, UpstreamError, UpstreamTimeoutError
from foldgate.upstream.client import UpstreamClient
from tests.procs import Replay, replay

HANDSHAKE = ("POST server/discover", "POST initialize", "POST notifications/initialized")


@pytest.fixture(scope="module")
def rp() -> Iterator[Replay]:
    with replay() as running:
        yield running


def proxied(url: str) -> tuple[str, int, str]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port, parts.path


@pytest.fixture
def ev_proxy(everything_url: str) -> Iterator[tuple[WireProxy, str]]:
    host, port, path = proxied(everything_url)
    with wire_proxy(host, port) as proxy:
        yield proxy, proxy.url(path)


@pytest.fixture
def crm_proxy(rp: Replay) -> Iterator[tuple[WireProxy, str]]:
    rp.clear()
    host, port, path = proxied(rp.urls["crm"])
    with wire_proxy(host, port) as proxy:
        yield proxy, proxy.url(path)


def server(url: str, **kw: object) -> ServerConfig:
    return ServerConfig.model_validate({"name": "up", "url": url, "timeout_s": 10, **kw})


async def test_a_warm_session_costs_one_round_trip_per_call(ev_proxy: tuple[WireProxy, str]) -> None:
    proxy, url = ev_proxy
    client = UpstreamClient(allow_private=True)
    try:
        for i in range(3):
            assert await client.call_tool(server(url), "echo", {"message": f"w{i}"}) == {
                "content": [{"type": "text", "text": f"Echo: w{i}"}]
            }
        assert proxy.count("POST initialize") == 1
        proxy.reset()
        for i in range(10):
            await client.call_tool(server(url), "echo", {"message": str(i)})
        assert proxy.count("POST tools/call") == 10
        assert sum(proxy.count(h) for h in HANDSHAKE) == 0
        assert proxy.connections == 0  # keep-alive: no new TCP connection for warm calls
    finally:
        await client.aclose()


async def test_a_stateless_upstream_is_called_without_any_handshake(crm_proxy: tuple[WireProxy, str]) -> None:
    proxy, url = crm_proxy
    client = UpstreamClient(allow_private=True)
    try:
        await client.call_tool(server(url), "find_contact", {"query": "ada"})
        assert proxy.count("POST initialize") == 0  # the discover probe settled the era: modern
        proxy.reset()
        await client.call_tool(server(url), "find_contact", {"query": "bob"})
        assert dict(proxy.requests) == {"POST tools/call": 1}
    finally:
        await client.aclose()


@pytest.mark.parametrize("how", ["404 from the proxy", "terminated at the upstream"])
async def test_a_session_the_upstream_dropped_is_reinitialised_and_the_call_succeeds(
    ev_proxy: tuple[WireProxy, str], everything_url: str, how: str
) -> None:
    proxy, url = ev_proxy
    client = UpstreamClient(allow_private=True)
    try:
        await client.call_tool(server(url), "echo", {"message": "one"})
        if how == "404 from the proxy":
            proxy.expire()
        else:  # server-everything answers a forgotten session with 400 "No valid session ID"
            for sid in proxy.sessions():
                req = urllib.request.Request(everything_url, method="DELETE", headers={"mcp-session-id": sid})
                urllib.request.urlopen(req, timeout=5).close()
        # echo carries no idempotent annotation: the retry is allowed because the upstream refused it.
        result = await client.call_tool(server(url), "echo", {"message": "two"})
        assert result == {"content": [{"type": "text", "text": "Echo: two"}]}
        assert proxy.count("POST initialize") == 2
    finally:
        await client.aclose()


async def test_a_call_whose_request_reached_the_upstream_is_never_retried(
    crm_proxy: tuple[WireProxy, str], rp: Replay
) -> None:
    proxy, url = crm_proxy
    client = UpstreamClient(allow_private=True)
    try:
        await client.list_tools(server(url))  # warm: the session exists before the fault
        proxy.drop_response["tools/call"] = 1
        with pytest.raises(UpstreamError):
            await client.call_tool(server(url), "create_contact", {"name": "Ada"}, annotations=None)
        assert [c["tool"] for c in rp.calls()] == ["create_contact"]  # it ran once, and only once
        assert proxy.count("POST tools/call") == 1
        # The broken session is not reused: the next call goes through.
        await client.call_tool(server(url), "find_contact", {"query": "ada"})
    finally:
        await client.aclose()


async def test_a_read_only_call_lost_in_transit_is_sent_again(
    crm_proxy: tuple[WireProxy, str], rp: Replay
) -> None:
    proxy, url = crm_proxy
    client = UpstreamClient(allow_private=True)
    try:
        await client.list_tools(server(url))
        proxy.drop_response["tools/call"] = 1
        result = await client.call_tool(
            server(url), "find_contact", {"query": "ada"}, annotations={"readOnlyHint": True}
        )
        assert "content" in result
        assert [c["tool"] for c in rp.calls()] == ["find_contact", "find_contact"]
    finally:
        await client.aclose()


async def test_an_upstream_that_hangs_times_out_and_frees_its_slot(ev_proxy: tuple[WireProxy, str]) -> None:
    proxy, url = ev_proxy
    client = UpstreamClient(allow_private=True)
    cfg = server(url, timeout_s=0.5, max_concurrency=1, queue_timeout_s=0.3)
    try:
        await client.call_tool(cfg, "echo", {"message": "warm"})
        proxy.hold.add("tools/call")
        with pytest.raises(UpstreamTimeoutError):
            await client.call_tool(cfg, "echo", {"message": "stuck"})
        proxy.release()
        # The only slot was released by the timeout: this call is not refused as busy.
        result = await client.call_tool(cfg, "echo", {"message": "after"})
        assert result == {"content": [{"type": "text", "text": "Echo: after"}]}
    finally:
        await client.aclose()


async def test_a_full_upstream_answers_upstream_busy_after_the_queue_timeout(
    ev_proxy: tuple[WireProxy, str],
) -> None:
    proxy, url = ev_proxy
    client = UpstreamClient(allow_private=True)
    cfg = server(url, timeout_s=5, max_concurrency=1, queue_timeout_s=0.2)
    try:
        await client.call_tool(cfg, "echo", {"message": "warm"})
        proxy.hold.add("tools/call")
        first = asyncio.create_task(client.call_tool(cfg, "echo", {"message": "slow"}))
        await asyncio.sleep(0.1)
        with pytest.raises(UpstreamBusyError) as info:
            await client.call_tool(cfg, "echo", {"message": "queued"})
        assert info.value.code == "upstream_busy"
        assert "1 calls already in flight" in info.value.message
        proxy.release()
        assert await first == {"content": [{"type": "text", "text": "Echo: slow"}]}
    finally:
        await client.aclose()


async def test_a_config_change_gets_a_new_session(ev_proxy: tuple[WireProxy, str]) -> None:
    proxy, url = ev_proxy
    client = UpstreamClient(allow_private=True)
    try:
        await client.call_tool(server(url), "echo", {"message": "a"})
        await client.call_tool(server(url, timeout_s=3), "echo", {"message": "b"})
        assert proxy.count("POST initialize") == 1  # the timeout is not part of the identity
        await client.call_tool(server(url, headers={"x-tenant-key": "rotated"}), "echo", {"message": "c"})
        assert proxy.count("POST initialize") == 2
    finally:
        await client.aclose()


def test_a_session_from_a_finished_event_loop_is_not_reused(ev_proxy: tuple[WireProxy, str]) -> None:
    """As when each request runs on a fresh loop: the pooled session's tasks died with the old one."""
    proxy, url = ev_proxy
    client = UpstreamClient(allow_private=True)
    for message in ("first loop", "second loop"):
        result = asyncio.run(client.call_tool(server(url), "echo", {"message": message}))
        assert result == {"content": [{"type": "text", "text": f"Echo: {message}"}]}
    assert proxy.count("POST initialize") == 2
    asyncio.run(client.aclose())


async def test_a_handshake_that_never_finishes_does_not_wedge_later_calls(
    ev_proxy: tuple[WireProxy, str],
) -> None:
    proxy, url = ev_proxy
    client = UpstreamClient(allow_private=True)
    cfg = server(url, timeout_s=0.5)
    try:
        proxy.hold.add("initialize")
        with pytest.raises(UpstreamTimeoutError):
            await client.call_tool(cfg, "echo", {"message": "first"})
        proxy.hold.discard("initialize")  # the held handshake stays stuck; new ones pass
        await asyncio.sleep(0.3)  # past the stuck session's own handshake deadline
        result = await client.call_tool(cfg, "echo", {"message": "second"})
        assert result == {"content": [{"type": "text", "text": "Echo: second"}]}
        assert proxy.count("POST initialize") == 2
    finally:
        await client.aclose()
