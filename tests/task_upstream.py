"""A 2026-07-28 upstream that runs tools as tasks of its own (the ``io.modelcontextprotocol/tasks``
extension, SEP-2663), as plain JSON-RPC over HTTP (stateless: every request carries its capabilities):
for foldgate's tests of calls that run as an upstream's task (issue 28).

* ``job`` (``taskSupport: required``): a task that completes after ``seconds`` (a tool error with
  ``fail: "tool"``, a protocol error with ``fail: "protocol"``); refused with -32021 to a request that
  does not declare the extension.
* ``confirm`` (``optional``): a task that waits for one elicitation (``input_required``), then says what
  it was told; run at once without the extension.
* ``ask_first`` (``required``): asks the user's name first (an ``input_required`` result, no task), then
  greets them from a task.

Every request is noted (method, params, headers), so a test sees exactly what foldgate sent upstream.
Statuses are computed when asked (no timers): a task is done once its ``seconds`` have passed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from foldgate.model.tool import Tool

__all__ = ["TASK_TOOLS", "TaskUpstream"]

EXTENSION = "io.modelcontextprotocol/tasks"
SCHEMA = {"type": "object", "properties": {"seconds": {"type": "number"}, "fail": {"type": "string"}}}
TASK_TOOLS = [
    Tool("up", "job", "Runs a job as a task.", SCHEMA, execution={"taskSupport": "required"}),
    Tool("up", "confirm", "Asks before it acts.", SCHEMA, execution={"taskSupport": "optional"}),
    Tool(
        "up",
        "ask_first",
        "Asks a name, then greets from a task.",
        SCHEMA,
        execution={"taskSupport": "required"},
    ),
]
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}
# The upstream's own ids: a test checks none of them reaches foldgate's client.
ID_PREFIX = "upstream-secret-"
QUESTION = {
    "method": "elicitation/create",
    "params": {
        "message": "Proceed?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        "_meta": {"upstream": "private"},
    },
}


@dataclass
class UpTask:
    """One task of this upstream."""

    task_id: str
    tool: str
    seconds: float
    fail: str | None
    started: float = field(default_factory=time.monotonic)
    cancelled: bool = False
    answers: dict[str, Any] | None = None
    text: str = ""


class TaskUpstream:
    """The upstream and its log: ``seen`` holds (method, params, headers) of every request."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.tasks: dict[str, UpTask] = {}

    def methods(self) -> list[str]:
        """The methods received, in order."""
        return [m for m, _, _ in self.seen]

    def app(self) -> Starlette:
        async def mcp(request: Request) -> Response:
            msg = await request.json()
            method, params = msg.get("method"), msg.get("params") or {}
            self.seen.append((method, params, dict(request.headers)))
            if "id" not in msg:
                return Response(status_code=202)
            caps = params.get("_meta", {}).get("io.modelcontextprotocol/clientCapabilities", {})
            declared = EXTENSION in (caps.get("extensions") or {})
            try:
                result = self.answer(method, params, declared)
            except RpcFault as fault:
                return JSONResponse({"jsonrpc": "2.0", "id": msg["id"], "error": fault.error})
            return JSONResponse(
                {"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", **result}}
            )

        return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])

    def answer(self, method: str, params: dict[str, Any], declared: bool) -> dict[str, Any]:
        """The result of one request (RpcFault: its error)."""
        if method == "server/discover":
            return {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
                "serverInfo": {"name": "task-upstream", "version": "1"},
            }
        if method == "tools/list":
            tools = [
                {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                    "execution": t.execution,
                }
                for t in TASK_TOOLS
            ]
            return {"tools": tools, "ttlMs": 0, "cacheScope": "private"}
        if method == "tools/call":
            return self.call(params, declared)
        if method.startswith("tasks/"):
            if not declared:
                raise RpcFault(-32021, "tasks need the extension")
            task = self.tasks.get(str(params.get("taskId")))
            if task is None:
                raise RpcFault(-32602, "unknown task")
            if method == "tasks/cancel":
                task.cancelled = True
                return {}
            if method == "tasks/update":
                task.answers = params.get("inputResponses")
                task.started = time.monotonic()
                return {}
            return self.status(task)
        raise RpcFault(-32601, "Method not found")

    def call(self, params: dict[str, Any], declared: bool) -> dict[str, Any]:
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "confirm" and not declared:
            return {"content": [{"type": "text", "text": "confirmed without a task"}]}
        if not declared:
            raise RpcFault(-32021, "needs tasks", {"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
        text = ""
        if name == "ask_first":
            answer = (params.get("inputResponses") or {}).get("user_name")
            if answer is None:
                ask = {
                    "method": "elicitation/create",
                    "params": {"message": "Your name?", "requestedSchema": NAME_SCHEMA},
                }
                return {
                    "resultType": "input_required",
                    "inputRequests": {"user_name": ask},
                    "requestState": "up-state",
                }
            text = f"Hello, {answer.get('content', {}).get('name')}!"
        task = UpTask(
            f"{ID_PREFIX}{len(self.tasks) + 1}", str(name), float(args.get("seconds", 0.2)), args.get("fail")
        )
        task.text = text or f"{name} done"
        self.tasks[task.task_id] = task
        return {"resultType": "task", **self.envelope(task, "working")}

    def envelope(self, task: UpTask, status: str) -> dict[str, Any]:
        return {
            "taskId": task.task_id,
            "status": status,
            "createdAt": "2026-12-01T00:00:00Z",
            "lastUpdatedAt": "2026-12-01T00:00:00Z",
            "ttlMs": 60_000,
            "pollIntervalMs": 100,
        }

    def status(self, task: UpTask) -> dict[str, Any]:
        if task.cancelled:
            return self.envelope(task, "cancelled")
        if task.tool == "confirm" and task.answers is None:
            return {**self.envelope(task, "input_required"), "inputRequests": {"ok": QUESTION}}
        if time.monotonic() - task.started < task.seconds:
            return {**self.envelope(task, "working"), "statusMessage": "working on it"}
        if task.fail == "protocol":
            return {**self.envelope(task, "failed"), "error": {"code": -32603, "message": "the job crashed"}}
        text = task.text
        if task.answers is not None:
            text = f"confirmed: {task.answers.get('ok', {}).get('content')}"
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if task.fail == "tool":
            result["isError"] = True
        return {**self.envelope(task, "completed"), "result": result}


class RpcFault(Exception):
    """A JSON-RPC error this upstream answers."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            self.error["data"] = data
