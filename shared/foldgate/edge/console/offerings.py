"""The Prompts and Resources pages' view-models: what the tenant's servers publish besides tools, from
which server, whether agents are served it now, and for prompts their approval state.

"Served" is the serving path's own answer (:func:`foldgate.serve.offerings.offered` over the operator's
unscoped view): a disabled or quarantined server's entries are listed here but agents get none of them.
Prompts go through approvals (:mod:`foldgate.index.offerings`): a new prompt is held until approved and
never published meanwhile; a changed one keeps its approved entry listed but cannot be fetched; a
rejected one stays as it was approved. Resources and templates are published as listed.

Values are returned as text; the templates escape them (the entries are the upstream's, hostile).
"""

from __future__ import annotations

from typing import Any, Final

from foldgate.model.offerings import IndexedItem
from foldgate.serve.offerings import offered
from foldgate.serve.views import TenantView

__all__ = ["PROMPT_STATES", "prompts_view", "resources_view"]

PROMPT_STATES: Final[dict[str, str]] = {
    "approved": "approved: agents can list and fetch it",
    "pending": "new: held until an operator approves it (not listed)",
    "flagged": "flagged by the scan: held until an operator approves it (not listed)",
    "changed": "changed upstream: the approved version is listed, fetching it is refused until approved",
    "rejected": "rejected: the operator refused the upstream's newest content",
}
# A description is cut on these pages (the full entry is one click away on the upstream).
_MAX_DESCRIPTION: Final = 300


def _text(value: Any) -> str:
    return value[:_MAX_DESCRIPTION] if isinstance(value, str) else ""


def _arguments(entry: dict[str, Any]) -> str:
    listed = entry.get("arguments")
    if not isinstance(listed, list):
        return ""
    names = [
        f"{a.get('name')}{'*' if a.get('required') is True else ''}"
        for a in listed
        if isinstance(a, dict) and isinstance(a.get("name"), str)
    ]
    return ", ".join(names)


def prompts_view(view: TenantView) -> list[dict[str, Any]]:
    """Every prompt the catalog publishes or holds, by server then name, with its approval state."""
    catalog = view.catalog
    served = offered(view).prompts
    rows: dict[str, dict[str, Any]] = {}
    for item in catalog.offerings:
        if item.kind != "prompt":
            continue
        held = catalog.withheld.get(item.key) or {}
        state = str(held.get("state") or "approved")
        rows[item.key] = {
            "published": item.published,
            "upstream": item.upstream_id,
            "server": item.server,
            "description": _text(item.entry.get("description")),
            "arguments": _arguments(item.entry),
            "state": state,
            "meaning": PROMPT_STATES.get(state, state),
            "served": item.published in served,
        }
    for key, held in catalog.withheld.items():
        if held.get("kind") != "prompt" or key in rows:
            continue
        listed = held.get("prompt")
        entry: dict[str, Any] = listed if isinstance(listed, dict) else {}
        state = str(held.get("state") or "pending")
        rows[key] = {
            "published": "",
            "upstream": _text(entry.get("name")) or key.partition("#prompt:")[2],
            "server": str(held.get("server") or ""),
            "description": _text(entry.get("description")),
            "arguments": _arguments(entry),
            "state": state,
            "meaning": PROMPT_STATES.get(state, state),
            "served": False,
        }
    return sorted(rows.values(), key=lambda r: (r["server"], r["upstream"]))


def _resource(item: IndexedItem, served: set[tuple[str, str]]) -> dict[str, Any]:
    entry = item.entry
    return {
        "kind": item.kind,
        "published": item.published,
        "upstream": item.upstream_id,
        "server": item.server,
        "name": _text(entry.get("name")),
        "mime": _text(entry.get("mimeType")),
        "description": _text(entry.get("description")),
        "served": (item.kind, item.published) in served,
    }


def resources_view(view: TenantView) -> dict[str, list[dict[str, Any]]]:
    """The resources and resource templates the catalog publishes, by server then URI."""
    offer = offered(view)
    served: set[tuple[str, str]] = {(i.kind, i.published) for i in (*offer.resources, *offer.templates)}
    items = sorted(
        (i for i in view.catalog.offerings if i.kind in ("resource", "template")),
        key=lambda i: (i.server, i.upstream_id),
    )
    rows = [_resource(i, served) for i in items]
    return {
        "resources": [r for r in rows if r["kind"] == "resource"],
        "templates": [r for r in rows if r["kind"] == "template"],
    }
