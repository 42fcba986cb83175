"""Operator review of held tools: what is waiting, how it differs from what agents see, and approval or
rejection by content hash (so an operator decides on exactly the content they reviewed, never a later
one)."""

from __future__ import annotations

import difflib
import json
from typing import Any, Final

from foldgate.errors import ConflictError, NotFoundError
from foldgate.model.catalog import CatalogVersion
from foldgate.store.approvals.base import ApprovalStore

__all__ = [
    "REVIEWED_FIELDS",
    "approvable",
    "approve_reviewed",
    "differing_fields",
    "held_tools",
    "reject_reviewed",
]

_MAX_DIFF_LINES = 400
# Every field of a tool's content hash (model.tool.Tool.content_hash) but its identity (server and
# name, the same on both sides of a review): (the admin API's diff key, the wire field, the console's
# label). An operator is shown a change to any of them, never just two different hashes.
REVIEWED_FIELDS: Final = (
    ("description", "description", "Description"),
    ("title", "title", "Title"),
    ("input_schema", "inputSchema", "Input schema"),
    ("output_schema", "outputSchema", "Output schema"),
    ("annotations", "annotations", "Annotations"),
    ("_meta", "_meta", "_meta"),
)


def _text(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _diff(before: Any, after: Any, name: str) -> str:
    lines = list(
        difflib.unified_diff(
            _text(before), _text(after), fromfile=f"approved/{name}", tofile=f"upstream/{name}", lineterm=""
        )
    )
    if len(lines) > _MAX_DIFF_LINES:
        lines = [*lines[:_MAX_DIFF_LINES], f"... {len(lines) - _MAX_DIFF_LINES} more lines"]
    return "\n".join(lines)


def differing_fields(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The :data:`REVIEWED_FIELDS` whose values differ between two wire tools, in that order."""
    return [f for f in REVIEWED_FIELDS if old.get(f[1]) != new.get(f[1])]


def held_tools(catalog: CatalogVersion) -> list[dict[str, Any]]:
    """Every held tool with its state, the content hash to approve, the scan's findings, the new
    content and, for a changed tool, a diff against the approved content agents still see."""
    rows = []
    for key, held in sorted(catalog.withheld.items()):
        new = held.get("tool") or held.get("prompt") or {}  # prompts are held too (index.offerings)
        shown = catalog.by_key.get(key)
        row: dict[str, Any] = {
            "key": key,
            "id": shown.published if shown is not None else key,
            "server": held.get("server"),
            "state": held.get("state"),
            "hash": held.get("hash"),
            "approved_hash": held.get("approved_hash"),
            "rules": held.get("rules") or [],
            "upstream": new,
        }
        if shown is not None:
            old = shown.tool.to_wire()
            row["approved"] = old
            row["diff"] = {
                part: _diff(old.get(field), new.get(field), part)
                for part, field, _ in differing_fields(old, new)
            }
        rows.append(row)
    return rows


def approvable(
    catalog: CatalogVersion, requested: list[tuple[str, str]], *, held_only: bool = False
) -> dict[str, str]:
    """Canonical key -> content hash for each (tool id, hash) the operator approves. Raises
    NotFoundError for ids that are neither held nor listed (with ``held_only``: not held), ConflictError
    when a hash is not the content held now (the upstream changed again after the operator's review)."""
    chosen: dict[str, str] = {}
    unknown: list[str] = []
    stale: list[str] = []
    for tool_id, digest in requested:
        key = tool_id if tool_id in catalog.withheld else None
        if key is None:
            listed = catalog.resolve(tool_id)
            key = listed.tool.key if listed is not None else None
        if key is None or (held_only and key not in catalog.withheld):
            unknown.append(tool_id)
            continue
        held = catalog.withheld.get(key)
        listed = catalog.by_key.get(key)
        current = held.get("hash") if held is not None else (listed.tool.content_hash if listed else None)
        if current != digest:
            stale.append(tool_id)
            continue
        chosen[key] = digest
    if unknown:
        what = "tools not held for review" if held_only else "unknown tools"
        raise NotFoundError(f"{what}: {', '.join(unknown[:20])}")
    if stale:
        raise ConflictError(
            f"content changed since it was reviewed: {', '.join(stale[:20])}; review the current hash again"
        )
    return chosen


def approve_reviewed(
    catalog: CatalogVersion, store: ApprovalStore, tenant: str, requested: list[tuple[str, str]]
) -> dict[str, str]:
    """Record the reviewed content of these (tool id, hash) pairs as approved; returns what was
    recorded. The admin API and the console both approve through here (errors as :func:`approvable`)."""
    chosen = approvable(catalog, requested)
    store.approve(tenant, chosen)
    return chosen


def reject_reviewed(
    catalog: CatalogVersion, store: ApprovalStore, tenant: str, requested: list[tuple[str, str]]
) -> dict[str, str]:
    """Record the reviewed held content of these (tool id, hash) pairs as rejected; returns what was
    recorded. Only held content can be rejected (NotFoundError otherwise: an approved, listed tool is
    withdrawn by disabling it in the config); a stale hash is a ConflictError as for approval."""
    chosen = approvable(catalog, requested, held_only=True)
    store.reject(tenant, chosen)
    return chosen
