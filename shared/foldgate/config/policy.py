"""Deferral policy: which tools are listed with their full schema and which are deferred, and why.

Precedence in ``auto`` mode, top-down: an explicit per-tool pin; the schema size rule
(``defer_schema_chars``); the server's ``tool_loading`` (``deferred``/``eager``, or ``auto`` =
deferred when the server has more than ``defer_threshold`` tools); otherwise full.

With ``listing_token_budget`` set, the budget replaces the automatic rules (size and count): pins and
explicit server choices stay, everything else starts full, and the tools whose deferral saves the most
tokens are deferred first until the listing fits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from foldgate.config.tenant import ResponseMode, ServerConfig, TenantConfig
from foldgate.model.tool import Tool

__all__ = ["Decision", "Plan", "Reason", "decide"]

Reason = Literal["pinned", "size", "server", "count", "mode", "budget", "default"]

_LABEL: Final[dict[str, str]] = {
    "pinned": "Pin",
    "size": "Size",
    "server": "Server",
    "count": "Count",
    "mode": "Mode",
    "budget": "Budget",
    "default": "Default",
}

_DEFAULT_SERVER: Final = ServerConfig(name="default", url="http://unused.invalid")

# (full entry tokens, deferred entry tokens) of one tool.
CostFn = Callable[[Tool], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether one tool is deferred, with the rule that decided it."""

    deferred: bool
    reason: Reason

    @property
    def label(self) -> str:
        """Admin-facing label, e.g. ``deferredBySize`` or ``fullByDefault``."""
        return ("deferred" if self.deferred else "full") + "By" + _LABEL[self.reason]


@dataclass(frozen=True, slots=True)
class Plan:
    """Decisions for a catalog, keyed by ``Tool.key``; token totals when a cost function was given."""

    decisions: Mapping[str, Decision]
    listing_tokens: int | None = None
    budget: int | None = None

    @property
    def deferred_count(self) -> int:
        """How many tools are deferred."""
        return sum(d.deferred for d in self.decisions.values())

    @property
    def fits_budget(self) -> bool | None:
        """Whether the listing fits the budget; None when no budget applies."""
        if self.budget is None or self.listing_tokens is None:
            return None
        return self.listing_tokens <= self.budget


def _pin(server: ServerConfig, tool: Tool) -> Decision | None:
    override = server.tools.get(tool.name)
    if override is not None and override.defer_loading is not None:
        return Decision(override.defer_loading, "pinned")
    return None


def _auto(tool: Tool, server: ServerConfig, config: TenantConfig, server_size: int) -> Decision:
    pinned = _pin(server, tool)
    if pinned is not None:
        return pinned
    if config.defer_schema_chars > 0 and tool.schema_chars > config.defer_schema_chars:
        return Decision(True, "size")
    if server.tool_loading == "deferred":
        return Decision(True, "server")
    if server.tool_loading == "eager":
        return Decision(False, "server")
    if server_size > config.defer_threshold:
        return Decision(True, "count")
    return Decision(False, "default")


def _budget_plan(
    tools: Sequence[Tool], servers: Callable[[str], ServerConfig], budget: int, cost: CostFn
) -> Plan:
    decisions: dict[str, Decision] = {}
    costs: dict[str, tuple[int, int]] = {}
    candidates: list[Tool] = []
    total = 0
    for tool in tools:
        server = servers(tool.server)
        full, deferred = costs[tool.key] = cost(tool)
        fixed = _pin(server, tool)
        if fixed is None and server.tool_loading != "auto":
            fixed = Decision(server.tool_loading == "deferred", "server")
        if fixed is None:
            fixed = Decision(False, "budget")
            candidates.append(tool)
        decisions[tool.key] = fixed
        total += deferred if fixed.deferred else full
    # Biggest savers first; ties broken by key so the plan is deterministic.
    candidates.sort(key=lambda t: (-(costs[t.key][0] - costs[t.key][1]), t.key))
    for tool in candidates:
        if total <= budget:
            break
        full, deferred = costs[tool.key]
        if full <= deferred:
            continue
        decisions[tool.key] = Decision(True, "budget")
        total -= full - deferred
    return Plan(decisions, total, budget)


def decide(
    tools: Sequence[Tool],
    config: TenantConfig,
    *,
    mode: ResponseMode | None = None,
    cost: CostFn | None = None,
) -> Plan:
    """Decide, for every tool, full or deferred under ``mode`` (default: the config's response mode).

    ``cost`` returns (full, deferred) token counts of a tool's entries; it is required for the
    budget rule and, when given, the plan reports the listing's total tokens.
    """
    mode = mode or config.direct_tool_response_mode
    by_name = {s.name: s for s in config.servers}

    def server_of(name: str) -> ServerConfig:
        return by_name.get(name, _DEFAULT_SERVER)

    if mode == "auto" and config.listing_token_budget is not None:
        if cost is None:
            raise ValueError("the listing token budget needs a cost function")
        return _budget_plan(tools, server_of, config.listing_token_budget, cost)
    decisions: dict[str, Decision] = {}
    if mode == "auto":
        sizes = Counter(t.server for t in tools)
        for tool in tools:
            decisions[tool.key] = _auto(tool, server_of(tool.server), config, sizes[tool.server])
    else:
        fixed = Decision(mode == "deferred", "mode")
        decisions = {tool.key: fixed for tool in tools}
    total = None
    if cost is not None:
        total = 0
        for tool in tools:
            full, deferred = cost(tool)
            total += deferred if decisions[tool.key].deferred else full
    return Plan(decisions, total, config.listing_token_budget if mode == "auto" else None)
