"""``describe_tool``, on every surface: its definition, and full definitions (≤ 5 ids) or readiness
checks (≤ 50 ids) of visible tools.

Visibility parity: an id this caller's listing does not show answers exactly like a nonexistent one.
"""

from __future__ import annotations

from typing import Any, Final

from foldgate.errors import InvalidRequestError, ToolChangedError, ToolPendingApprovalError
from foldgate.model.catalog import IndexedTool
from foldgate.model.jsonutil import compact
from foldgate.serve.results import error_result, json_result
from foldgate.serve.views import TenantView

__all__ = [
    "APPROVAL_REASONS",
    "DESCRIBE_TOOL",
    "DESCRIBE_TOOL_FRAGMENT",
    "DESCRIBE_TOOL_NAME",
    "describe",
    "describe_tools",
    "parse_describe_arguments",
    "tool_definition",
]

DESCRIBE_TOOL_NAME: Final = "describe_tool"
MAX_DEFINE_IDS: Final = 5
MAX_CHECK_IDS: Final = 50

DESCRIBE_TOOL: Final[dict[str, Any]] = {
    "name": DESCRIBE_TOOL_NAME,
    "description": (
        "Full definitions of listed tools (input schema, whole description, annotations, output schema): "
        f"up to {MAX_DEFINE_IDS} ids (server__tool or server:tool). With check: true, up to "
        f"{MAX_CHECK_IDS} ids: whether each is ready to call, or why not."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "tool_ids": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_CHECK_IDS,
            },
            "check": {"type": "boolean", "default": False},
        },
        "required": ["tool_ids"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}
DESCRIBE_TOOL_FRAGMENT: Final = compact(DESCRIBE_TOOL)


# A tool's approval state (CatalogVersion.approvals) -> the reason check mode and calls report.
APPROVAL_REASONS = {"pending": ToolPendingApprovalError.code, "changed": ToolChangedError.code}


def parse_describe_arguments(arguments: Any) -> tuple[list[str], bool]:
    """Validate describe_tool arguments; raises InvalidRequestError with a message an agent can act on."""
    if not isinstance(arguments, dict):
        raise InvalidRequestError("describe_tool arguments must be an object with tool_ids")
    unknown = sorted(set(arguments) - {"tool_ids", "check"})
    if unknown:
        raise InvalidRequestError(
            f"describe_tool does not take {', '.join(unknown)}; pass tool_ids and check"
        )
    ids = arguments.get("tool_ids")
    check = arguments.get("check", False)
    if not isinstance(check, bool):
        raise InvalidRequestError("describe_tool: check must be true or false")
    if not isinstance(ids, list) or not ids:
        raise InvalidRequestError("describe_tool: tool_ids must be a non-empty array of tool ids")
    if not all(isinstance(i, str) and i for i in ids):
        raise InvalidRequestError("describe_tool: every tool id must be a non-empty string")
    limit = MAX_CHECK_IDS if check else MAX_DEFINE_IDS
    if len(ids) > limit:
        mode = "check mode" if check else "definition mode (use check=true for up to 50)"
        raise InvalidRequestError(f"describe_tool: at most {limit} tool_ids in {mode}; got {len(ids)}")
    return list(dict.fromkeys(ids)), check


def tool_definition(tool: IndexedTool) -> dict[str, Any]:
    """One tool's full definition as describe_tool returns it."""
    t = tool.tool
    out: dict[str, Any] = {
        "id": tool.published,
        "server": t.server,
        "name": t.name,
        "description": t.description,
        "input_schema": t.input_schema,
        "signature": t.name + tool.signature,
    }
    if t.title is not None:
        out["title"] = t.title
    if t.annotations is not None:
        out["annotations"] = t.annotations
    if t.output_schema is not None:
        out["output_schema"] = t.output_schema
    return out


def _readiness(view: TenantView, tool: IndexedTool) -> dict[str, Any]:
    awaiting = view.approval(tool)
    if awaiting is not None:
        return {"id": tool.published, "status": "unavailable", "reason": APPROVAL_REASONS[awaiting]}
    status = view.catalog.servers.get(tool.server)
    if status is not None and not status.healthy:
        return {"id": tool.published, "status": "unavailable", "reason": "server_unhealthy"}
    return {"id": tool.published, "status": "ready"}


def describe_tools(view: TenantView, tool_ids: list[str], check: bool) -> dict[str, Any]:
    """The describe_tool result body for already-validated arguments."""
    rows: list[dict[str, Any]] = []
    for tool_id in tool_ids:
        tool = view.resolve(tool_id)
        if tool is None:
            rows.append({"id": tool_id, "status": "unavailable", "reason": "not_found"} if check
                        else {"id": tool_id, "error": "not_found"})  # fmt: skip
        elif check:
            rows.append(_readiness(view, tool))
        else:
            rows.append(tool_definition(tool))
    return {"tools": rows}


def describe(view: TenantView, arguments: Any) -> dict[str, Any]:
    """A describe_tool call on any surface: the result, or an error result saying what to fix."""
    try:
        ids, check = parse_describe_arguments(arguments if arguments is not None else {})
    except InvalidRequestError as exc:
        return error_result(exc)
    return json_result(describe_tools(view, ids, check))
