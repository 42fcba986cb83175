"""An upstream (the official Python SDK's MCPServer over Streamable HTTP) whose tools send things back
while they run: progress and log notifications, an elicitation, a sampling request; at 2026-07-28 the
elicitation is an ``input_required`` result with a state of its own (of a tool and of a prompt).

``python -m tests.upstreams.relaying PORT [--legacy]``: ``--legacy`` refuses ``server/discover``, so a
client settles on the handshake era (requests for input travel on the call's stream).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel
from starlette.types import Receive, Scope, Send

MODERN = "2026-07-28"
STATE = "upstream-state-1"

server = MCPServer("relaying")


class Answer(BaseModel):
    """The form an elicitation asks for."""

    ok: bool


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Reports ``steps`` progress notifications and as many log messages, then answers."""
    for step in range(1, steps + 1):
        await ctx.info(f"step {step} of {steps}")
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool()
async def confirm(question: str, ctx: Context) -> str | types.InputRequiredResult:
    """Asks the user ``question`` (a yes/no form) and answers what they said."""
    if ctx.protocol_version == MODERN:
        responses = ctx.input_responses or {}
        if "confirm" not in responses:
            request = {"method": "elicitation/create", "params": _form(question)}
            return types.InputRequiredResult.model_validate(
                {"inputRequests": {"confirm": request}, "requestState": STATE}
            )
        answered = responses["confirm"]
        said = answered.model_dump(by_alias=True, exclude_none=True, mode="json")
        return f"answer: {said.get('action')} {said.get('content')} state={ctx.request_state}"
    result = await ctx.elicit(question, Answer)
    return f"answer: {result.action} {getattr(result, 'data', None)}"


@server.tool()
async def sample(prompt: str, ctx: Context) -> str:
    """Asks the client's model to complete ``prompt`` and answers its text."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    result = await ctx.session.create_message(
        messages=[message], max_tokens=20, related_request_id=ctx.request_id
    )
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else str(content)
    return f"model said: {text}"


@server.prompt()
async def briefing(topic: str, ctx: Context) -> str | types.InputRequiredResult:
    """A briefing on ``topic``; at 2026-07-28 it first asks who the briefing is for."""
    if ctx.protocol_version != MODERN:
        return f"Brief on {topic}."
    responses = ctx.input_responses or {}
    if "audience" not in responses:
        request = {"method": "elicitation/create", "params": _form("Who is the briefing for?")}
        return types.InputRequiredResult.model_validate(
            {"inputRequests": {"audience": request}, "requestState": STATE}
        )
    said = responses["audience"].model_dump(by_alias=True, exclude_none=True, mode="json")
    return f"Brief on {topic} for {said.get('content')} state={ctx.request_state}."


def _form(question: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    return {"mode": "form", "message": question, "requestedSchema": schema}


def legacy_only(app: Any) -> Any:
    """``app`` with ``server/discover`` refused (-32601), as a handshake-era server answers it."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if b'"server/discover"' in body:
            rid = json.loads(body).get("id")
            error = {"code": -32601, "message": "Method not found"}
            payload = json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


def main() -> None:
    port = int(sys.argv[1])
    app: Any = server.streamable_http_app()
    if "--legacy" in sys.argv:
        app = legacy_only(app)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
