"""A ``per_user`` server's declared tool list: what the indexer publishes before any shared grant.

A ``per_user`` upstream is listed with the tenant's shared connection; a tenant whose operator never
connects one (each user connects their own account) would otherwise have no tools to show. The
operator declares them in the server's ``auth:`` block instead::

    auth:
      kind: per_user
      tools:
        - name: search_issues
          description: Search the issues of a repository.
          inputSchema: {type: object, properties: {query: {type: string}}, required: [query]}

The config is hostile input like any upstream listing: names follow the MCP tool-name rule, texts and
schemas are bounded here, and the indexer still puts every entry through the same MCP-types check and
poisoning scan as a fetched listing. A real listing replaces the declaration as soon as a shared
grant exists.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["MAX_DECLARED_TOOLS", "MAX_SCHEMA_BYTES", "DeclaredTool", "check_declared"]

# The MCP tool-name rule (2025-11-25: 1-128 of letters, digits, '_', '-', '.').
_TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
MAX_DECLARED_TOOLS: Final = 200
MAX_DESCRIPTION: Final = 8_000
MAX_TITLE: Final = 200
# The serialized inputSchema: generous for real tools, small enough that a config cannot bloat a catalog.
MAX_SCHEMA_BYTES: Final = 32_768
_MAX_DEPTH: Final = 16


def _depth(value: Any, level: int = 0) -> int:
    if level > _MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level)
    return level


class DeclaredTool(BaseModel):
    """One declared tool, in the MCP wire shape (``inputSchema`` camel-cased as in a listing)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(description="The upstream's tool name (what a call sends).")
    title: str | None = Field(default=None, max_length=MAX_TITLE)
    description: str = Field(default="", max_length=MAX_DESCRIPTION)
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object"}, alias="inputSchema", description="A JSON Schema object."
    )
    annotations: dict[str, bool | str] | None = Field(
        default=None, description="MCP tool annotations (readOnlyHint, destructiveHint, ...)."
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _TOOL_NAME.match(value):
            raise ValueError(f"tool name {value[:40]!r} must be 1-128 letters, digits, '_', '-' or '.'")
        return value

    @field_validator("description", "title")
    @classmethod
    def _check_text(cls, value: str | None) -> str | None:
        # Control characters (other than newline and tab) have no business in a description.
        if value is not None and any(ord(c) < 32 and c not in "\n\t" for c in value):
            raise ValueError("must not contain control characters")
        return value

    @field_validator("input_schema")
    @classmethod
    def _check_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") != "object":
            raise ValueError("inputSchema must be an object schema ({type: object, ...})")
        if _depth(value) > _MAX_DEPTH:
            raise ValueError(f"inputSchema nests deeper than {_MAX_DEPTH} levels")
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
        if size > MAX_SCHEMA_BYTES:
            raise ValueError(f"inputSchema is {size} bytes serialized; at most {MAX_SCHEMA_BYTES}")
        return value

    @field_validator("annotations")
    @classmethod
    def _check_annotations(cls, value: dict[str, bool | str] | None) -> dict[str, bool | str] | None:
        allowed = {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        if value is not None and not set(value) <= allowed:
            raise ValueError(f"annotations may only name {sorted(allowed)}")
        return value

    def wire(self) -> dict[str, Any]:
        """The entry as an upstream would list it (a ``tools/list`` tool object)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def check_declared(tools: list[DeclaredTool] | None) -> list[DeclaredTool] | None:
    """The declared list, refused when it names a tool twice (each name is one upstream tool)."""
    if tools is None:
        return None
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise ValueError(f"declared tool {tool.name!r} is listed twice")
        seen.add(tool.name)
    return tools
