"""The context-budget page's view-model: listing tokens per surface (full, deferred, auto, the search
surface), the server-side SVG chart, the per-tool table (sorted, filtered and paged from query
parameters, so it works without JavaScript) and the what-if plan for the serialization settings."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pydantic import ValidationError

from foldgate.config.policy import Plan, decide
from foldgate.config.tenant import TenantConfig, format_validation
from foldgate.model.token_count import get_counter
from foldgate.model.tool import Tool
from foldgate.serve.surfaces.call import call_surface_listing
from foldgate.serve.views import TenantView

__all__ = ["PER_PAGE", "SORTS", "budget_view", "chart", "tool_table", "what_if", "what_if_settings"]

PER_PAGE: Final = 50
_MAX_PER_PAGE: Final = 200
# Sort keys the table accepts (anything else falls back to the first): query value -> row field.
SORTS: Final[dict[str, str]] = {
    "tokens_full": "tokens_full",
    "tokens_deferred": "tokens_deferred",
    "saving": "saving",
    "name": "id",
    "server": "server",
    "reason": "reason",
    "tier": "tier",
}
_WHAT_IF_FIELDS: Final = ("direct_tool_response_mode", "defer_threshold", "listing_token_budget")
_BAR_WIDTH: Final = 520
_MAX_WHAT_IFS: Final = 32


def _plan(view: TenantView, config: TenantConfig, mode: Any = None) -> Plan:
    costs: dict[str, tuple[int, int]] | None = view.memo.get("console_costs")
    if costs is None:
        costs = view.memo["console_costs"] = {
            t.tool.key: (t.tokens_full, t.tokens_deferred) for t in view.visible
        }

    def cost(tool: Tool) -> tuple[int, int]:
        return costs[tool.key]

    return decide([t.tool for t in view.visible], config, mode=mode, cost=cost)


def _search_surface_tokens(config: TenantConfig) -> int:
    # Exact where the tokenizer is installed (local, benches), the estimate elsewhere (the layer).
    return get_counter("cl100k", exact=False)(call_surface_listing(config.tools_limit))


def totals(view: TenantView, config: TenantConfig | None = None) -> dict[str, int]:
    """Listing tokens of each surface for this view (``auto`` under ``config``, default the view's)."""
    config = config or view.config
    full = sum(t.tokens_full for t in view.visible)
    deferred = sum(t.tokens_deferred for t in view.visible)
    auto = _plan(view, config)
    return {
        "full": full,
        "deferred": deferred,
        "auto": auto.listing_tokens or 0,
        "auto_deferred_tools": auto.deferred_count,
        "search": _search_surface_tokens(config),
    }


def chart(numbers: Mapping[str, int]) -> list[dict[str, Any]]:
    """Bars for the inline SVG chart (geometry computed here; the template only draws)."""
    labels = (
        ("full", "Full listing"),
        ("deferred", "Deferred listing"),
        ("auto", "Auto (current config)"),
        ("search", "Search surface"),
    )
    top = max([numbers[k] for k, _ in labels] + [1])
    return [
        {
            "key": key,
            "label": label,
            "tokens": numbers[key],
            "width": max(2, round(_BAR_WIDTH * numbers[key] / top)),
            "y": 10 + 34 * i,
        }
        for i, (key, label) in enumerate(labels)
    ]


def _rows(view: TenantView) -> list[dict[str, Any]]:
    rows = []
    for t in view.visible:
        decision = view.plan.decisions.get(t.tool.key)
        tier, source = view.tiers.get(t.tool.key, (t.tier, "default"))
        rows.append({
            "id": t.published,
            "server": t.server,
            "tokens_full": t.tokens_full,
            "tokens_deferred": t.tokens_deferred,
            "saving": t.tokens_full - t.tokens_deferred,
            "lossy": t.lossy,
            "deferred": bool(decision and decision.deferred),
            "reason": decision.label if decision else "",
            "tier": tier,
            "tier_source": source,
        })  # fmt: skip
    return rows


def _int(value: str | None, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if value else default
    except ValueError:
        return default
    return min(high, max(low, number))


def tool_table(view: TenantView, params: Mapping[str, str]) -> dict[str, Any]:
    """One page of the per-tool table for these query parameters (sort, dir, q, server, decision,
    page, per_page); unknown or malformed values fall back to the defaults."""
    rows = view.memo.get("console_rows")
    if rows is None:
        rows = view.memo["console_rows"] = _rows(view)
    query = (params.get("q") or "").strip().lower()[:200]
    server = params.get("server") or ""
    decision = params.get("decision") or ""
    chosen = [
        r
        for r in rows
        if (not query or query in r["id"].lower())
        and (not server or r["server"] == server)
        and (decision not in ("deferred", "full") or r["deferred"] == (decision == "deferred"))
    ]
    sort = params.get("sort") or ""
    if sort not in SORTS:
        sort = "tokens_full"
    descending = params.get("dir", "desc") != "asc"
    field = SORTS[sort]
    chosen.sort(key=lambda r: (r[field], r["id"]), reverse=descending)
    per_page = _int(params.get("per_page"), PER_PAGE, 10, _MAX_PER_PAGE)
    pages = max(1, -(-len(chosen) // per_page))
    page = _int(params.get("page"), 1, 1, pages)
    start = (page - 1) * per_page
    return {
        "rows": chosen[start : start + per_page],
        "matched": len(chosen),
        "page": page,
        "pages": pages,
        "per_page": per_page,
        "sort": sort,
        "dir": "desc" if descending else "asc",
        "q": query,
        "server": server,
        "decision": decision,
        "servers": sorted({r["server"] for r in rows}),
    }


def what_if_settings(config: TenantConfig, params: Mapping[str, str]) -> tuple[dict[str, Any], str | None]:
    """The submitted serialization settings (``wi_*`` fields; blank ones keep ``config``'s, a blank
    budget means none), validated by the tenant config model itself: (typed settings, None), or (the
    raw values, the validation error)."""
    changes: dict[str, Any] = {
        "direct_tool_response_mode": params.get("wi_direct_tool_response_mode")
        or config.direct_tool_response_mode,
        "defer_threshold": params.get("wi_defer_threshold") or config.defer_threshold,
        # An empty budget field means no budget.
        "listing_token_budget": params.get("wi_listing_token_budget") or None,
    }
    try:
        # The tenant config model validates the three values (on an otherwise empty config: revalidating
        # a thousand servers per keystroke would cost more than the plan itself).
        checked = TenantConfig.model_validate(changes)
    except ValidationError as exc:
        return changes, format_validation(exc)
    return {name: getattr(checked, name) for name in _WHAT_IF_FIELDS}, None


def what_if(view: TenantView, params: Mapping[str, str]) -> dict[str, Any] | None:
    """Totals under the submitted serialization settings; None when none was submitted. Also the JSON
    to merge into the tenant's config document."""
    if not any(f"wi_{name}" in params for name in _WHAT_IF_FIELDS):
        return None
    settings, error = what_if_settings(view.config, params)
    if error is not None:
        return {"error": error, "changes": settings}
    memo_key = "console_what_if:" + json.dumps(settings, sort_keys=True)
    cached = view.memo.get(memo_key)
    if cached is None:
        candidate = view.config.model_copy(update=settings)
        cached = totals(view, candidate)
        # Bounded: a view lives until the catalog or config changes, and anyone signed in can vary these.
        if sum(k.startswith("console_what_if:") for k in view.memo) < _MAX_WHAT_IFS:
            view.memo[memo_key] = cached
    return {"error": None, "changes": settings, "totals": cached, "json": json.dumps(settings, indent=2)}


def budget_view(view: TenantView, params: Mapping[str, str]) -> dict[str, Any]:
    """Everything the budget page shows for one tenant."""
    numbers = view.memo.get("console_totals")
    if numbers is None:
        numbers = view.memo["console_totals"] = totals(view)
    return {
        "totals": numbers,
        "bars": chart(numbers),
        "table": tool_table(view, params),
        "what_if": what_if(view, params),
        "config": {name: getattr(view.config, name) for name in _WHAT_IF_FIELDS},
        "routing_mode": view.config.routing_mode,
    }
