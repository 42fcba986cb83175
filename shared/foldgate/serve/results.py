"""The shapes of tool results the gateway makes itself: a JSON body as a CallToolResult wire dict."""

from __future__ import annotations

import json
from typing import Any

from foldgate.errors import FoldgateError, NotFoundError

__all__ = ["error_body", "error_result", "json_result", "unknown_tool"]


def json_result(body: dict[str, Any], *, is_error: bool = False) -> dict[str, Any]:
    """A CallToolResult (wire dict) carrying a JSON body as text, and as structured content unless it
    is an error.

    An error never carries ``structuredContent``: clients (the TypeScript SDK inside most agent apps)
    validate it against the called tool's ``outputSchema`` even on errors, and an error object never
    matches, so the agent got ``-32602`` instead of the error, its schema and its hint.
    """
    result: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(body, ensure_ascii=False)}]}
    if not is_error:
        result["structuredContent"] = body
    result["isError"] = is_error
    return result


def error_body(result: dict[str, Any]) -> dict[str, Any] | None:
    """The error object of a gateway-made error result (parsed back from its text), else None."""
    if not result.get("isError") or result.get("structuredContent") is not None:
        return None
    content = result.get("content")
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return None
    text = content[0].get("text")
    if not isinstance(text, str) or not text.startswith("{"):
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    return body if isinstance(body, dict) and "error" in body and "error_type" in body else None


def error_result(error: FoldgateError, **extra: Any) -> dict[str, Any]:
    """A tool-level error result: the message, a stable error_type and any extra fields."""
    return json_result({"error": error.message, "error_type": error.code, **extra}, is_error=True)


def unknown_tool(name: str, hint: str) -> dict[str, Any]:
    """The answer for a name this surface does not serve (identical for invisible and nonexistent)."""
    return error_result(NotFoundError(f"unknown tool: {name}"), hint=hint)
