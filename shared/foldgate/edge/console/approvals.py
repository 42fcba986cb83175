"""The approvals page's view-model: each held tool (pending, changed, flagged, rejected) with a
side-by-side diff of every hashed field that differs from the approved version (the fields the admin API
diffs, :data:`foldgate.serve.review.REVIEWED_FIELDS`), and the scan rules that fired.

Rows carry plain text only; the template escapes every cell (the text is the upstream's, hostile).
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Final

from foldgate.model.catalog import CatalogVersion
from foldgate.serve.review import differing_fields, held_tools

__all__ = ["approvals_view", "side_by_side"]

# A description or schema longer than this many lines is cut (the page must stay renderable).
_MAX_LINES: Final = 400


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        lines = value.splitlines()
    else:
        lines = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return lines[:_MAX_LINES]


def side_by_side(before: Any, after: Any) -> list[dict[str, Any]]:
    """Rows of (left number, left text, right number, right text, kind): ``same``, ``changed``,
    ``removed`` (left only) or ``added`` (right only), aligned with difflib's matcher."""
    left, right = _lines(before), _lines(after)
    rows: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows.extend(
                {"ln": i + 1, "left": left[i], "rn": j + 1, "right": right[j], "kind": "same"}
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            i, j = i1 + k, j1 + k
            has_left, has_right = i < i2, j < j2
            kind = "changed" if has_left and has_right else "removed" if has_left else "added"
            rows.append({
                "ln": i + 1 if has_left else None,
                "left": left[i] if has_left else "",
                "rn": j + 1 if has_right else None,
                "right": right[j] if has_right else "",
                "kind": kind,
            })  # fmt: skip
    return rows


def approvals_view(catalog: CatalogVersion | None) -> list[dict[str, Any]]:
    """Every held tool with its diffs (only the parts that differ) and its scan findings."""
    if catalog is None:
        return []
    out = []
    for row in held_tools(catalog):
        approved = row.get("approved") or {}
        upstream = row.get("upstream") or {}
        diffs = [
            {"label": label, "rows": side_by_side(approved.get(field), upstream.get(field))}
            for _, field, label in differing_fields(approved, upstream)
        ]
        out.append({
            "id": row["id"],
            "key": row["key"],
            "server": row.get("server"),
            "state": row.get("state"),
            "hash": row.get("hash"),
            "approved_hash": row.get("approved_hash"),
            "rules": [_rule(r) for r in row.get("rules") or []],
            "has_approved": bool(approved),
            "diffs": diffs,
        })  # fmt: skip
    return out


def _rule(finding: Any) -> dict[str, str]:
    """One scan finding (``{"rule", "field", "excerpt"}`` from the poisoning scan) as text cells."""
    if not isinstance(finding, dict):
        return {"rule": str(finding), "field": "", "excerpt": ""}
    return {k: str(finding.get(k) or "") for k in ("rule", "field", "excerpt")}
