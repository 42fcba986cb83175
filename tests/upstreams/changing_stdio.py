"""A stdio MCP server whose tool list changes when a file appears, announcing it as a real upstream does.

Usage: ``python changing_stdio.py <trigger file> [--http PORT]`` (stdio, or Streamable HTTP on
127.0.0.1:PORT/mcp). It lists ``ping``; once the trigger file exists it
also lists ``added_tool`` and publishes ``ToolsListChanged`` on the SDK's subscription bus, which
reaches clients listening with ``subscriptions/listen`` (the 2026-07-28 form of
``notifications/tools/list_changed``). A test creates the file and waits for the gateway to reindex.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged

TRIGGER = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("changed.flag")
HTTP_PORT = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--http" else None
bus = InMemorySubscriptionBus()


async def _watch(server: MCPServer[Any]) -> None:
    while not TRIGGER.exists():
        await anyio.sleep(0.05)
    # Over HTTP the lifespan (and so this watcher) may run once per session: add the tool once.
    if not any(t.name == "added_tool" for t in await server.list_tools()):
        server.add_tool(added_tool, name="added_tool", description="A tool that appeared after a deploy.")
    await bus.publish(ToolsListChanged())


@contextlib.asynccontextmanager
async def _lifespan(server: MCPServer[Any]) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch, server)
        yield
        tg.cancel_scope.cancel()


server: MCPServer[Any] = MCPServer("changing", lifespan=_lifespan, subscriptions=bus)


def added_tool(text: str) -> str:
    """Echo the text."""
    return text


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    if HTTP_PORT is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=HTTP_PORT)
