"""The search surface (``/mcp/call``): a constant handful of meta-tools instead of the whole fleet.

The agent searches with ``retrieve_tools``, then calls through the variant that matches the tool's
permission tier (``call_tool_read`` / ``call_tool_write`` / ``call_tool_destructive``), so a client can
gate destructive calls on the tool name alone. ``describe_tool`` and ``read_cache`` complete it.
Only tools visible to the caller are ever found, described or called.
"""

from __future__ import annotations

from typing import Any, Final

from foldgate.errors import InvalidRequestError
from foldgate.indexed import IndexedTool, Tier
from foldgate.jsonutil import compact
from foldgate.listing import join_fragments
from foldgate.views import DESCRIBE_TOOL

__all__ = [
    "CALL_INSTRUCTIONS",
    "CALL_VARIANTS",
    "READ_CACHE_NAME",
    "RETRIEVE_TOOLS_NAME",
    "VARIANT_OF",
    "SearchRequest",
    "call_surface_listing",
    "hit_entry",
    "parse_call_arguments",
    "parse_read_cache_arguments",
    "parse_retrieve_arguments",
    "retrieve_tool",
]

RETRIEVE_TOOLS_NAME: Final = "retrieve_tools"
READ_CACHE_NAME: Final = "read_cache"
MAX_LIMIT: Final = 100
CALL_VARIANTS: Final[dict[str, Tier]] = {
    "call_tool_read": "read",
    "call_tool_write": "write",
    "call_tool_destructive": "destructive",
}
VARIANT_OF: Final[dict[Tier, str]] = {tier: name for name, tier in CALL_VARIANTS.items()}
_SUMMARY_CHARS: Final = 240

_FILTERS: Final = ("read_only_only", "exclude_destructive", "exclude_open_world")

CALL_INSTRUCTIONS: Final = (
    "This gateway fronts many MCP tools behind a search. Find tools with retrieve_tools(query=...), "
    "then call one with the call_tool_* variant its `call_with` names: call_tool_read(name=..., "
    "arguments={...}) and likewise call_tool_write / call_tool_destructive. describe_tool(tool_ids=[...]) "
    "returns a tool's full input schema. A call with invalid arguments is answered with the real schema: "
    "fix the arguments and retry. A cut result says how to read the rest with read_cache."
)


