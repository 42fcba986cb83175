"""A real upstream MCP server with a long tool (issue 28's tasks): the SDK's low-level server over
Streamable HTTP (SSE answers, stateful sessions), whose tools sleep for as long as they are asked and
note when a call starts, ends or is cancelled."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount

from foldgate.model.tool import Tool

__all__ = ["TOOLS", "SlowUpstream"]

SLEEP_SCHEMA = {
    "type": "object",
    "properties": {"seconds": {"type": "number"}},
    "required": ["seconds"],
}
TOOLS = [
    Tool("slow", "sleep", "Sleeps, then says so.", SLEEP_SCHEMA, annotations={"readOnlyHint": True}),
    Tool("slow", "export", "Sleeps, then says so (pinned to start as a task).", SLEEP_SCHEMA),
    Tool(
        "slow",
        "report",
        "Sleeps, then says so (declares task support).",
        SLEEP_SCHEMA,
        execution={"taskSupport": "optional"},
    ),
]


class SlowUpstream:
    """A long-running upstream and its log: calls started, calls cancelled (and an event per cancellation)."""

    def __init__(self) -> None:
        self.started: list[float] = []
        self.began = threading.Event()
        self.cancelled = threading.Event()
        self.finished: list[float] = []

    def app(self) -> Starlette:
        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[
                    types.Tool(
                        name=t.name,
                        description=t.description,
                        input_schema=t.input_schema,
                        annotations=types.ToolAnnotations.model_validate(t.annotations)
                        if t.annotations
                        else None,
                        execution=types.ToolExecution.model_validate(t.execution) if t.execution else None,
                    )
                    for t in TOOLS
                ]
            )

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            seconds = float((params.arguments or {})["seconds"])
            self.started.append(seconds)
            self.began.set()
            try:
                await anyio.sleep(seconds)  # the tool's work: a long call is what is under test
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
            self.finished.append(seconds)
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"slept {seconds}")])

        server: Server[Any] = Server("slow", on_list_tools=list_tools, on_call_tool=call_tool)
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        # Stateful: a notifications/cancelled reaches the request it names on the same session.
        manager = StreamableHTTPSessionManager(app=server, security_settings=security)

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with manager.run():
                yield

        return Starlette(routes=[Mount("/mcp", app=manager.handle_request)], lifespan=lifespan)
