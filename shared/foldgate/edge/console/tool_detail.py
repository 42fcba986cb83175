"""The tool pages' view-models: the tenant's tools (the list the fleet links to) and one tool as agents
get it in each mode.

Nothing here renders an entry of its own: the listing entries are the catalog's pre-rendered fragments
(the bytes ``tools/list`` joins), ``describe_tool``'s answer is the describe surface's own function, and
the tier, visibility and deferral decision are the view's (the serving path's). What differs between
this page and an agent's listing can then only be what this page adds around them.

Values are returned as text; the templates escape them (names, descriptions and schemas are the
upstream's, hostile).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from foldgate.edge.console.activity import when
from foldgate.errors import FoldgateError
from foldgate.model.activity import ActivityEvent, AuditEvent
from foldgate.model.catalog import CatalogVersion, IndexedTool
from foldgate.model.enrichment import GENERATED_MARKER
from foldgate.serve.surfaces.describe import tool_definition
from foldgate.serve.views import TenantView
from foldgate.store.activity.base import ActivityQuery, ActivityStore
from foldgate.store.approvals.base import ApprovalStore

__all__ = [
    "RECENT",
    "TIER_SOURCES",
    "TOOLS_PER_PAGE",
    "deferral_reason",
    "example_arguments",
    "find_tool",
    "tool_detail",
    "tools_view",
]

# How many of the tool's recent calls and operator events the page shows.
RECENT: Final = 10
TOOLS_PER_PAGE: Final = 100
TIER_SOURCES: Final[dict[str, str]] = {
    "declared": "its annotations",
    "default": "the MCP spec's default (it declares no readOnlyHint or destructiveHint)",
    "pinned": "the operator's pin in the tenant config",
}
_APPROVAL: Final[dict[str, str]] = {
    "pending": "new: awaits an operator's approval before it can be called",
    "changed": "changed upstream: agents see the last approved version and cannot call it until approved",
}


def _pretty(fragment: str) -> str:
    """A pre-rendered entry, indented for reading (the same JSON value, not a re-rendering of it)."""
    return json.dumps(json.loads(fragment), indent=2, ensure_ascii=False)


def find_tool(catalog: CatalogVersion | None, tool_id: str) -> IndexedTool | None:
    """A tool of the catalog by published name or canonical ``server:tool`` key."""
    return catalog.resolve(tool_id) if catalog is not None else None


def deferral_reason(view: TenantView, tool: IndexedTool) -> str:
    """Why the tenant's policy lists this tool deferred or in full, in a sentence."""
    decision = view.plan.decisions.get(tool.tool.key)
    if decision is None:
        return "not listed"
    config = view.config
    server = config.server(tool.server)
    reasons = {
        "pinned": "the operator pinned defer_loading for this tool",
        "size": f"its schema is over defer_schema_chars ({config.defer_schema_chars} characters)",
        "server": f"its server's tool_loading is {server.tool_loading if server else 'set'}",
        "count": f"its server has more than defer_threshold ({config.defer_threshold}) tools",
        "mode": f"direct_tool_response_mode is {config.direct_tool_response_mode}",
        "budget": f"listing_token_budget ({config.listing_token_budget}): biggest savings deferred first",
        "default": "no rule defers it",
    }
    return reasons.get(decision.reason, decision.reason)


