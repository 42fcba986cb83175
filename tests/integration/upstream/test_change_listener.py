"""Upstream change notifications reach ``UpstreamClient(on_change=...)`` on the sessions it holds: a
stdio server's and a pooled Streamable HTTP server's ``subscriptions/listen`` events (the 2026-07-28
form of ``notifications/tools/list_changed``), and a handshake-era notification through the session's
message handler."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.dev.procs import free_port, stop_process
from foldgate.upstream.changes import change_handler
from foldgate.upstream.client import UpstreamClient
from tests.procs import REPO

CHANGING = REPO / "tests" / "upstreams" / "changing_stdio.py"


async def names(client: UpstreamClient, server: ServerConfig) -> list[str]:
    return [str(t["name"]) for t in (await client.list_tools(server)).tools]


async def until(condition: object, seconds: float) -> None:
    for _ in range(int(seconds / 0.05)):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {seconds}s")


async def test_a_stdio_servers_change_reaches_the_listener(tmp_path: Path) -> None:
    flag, seen = tmp_path / "deployed", []
    client = UpstreamClient(allow_stdio=True, on_change=seen.append)
    server = ServerConfig(
        name="changing", transport="stdio", command=[sys.executable, str(CHANGING), str(flag)]
    )
    try:
        assert await names(client, server) == ["ping"]
        # Once the listen stream is acknowledged the listener is told to list again (no replay).
        await until(lambda: seen, 5)
        seen.clear()
        flag.touch()
        await until(lambda: seen, 5)
        assert set(seen) == {"changing"}
        assert await names(client, server) == ["ping", "added_tool"]
    finally:
        await client.aclose()


@pytest.fixture
def http_upstream(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port, flag = free_port(), tmp_path / "deployed"
    cmd = [sys.executable, str(CHANGING), str(flag), "--http", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}/mcp", flag
    finally:
        stop_process(proc)


async def test_a_pooled_http_sessions_change_reaches_the_listener(http_upstream: tuple[str, Path]) -> None:
    url, flag = http_upstream
    seen: list[str] = []
    client = UpstreamClient(on_change=seen.append)
    server = ServerConfig(name="web", url=url)
    try:
        for _ in range(100):  # the server process is starting
            try:
                assert await names(client, server) == ["ping"]
                break
            except Exception:
                await asyncio.sleep(0.1)
        await until(lambda: seen, 5)  # the stream is acknowledged
        seen.clear()
        flag.touch()
        await until(lambda: seen, 5)
        assert set(seen) == {"web"}
    finally:
        await client.aclose()


async def test_the_message_handler_reports_list_changed_notifications_only() -> None:
    # The SDK's own notification types, as a handshake-era session surfaces them.
    seen: list[str] = []
    handle = change_handler("crm", seen.append)
    await handle(types.ToolListChangedNotification())
    await handle(types.PromptListChangedNotification())
    await handle(types.ResourceListChangedNotification())
    await handle(
        types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="info", data="x")
        )
    )
    await handle(RuntimeError("transport fault"))
    assert seen == ["crm", "crm", "crm"]
