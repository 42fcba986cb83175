"""The code-execution surface (``/mcp/code``): one JavaScript run orchestrates many tool calls.

The agent sends an async function body that calls ``call_tool(server, tool, args)``, transforms the
results and returns only the answer. The tool's description carries a compact catalog of the caller's
visible tools (size-capped; ``retrieve_tools`` and ``describe_tool`` find the rest). Every call from the
sandbox goes through the same path as a direct call: visibility and tier, approval, validation with the
self-healing error, upstream dispatch. ``retrieve_tools`` and ``describe_tool`` are the search surface's.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from foldgate.code.hardening import make_not_dumpable
from foldgate.config.tenant import CodeExecutionConfig
from foldgate.errors import FoldgateError, InvalidRequestError, UpstreamProtocolError
from foldgate.model.deadline import time_left
from foldgate.model.jsonutil import compact
from foldgate.model.listing import join_fragments
from foldgate.serve.recording import approx_chars, current, observing_call, result_chars
from foldgate.serve.results import error_body, error_result, json_result, unknown_tool
from foldgate.serve.surfaces.base import CallContext
from foldgate.serve.surfaces.call import RETRIEVE_TOOLS_NAME, SearchSurface, retrieve_tool
from foldgate.serve.surfaces.describe import DESCRIBE_TOOL, DESCRIBE_TOOL_NAME
from foldgate.serve.views import TenantView

if TYPE_CHECKING:
    from foldgate.code.sandbox import Sandbox

__all__ = [
    "CODE_INSTRUCTIONS",
    "CODE_TOOL_NAME",
    "RUN_DEADLINE_HINT",
    "CodeSurface",
    "code_tool",
    "parse_code_arguments",
]


CODE_TOOL_NAME: Final = "code_execution"
_MEMO: Final = "code.listing"
_MAX_CODE_CHARS: Final = 100_000
# A run cut by the request's deadline ends this much before it: its clock starts once a warm worker is
# ready (a few ms), and it must stop before its own tool calls reach the same deadline, so that the agent
# gets the run's timeout with its console and finished calls rather than a call's error inside the run.
_RUN_SLACK_S: Final = 0.25
# A run cut short by the request's deadline (the function's time limit on the cloud path), not its own.
RUN_DEADLINE_HINT: Final = (
    "The run was stopped early so that the gateway could still answer before its own time limit (on the "
    "cloud path a request gets at most about 27 s). Retry later, or do less per run (fewer or narrower "
    "tool calls, split across several runs); the operator can raise the function's timeout (API Gateway "
    "caps it at 30 s) or, once long-running calls are available, use them."
)
CODE_INSTRUCTIONS: Final = (
    "This gateway runs JavaScript for you: send one program to code_execution that calls tools with "
    "await call_tool(server, tool, args), combines the results and returns only the answer — many "
    "calls, one round trip. Its description lists the tools you may call; retrieve_tools finds more "
    "and describe_tool gives a tool's full input schema. A call with invalid arguments rejects with "
    "the tool's real schema."
)


def _catalog(view: TenantView, budget: int) -> str:
    lines: list[str] = []
    used = 0
    for t in view.visible:
        line = f"{t.server}.{t.tool.name}{t.signature}"
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
    rest = len(view.visible) - len(lines)
    if rest:
        lines.append(f"... and {rest} more: find them with retrieve_tools, read schemas with describe_tool.")
    return "\n".join(lines)


def code_tool(view: TenantView, config: CodeExecutionConfig) -> dict[str, Any]:
    """The ``code_execution`` tool entry for this caller (its catalog lists only what it may call)."""
    return {
        "name": CODE_TOOL_NAME,
        "description": (
            "Run JavaScript that calls tools and returns only what you need. `code` is the body of an "
            "async function: `const r = await call_tool(server, tool, args)` resolves with the tool's "
            "result (structured content when the tool gives it, else its text) or rejects with an error "
            "object (on invalid arguments it carries the tool's input_schema); `return` gives the answer; "
            "console.log lines come back too. Run calls in parallel with Promise.all. Limits per run: "
            f"{config.max_calls} tool calls, {config.timeout_ms} ms, {config.max_result_bytes:,} bytes of "
            "results. No network, files, modules or timers besides call_tool. Tools (server.tool(signature); "
            "no ~ means callable from the signature alone):\n" + _catalog(view, config.catalog_chars)
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "minLength": 1, "description": "An async function body."},
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 100,
                    "maximum": config.timeout_ms,
                    "description": "Wall-clock limit for this run.",
                },
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    }


def parse_code_arguments(arguments: Any, config: CodeExecutionConfig) -> tuple[str, int]:
    """(code, timeout_ms) of a code_execution call; InvalidRequestError says what to fix."""
    if not isinstance(arguments, dict):
        raise InvalidRequestError("code_execution arguments must be an object with code")
    unknown = sorted(set(arguments) - {"code", "timeout_ms"})
    if unknown:
        raise InvalidRequestError(
            f"code_execution does not take {', '.join(unknown)}; it takes code and timeout_ms"
        )
    code = arguments.get("code")
    if not isinstance(code, str) or not code.strip():
        raise InvalidRequestError("code_execution: code must be a non-empty string (an async function body)")
    if len(code) > _MAX_CODE_CHARS:
        raise InvalidRequestError(f"code_execution: code is longer than {_MAX_CODE_CHARS:,} characters")
    timeout = arguments.get("timeout_ms", config.timeout_ms)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 100 <= timeout <= config.timeout_ms:
        raise InvalidRequestError(
            f"code_execution: timeout_ms must be an integer between 100 and {config.timeout_ms}"
        )
    return code, timeout


def _payload(result: dict[str, Any]) -> Any:
    """What a tool call resolves to inside the sandbox: structured content, the gateway's error object,
    else the text."""
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    # Gateway-made errors carry their object as JSON text only (see serve.results.json_result).
    error = error_body(result)
    if error is not None:
        return error
    texts = [
        c.get("text", "")
        for c in result.get("content", [])
        if isinstance(c, dict) and c.get("type") == "text"
    ]
    return "\n".join(texts)


class CodeSurface:
    """The code surface; ``sandbox`` is a factory so the worker starts on first use."""

    instructions: str | None = CODE_INSTRUCTIONS

    def __init__(self, sandbox: Callable[[], Sandbox] | None, search: SearchSurface) -> None:
        # Without a sandbox factory this process runs no agent code: search and describe only.
        self.can_run = sandbox is not None
        self._search = search
        self._sandbox_factory = sandbox
        self._sandbox: Sandbox | None = None
        self._lock = threading.Lock()

    def sandbox(self) -> Sandbox:
        """The process's sandbox (one pre-started worker), created on first use."""
        with self._lock:
            if self._sandbox is None:
                if self._sandbox_factory is None:
                    raise RuntimeError("this process runs no agent code")
                make_not_dumpable()
                self._sandbox = self._sandbox_factory()
            return self._sandbox

    def listing_json(self, view: TenantView) -> str:
        """code_execution (with this caller's catalog), retrieve_tools, describe_tool; cached per view."""
        listing = view.memo.get(_MEMO)
        if listing is None:
            tools = [retrieve_tool(view.config.tools_limit), DESCRIBE_TOOL]
            if view.config.code_execution.enabled and self.can_run:
                tools.insert(0, code_tool(view, view.config.code_execution))
            listing = view.memo[_MEMO] = join_fragments(compact(t) for t in tools)
        return str(listing)

    async def call(self, ctx: CallContext, name: str, arguments: Any) -> dict[str, Any]:
        """code_execution where this process runs code; retrieve_tools and describe_tool as on /mcp/call."""
        if name == CODE_TOOL_NAME and self.can_run and ctx.view.config.code_execution.enabled:
            observed = current()
            if observed is not None:
                observed.suppress()  # a run's calls are its events (see foldgate.serve.recording)
            try:
                return await self.run(ctx, arguments)
            except FoldgateError as exc:
                return error_result(exc)
        if name in (RETRIEVE_TOOLS_NAME, DESCRIBE_TOOL_NAME):
            return await self._search.call(ctx, name, arguments)
        return unknown_tool(name, "this surface's tools are code_execution, retrieve_tools and describe_tool")

    async def run(self, ctx: CallContext, arguments: Any) -> dict[str, Any]:
        """One code_execution call: a CallToolResult wire dict (the answer, or an error to act on)."""
        # The sandbox host side loads with the first run, not at init.
        from foldgate.code.sandbox import RunLimits

        view = ctx.view
        config = view.config.code_execution
        code, timeout_ms = parse_code_arguments(arguments, config)
        # On Lambda the run ends in time for its answer to reach the agent before the function's deadline.
        left = time_left()
        if left is not None:
            left -= _RUN_SLACK_S
        cut = left is not None and left * 1000 < timeout_ms
        if left is not None and cut:
            timeout_ms = max(1, int(left * 1000))

        async def call_tool(server: str, tool: str, args: Any) -> tuple[bool, Any]:
            # Each call is one activity event, of the run's caller, emitted when it ends.
            with observing_call() as observed:
                if observed is not None:
                    observed.work("tools/call", f"{server}:{tool}")
                    observed.request_bytes = approx_chars(args)
                target = (
                    view.resolve(f"{server}:{tool}")
                    if isinstance(server, str) and isinstance(tool, str)
                    else None
                )
                if target is None:
                    if observed is not None:
                        observed.ended("not_found", "not_found")
                    return False, {"error": f"unknown tool: {server}.{tool}", "error_type": "not_found"}
                try:
                    result = await ctx.caller.call(view, target, args)
                except UpstreamProtocolError as exc:
                    # A run has no client to hand the protocol error to: the code sees it as a failure.
                    failure = {"error": exc.message, "error_type": exc.code, "rpc_code": exc.rpc_code}
                    return False, failure
                if observed is not None:
                    observed.answered(result)
                    observed.response_bytes = result_chars(result)
                return not result.get("isError"), _payload(result)

        limits = RunLimits(
            timeout_ms=timeout_ms,
            max_calls=config.max_calls,
            concurrency=config.concurrency,
            max_result_bytes=config.max_result_bytes,
        )
        run = await self.sandbox().run(code, call_tool, limits)
        body: dict[str, Any] = {
            "value": run.value,
            "console": run.console,
            "calls": [dataclasses.asdict(c) for c in run.calls],
        }
        if run.ok:
            return json_result(body)
        error = dict(run.error or {"type": "internal", "message": "the run failed"})
        if cut and error.get("type") == "timeout":
            error.update(timeout_ms=timeout_ms, hint=RUN_DEADLINE_HINT)
        return json_result(
            {"error": error.pop("message"), "error_type": error.pop("type"), **error, **body}, is_error=True
        )

    async def aclose(self) -> None:
        """Stop the worker, if one was started."""
        if self._sandbox is not None:
            await self._sandbox.aclose()
