"""A tenant's view of its catalog: which tools are visible and which of them are listed deferred.

A view is derived from (catalog version, tenant config) once and cached, so serialization settings
apply on the next request after a config change while requests only concatenate pre-rendered text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from foldgate.config.policy import Plan, decide
from foldgate.config.tenant import ServerConfig, TenantConfig
from foldgate.model.catalog import CatalogVersion, IndexedTool, Tier, TierSource, declared_tier
from foldgate.model.listing import instructions_text
from foldgate.model.principal import Principal
from foldgate.model.tool import Tool

__all__ = ["TenantView", "build_view", "effective_tier"]


@dataclass(frozen=True)
class TenantView:
    """What one tenant's agents see of one catalog version under one config."""

    catalog: CatalogVersion
    config: TenantConfig
    visible: tuple[IndexedTool, ...]
    plan: Plan
    principal: Principal
    # Each visible tool's effective tier and where it came from, by canonical key.
    tiers: dict[str, tuple[Tier, TierSource]] = field(default_factory=dict, compare=False, repr=False)
    # Per-view memo for what surfaces derive from a view (their listings): dropped with the view.
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def tier(self, tool: IndexedTool) -> Tier:
        """The tool's effective tier for this tenant (a pin in the config wins over its annotations)."""
        found = self.tiers.get(tool.tool.key)
        return found[0] if found is not None else tool.tier

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
    def instructions(self) -> str:
        """``initialize`` instructions for this tenant."""
        return instructions_text(self.config.instructions)


def effective_tier(tool: IndexedTool, servers: dict[str, ServerConfig]) -> tuple[Tier, TierSource]:
    """The tool's tier under this config: the operator's pin, else declared or the spec's default."""
    server = servers.get(tool.server)
    override = server.tools.get(tool.tool.name) if server is not None else None
    if override is not None and override.tier is not None:
        return override.tier, "pinned"
    return declared_tier(tool.tool.annotations)


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
    tiers = {t.tool.key: effective_tier(t, servers) for t in catalog.tools if _is_visible(t, servers)}
    visible = tuple(
        t for t in catalog.tools if t.tool.key in tiers and principal.sees(t, tiers[t.tool.key][0])
    )
    costs = {t.tool.key: (t.tokens_full, t.tokens_deferred) for t in visible}

    def cost(tool: Tool) -> tuple[int, int]:
        return costs[tool.key]

    plan = decide([t.tool for t in visible], config, cost=cost)
    return TenantView(
        catalog, config, visible, plan, principal, {t.tool.key: tiers[t.tool.key] for t in visible}
    )
