"""The code-execution surface (``/mcp/code``): one JavaScript run orchestrates many tool calls.

The agent sends an async function body that calls ``call_tool(server, tool, args)``, transforms the
results and returns only the answer. The tool's description carries a compact catalog of the caller's
visible tools (size-capped; ``retrieve_tools`` and ``describe_tool`` find the rest). Every call from the
sandbox goes through the same path as a direct call: visibility and tier, approval, validation with the
self-healing error, upstream dispatch.
"""

from __future__ import annotations

from typing import Any, Final

from foldgate.config import CodeExecutionConfig
from foldgate.errors import InvalidRequestError
from foldgate.views import TenantView

__all__ = ["CODE_INSTRUCTIONS", "CODE_TOOL_NAME", "code_tool", "parse_code_arguments"]


CODE_TOOL_NAME: Final = "code_execution"
_MAX_CODE_CHARS: Final = 100_000
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