def retrieve_tool(default_limit: int) -> dict[str, Any]:
    """The retrieve_tools entry (its ``limit`` default is the tenant's ``tools_limit``)."""
    return {
        "name": RETRIEVE_TOOLS_NAME,
        "description": (
            "Search this gateway's tools by what you want to do. Returns the best matches with a compact "
            "call signature (no ~ means callable from it alone) and `call_with`: the call_tool_* variant "
            'to use. A query naming several needs ("find X, then email Y") is searched need by need; '
            "`intents` then lists each need with the returned tools that serve it. Search again with "
            "other words if nothing fits."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What you want to do."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": default_limit,
                    "description": "How many tools to return.",
                },
                "detail": {
                    "type": "string",
                    "enum": ["compact", "full"],
                    "default": "compact",
                    "description": "full adds each tool's input schema and whole description.",
                },
                "read_only_only": {
                    "type": "boolean",
                    "default": False,
                    "description": "Only read-only tools.",
                },
                "exclude_destructive": {"type": "boolean", "default": False},
                "exclude_open_world": {
                    "type": "boolean",
                    "default": False,
                    "description": "Skip tools that reach outside systems (openWorldHint not false).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }


def _call_tool(name: str, tier: Tier) -> dict[str, Any]:
    what = {
        "read": "a read-only tool (call_with: call_tool_read)",
        "write": "a tool that changes state but is not destructive (call_with: call_tool_write)",
        "destructive": "a destructive tool (call_with: call_tool_destructive)",
    }[tier]
    annotations: dict[str, Any] = {"readOnlyHint": tier == "read", "openWorldHint": True}
    if tier != "read":
        annotations["destructiveHint"] = tier == "destructive"
    return {
        "name": name,
        "description": f"Call {what} found by retrieve_tools. Arguments are validated before the call.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name as retrieve_tools returned it."},
                "arguments": {"type": "object", "description": "The tool's arguments."},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "annotations": annotations,
    }


READ_CACHE_TOOL: Final[dict[str, Any]] = {
    "name": READ_CACHE_NAME,
    "description": (
        "Read more of a tool result that was too long and was cut: pass the key from the truncation "
        "note and the offset to continue from."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1},
            "offset": {"type": "integer", "minimum": 0, "default": 0},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": "Characters to return (at most the gateway's response limit).",
            },
        },
        "required": ["key"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}


def call_surface_listing(default_limit: int) -> str:
    """The surface's ``tools`` array as JSON text (constant per ``tools_limit``)."""
    tools = [retrieve_tool(default_limit)]
    tools.extend(_call_tool(name, tier) for name, tier in CALL_VARIANTS.items())
    tools.extend([DESCRIBE_TOOL, READ_CACHE_TOOL])
    return join_fragments(compact(t) for t in tools)


class SearchRequest:
    """Validated retrieve_tools arguments."""

    def __init__(self, query: str, limit: int, full: bool, filters: dict[str, bool]) -> None:
        self.query = query
        self.limit = limit
        self.full = full
        self.filters = filters

    def admits(self, tool: IndexedTool) -> bool:
        """Whether the annotation filters let this tool through (MCP's defaults for absent hints)."""
        ann = tool.tool.annotations or {}
        if self.filters["read_only_only"] and ann.get("readOnlyHint") is not True:
            return False
        if self.filters["exclude_destructive"] and tool.tier == "destructive":
            return False
        return not (self.filters["exclude_open_world"] and ann.get("openWorldHint") is not False)


def _object(arguments: Any, tool: str, allowed: set[str]) -> dict[str, Any]:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidRequestError(f"{tool} arguments must be an object")
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise InvalidRequestError(
            f"{tool} does not take {', '.join(unknown)}; it takes {', '.join(sorted(allowed))}"
        )
    return arguments


def _int(value: Any, name: str, tool: str, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidRequestError(f"{tool}: {name} must be an integer {bound}")
    return value


def parse_retrieve_arguments(arguments: Any, default_limit: int) -> SearchRequest:
    """Validate retrieve_tools arguments; InvalidRequestError says what to fix."""
    args = _object(arguments, RETRIEVE_TOOLS_NAME, {"query", "limit", "detail", *_FILTERS})
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidRequestError("retrieve_tools: query must be a non-empty string")
    limit = _int(args.get("limit", default_limit), "limit", RETRIEVE_TOOLS_NAME, 1, MAX_LIMIT)
    detail = args.get("detail", "compact")
    if detail not in ("compact", "full"):
        raise InvalidRequestError("retrieve_tools: detail must be 'compact' or 'full'")
    filters = {}
    for name in _FILTERS:
        value = args.get(name, False)
        if not isinstance(value, bool):
            raise InvalidRequestError(f"retrieve_tools: {name} must be true or false")
        filters[name] = value
    return SearchRequest(query.strip()[:2000], limit, detail == "full", filters)


def parse_call_arguments(variant: str, arguments: Any) -> tuple[str, Any]:
    """(tool name, its arguments) of a call_tool_* call."""
    args = _object(arguments, variant, {"name", "arguments"})
    name = args.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequestError(f"{variant}: name must be the tool's name from retrieve_tools")
    return name, args.get("arguments")


def parse_read_cache_arguments(arguments: Any, default_limit: int) -> tuple[str, int, int]:
    """(key, offset, limit) of a read_cache call."""
    args = _object(arguments, READ_CACHE_NAME, {"key", "offset", "limit"})
    key = args.get("key")
    if not isinstance(key, str) or not key:
        raise InvalidRequestError("read_cache: key must be the key from the truncation note")
    offset = _int(args.get("offset", 0), "offset", READ_CACHE_NAME, 0)
    limit = _int(args.get("limit", default_limit), "limit", READ_CACHE_NAME, 1)
    return key, offset, min(limit, default_limit)  # a page is never longer than the response limit


def _summary(text: str) -> str:
    first = text.strip().split("\n", 1)[0]
    return first if len(first) <= _SUMMARY_CHARS else first[: _SUMMARY_CHARS - 1].rstrip() + "…"


def hit_entry(tool: IndexedTool, score: float, *, full: bool) -> dict[str, Any]:
    """One retrieve_tools hit: enough to call a flat tool without describing it."""
    t = tool.tool
    entry: dict[str, Any] = {
        "name": tool.published,
        "server": t.server,
        "score": round(score, 3),
        "call_with": VARIANT_OF[tool.tier],
        "description": t.description if full else _summary(t.description),
        "signature": t.name + tool.signature,
    }
    if t.annotations:
        entry["annotations"] = t.annotations
    if full:
        entry["input_schema"] = t.input_schema
    return entry
