"""``describe_tool``: full definitions (≤ 5 ids) or readiness checks (≤ 50 ids) of visible tools.

Visibility parity: an id this caller's listing does not show answers exactly like a nonexistent one.
"""

from __future__ import annotations

from typing import Any

from foldgate.errors import InvalidRequestError, ToolChangedError, ToolPendingApprovalError
from foldgate.indexed import IndexedTool
from foldgate.views import MAX_CHECK_IDS, MAX_DEFINE_IDS, TenantView

__all__ = ["APPROVAL_REASONS", "describe_tools", "parse_describe_arguments"]

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


def _definition(tool: IndexedTool) -> dict[str, Any]:
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
            rows.append(_definition(tool))
    return {"tools": rows}