def tools_view(view: TenantView, server: str = "", page: int = 1) -> dict[str, Any]:
    """One page of the tenant's visible tools (of one server, when named) with tier and listing form,
    :data:`TOOLS_PER_PAGE` a page (a fleet of thousands of tools stays one small page)."""
    chosen = [t for t in view.visible if not server or t.server == server]
    pages = max(1, -(-len(chosen) // TOOLS_PER_PAGE))
    page = min(max(page, 1), pages)
    rows = []
    for t in chosen[(page - 1) * TOOLS_PER_PAGE : page * TOOLS_PER_PAGE]:
        tier, source = view.tiers.get(t.tool.key, (t.tier, "declared"))
        rows.append({
            "id": t.published,
            "server": t.server,
            "tier": tier,
            "tier_source": source,
            "listed": "deferred" if view.is_deferred(t) else "full",
            "approval": view.approval(t) or "",
            "description": t.tool.description[:160],
        })  # fmt: skip
    return {"rows": rows, "total": len(chosen), "page": page, "pages": pages}


def _approval(view: TenantView, tool: IndexedTool, store: ApprovalStore | None) -> dict[str, Any]:
    key = tool.tool.key
    tenant = view.catalog.tenant
    held = view.catalog.withheld.get(key) or {}
    awaiting = view.approval(tool)
    out: dict[str, Any] = {
        "state": awaiting or held.get("state") or "approved",
        "meaning": _APPROVAL.get(awaiting or "", ""),
        "content_hash": tool.tool.content_hash,
        "held_hash": held.get("hash") or "",
        "approved_hash": "",
        "rejected_hash": "",
        "store": store is not None,
    }
    if held.get("state") == "rejected":
        out["meaning"] = "the operator rejected the upstream's newest content; agents keep the approved one"
    if store is not None:
        try:
            out["approved_hash"] = store.approved(tenant).get(key, "")
            out["rejected_hash"] = store.rejected(tenant).get(key, "")
        except FoldgateError as exc:
            out["error"] = f"the approvals store cannot be read now: {exc.message}"
    if not out["meaning"] and not out["approved_hash"]:
        out["meaning"] = "listed with no approval on record (a trusted server's tools are approved as listed)"
    return out


def _events(store: ActivityStore | None, query: ActivityQuery) -> tuple[list[dict[str, str]], str | None]:
    """A few of the tenant's events for the page (newest first), or why they cannot be shown."""
    if store is None:
        return [], "the activity log is off in this deployment"
    try:
        page = store.query(query)
    except FoldgateError as exc:
        return [], f"the activity log cannot be read now: {exc.message}"
    rows = []
    for record in page.records:
        if record.tenant != query.tenant:
            continue
        row = {"id": record.event_id, "when": when(record.at), "outcome": record.outcome}
        if isinstance(record, ActivityEvent):
            row.update(
                who=record.principal, surface=record.surface, detail=record.detail,
                ms=f"{record.gateway_ms:.1f}",
            )  # fmt: skip
        elif isinstance(record, AuditEvent):
            actor = " ".join(p for p in (record.actor.via, record.actor.who) if p)
            row.update(action=record.action, who=actor, detail=record.detail)
        rows.append(row)
    return rows, None


def _counterparts(catalog: CatalogVersion, tool: IndexedTool) -> list[dict[str, str]]:
    """The prompts, resources and templates the tool's server publishes beside it."""
    return [
        {
            "kind": item.kind,
            "published": item.published,
            "upstream": item.upstream_id,
            "same_name": "yes" if item.upstream_id == tool.tool.name else "",
        }
        for item in catalog.offerings
        if item.server == tool.server
    ]


def tool_detail(
    view: TenantView,
    tool: IndexedTool,
    *,
    approvals: ApprovalStore | None = None,
    activity: ActivityStore | None = None,
) -> dict[str, Any]:
    """Everything the tool page shows of one visible tool, under the tenant's (operator's) view."""
    tier, source = view.tiers.get(tool.tool.key, (tool.tier, "declared"))
    deferred = view.is_deferred(tool)
    status = view.catalog.servers.get(tool.server)
    tenant = view.catalog.tenant
    calls, calls_note = _events(
        activity, ActivityQuery(tenant, "call", server=tool.server, tool=tool.tool.name, limit=RECENT)
    )
    # Operator events name a tool by its canonical key (approvals, reviews, tries).
    on_tool = ActivityQuery(tenant, "audit", server=tool.tool.key, limit=RECENT)
    history, history_note = _events(activity, on_tool)
    return {
        "id": tool.published,
        "key": tool.tool.key,
        "server": tool.server,
        "name": tool.tool.name,
        "title": tool.tool.title or "",
        "renamed": tool.renamed or "",
        "tier": tier,
        "tier_source": TIER_SOURCES[source],
        "deferred": deferred,
        "reason": deferral_reason(view, tool),
        "signature": tool.tool.name + tool.signature,
        "lossy": tool.lossy,
        "tokens_full": tool.tokens_full,
        "tokens_deferred": tool.tokens_deferred,
        "deferred_entry": _pretty(tool.deferred_fragment),
        "full_entry": _pretty(tool.full_fragment),
        "describe": json.dumps(tool_definition(tool), indent=2, ensure_ascii=False),
        "call_with": f"call_tool_{tier}",
        "server_healthy": status.healthy if status is not None else None,
        "approval": _approval(view, tool, approvals),
        "counterparts": _counterparts(view.catalog, tool),
        "calls": calls,
        "calls_note": calls_note,
        "history": history,
        "history_note": history_note,
        "enrichment": _enrichment(tool),
    }


def _enrichment(tool: IndexedTool) -> dict[str, Any] | None:
    """The generated hint and queries search uses for this tool, marked as generated: shown to the
    operator only (agents never see them), so what a model wrote about a tool can be reviewed."""
    made = tool.enrichment
    if made is None or made.content_hash != tool.tool.content_hash:
        return None
    return {
        "marker": GENERATED_MARKER,
        "source": made.source,
        "hint": made.hint,
        "queries": list(made.queries),
    }


def example_arguments(tool: IndexedTool) -> str:
    """A starting point for Try it: the required parameters with a value of their declared type."""
    schema: Mapping[str, Any] = tool.tool.input_schema if isinstance(tool.tool.input_schema, dict) else {}
    found, wanted = schema.get("properties"), schema.get("required")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    required: list[Any] = wanted if isinstance(wanted, list) else []
    samples = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    out: dict[str, Any] = {}
    for name in required:
        spec = props.get(name) if isinstance(name, str) else None
        kind = spec.get("type") if isinstance(spec, dict) else None
        out[str(name)] = samples.get(kind, "") if isinstance(kind, str) else ""
    return json.dumps(out, indent=2, ensure_ascii=False)
