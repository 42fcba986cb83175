"""A tenant's view of its catalog: which tools are visible, deferred or full, and the ready listing.

A view is derived from (catalog version, tenant config) once and cached, so serialization settings
apply on the next request after a config change while requests only concatenate pre-rendered text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

from foldgate.catalog import Tool
from foldgate.config import ServerConfig, TenantConfig
from foldgate.indexed import CatalogVersion, IndexedTool
from foldgate.jsonutil import compact
from foldgate.listing import instructions_text, join_fragments
from foldgate.policy import Plan, decide
from foldgate.principal import Principal

__all__ = ["DESCRIBE_TOOL", "DESCRIBE_TOOL_NAME", "TenantView", "build_view"]

DESCRIBE_TOOL_NAME: Final = "describe_tool"
MAX_DEFINE_IDS: Final = 5
MAX_CHECK_IDS: Final = 50

DESCRIBE_TOOL: Final[dict[str, Any]] = {
    "name": DESCRIBE_TOOL_NAME,
    "description": (
        "Full definition of tools listed by this gateway: input schema, untruncated description, "
        f"annotations and output schema. Pass up to {MAX_DEFINE_IDS} ids (server__tool or server:tool). "
        f'With "check": true, pass up to {MAX_CHECK_IDS} ids to learn whether each is ready to call.'
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "tool_ids": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_CHECK_IDS,
                "description": "Tool ids as listed (server__tool) or canonical (server:tool).",
            },
            "check": {
                "type": "boolean",
                "default": False,
                "description": "Only report readiness (ready / unavailable with a reason).",
            },
        },
        "required": ["tool_ids"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}
_DESCRIBE_FRAGMENT: Final = compact(DESCRIBE_TOOL)


@dataclass(frozen=True)
class TenantView:
    """What one tenant's agents see of one catalog version under one config."""

    catalog: CatalogVersion
    config: TenantConfig
    visible: tuple[IndexedTool, ...]
    plan: Plan
    principal: Principal

    def approval(self, tool: IndexedTool) -> str | None:
        """``pending`` or ``changed`` while a tool awaits an operator's approval, else None."""
        return self.catalog.approvals.get(tool.tool.key)

    @cached_property
    def by_id(self) -> dict[str, IndexedTool]:
        """Visible tools by published name and by canonical ``server:tool``."""
        out = {t.published: t for t in self.visible}
        out.update({t.tool.key: t for t in self.visible})
        return out

    def resolve(self, tool_id: str) -> IndexedTool | None:
        """A visible tool by either id form; None for unknown and invisible alike."""
        return self.by_id.get(tool_id)

    def is_deferred(self, tool: IndexedTool) -> bool:
        """Whether the listing shows this tool deferred."""
        decision = self.plan.decisions.get(tool.tool.key)
        return bool(decision and decision.deferred)

    @cached_property
    def listing_json(self) -> str:
        """The direct surface's ``tools`` array as JSON text (built-ins first, then every visible tool)."""
        parts = [_DESCRIBE_FRAGMENT]
        parts.extend(t.deferred_fragment if self.is_deferred(t) else t.full_fragment for t in self.visible)
        return join_fragments(parts)

    @cached_property
    def instructions(self) -> str:
        """``initialize`` instructions for this tenant."""
        return instructions_text(self.config.instructions)


def _is_visible(tool: IndexedTool, servers: dict[str, ServerConfig]) -> bool:
    server = servers.get(tool.server)
    if server is None or not server.enabled or server.quarantined:
        return False
    override = server.tools.get(tool.tool.name)
    return override is None or override.enabled


def build_view(
    catalog: CatalogVersion, config: TenantConfig, principal: Principal | None = None
) -> TenantView:
    """Derive the view: visibility from the config and the caller's scope, then the deferral plan."""
    principal = principal or Principal(catalog.tenant)
    servers = {s.name: s for s in config.servers}
    visible = tuple(t for t in catalog.tools if _is_visible(t, servers) and principal.sees(t))
    costs = {t.tool.key: (t.tokens_full, t.tokens_deferred) for t in visible}

    def cost(tool: Tool) -> tuple[int, int]:
        return costs[tool.key]

    plan = decide([t.tool for t in visible], config, cost=cost)
    return TenantView(catalog, config, visible, plan, principal)
