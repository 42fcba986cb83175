"""The shapes of tool results the gateway makes itself: a JSON body as a CallToolResult wire dict."""

from __future__ import annotations

import json
from typing import Any

from foldgate.errors import FoldgateError, NotFoundError

__all__ = ["error_result", "json_result", "unknown_tool"]


def json_result(body: dict[str, Any], *, is_error: bool = False) -> dict[str, Any]:
    """A CallToolResult (wire dict) carrying a JSON body as text and as structured content."""
    return {
        "content": [{"type": "text", "text": json.dumps(body, ensure_ascii=False)}],
        "structuredContent": body,
        "isError": is_error,
    }


def error_result(error: FoldgateError, **extra: Any) -> dict[str, Any]:
    """A tool-level error result: the message, a stable error_type and any extra fields."""
    return json_result({"error": error.message, "error_type": error.code, **extra}, is_error=True)


def unknown_tool(name: str, hint: str) -> dict[str, Any]:
    """The answer for a name this surface does not serve (identical for invisible and nonexistent)."""
    return error_result(NotFoundError(f"unknown tool: {name}"), hint=hint)
