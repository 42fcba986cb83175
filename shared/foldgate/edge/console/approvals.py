"""The approvals page's view-model: each held tool (pending, changed, flagged, rejected) under its
published ``server__tool`` name with the tier it would be served at, a side-by-side diff of every
hashed field that differs from the approved version (the fields the admin API diffs,
:data:`foldgate.serve.review.REVIEWED_FIELDS`) with the changed words of a changed line marked, and the
scan rules that fired; the tools are grouped by server, so one server's pending tools can be approved at
once.

Rows carry plain text only (a word diff is a list of text segments, never markup); the template escapes
every cell (the text is the upstream's, hostile).
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, Final

from foldgate.config.tenant import TenantConfig
from foldgate.model.catalog import CatalogVersion, declared_tier
from foldgate.model.naming import display_name
from foldgate.serve.review import differing_fields, held_tools

__all__ = ["MAX_BULK", "approvals_view", "by_server", "side_by_side", "word_diff"]

# A description or schema longer than this many lines is cut (the page must stay renderable).
_MAX_LINES: Final = 400
# A changed line of more words than this is marked whole: the word matcher is quadratic at worst, and
# an upstream's one-line description can be as long as it likes.
_MAX_WORDS: Final = 3000
# Pending tools one confirmation approves at most (two form fields each: the console's forms take 200).
MAX_BULK: Final = 90
_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(before: str, after: str) -> tuple[list[dict[str, str]], list[dict[str, str]]] | None:
    """The words of two versions of one line as segments ``{"text", "kind"}`` (``same``, ``removed`` on
    the left, ``added`` on the right), or None when the line is too long to diff word by word."""
    left, right = _WORDS.findall(before), _WORDS.findall(after)
    if len(left) > _MAX_WORDS or len(right) > _MAX_WORDS:
        return None
    out_left: list[dict[str, str]] = []
    out_right: list[dict[str, str]] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out_left.append({"text": "".join(left[i1:i2]), "kind": "same"})
            out_right.append({"text": "".join(right[j1:j2]), "kind": "same"})
            continue
        if i2 > i1:
            out_left.append({"text": "".join(left[i1:i2]), "kind": "removed"})
        if j2 > j1:
            out_right.append({"text": "".join(right[j1:j2]), "kind": "added"})
    return out_left, out_right


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
            row: dict[str, Any] = {
                "ln": i + 1 if has_left else None,
                "left": left[i] if has_left else "",
                "rn": j + 1 if has_right else None,
                "right": right[j] if has_right else "",
                "kind": kind,
            }
            if kind == "changed":
                words = word_diff(row["left"], row["right"])
                if words is not None:
                    row["left_words"], row["right_words"] = words
            rows.append(row)
    return rows


def _tier(server: str | None, upstream: dict[str, Any], config: TenantConfig | None) -> dict[str, str]:
    """The tier the held content would be served at: the operator's pin, else what it declares."""
    found = config.server(server) if config is not None and server else None
    override = found.tools.get(str(upstream.get("name"))) if found is not None else None
    if override is not None and override.tier is not None:
        return {"tier": override.tier, "source": "pinned"}
    tier, source = declared_tier(upstream.get("annotations"))
    return {"tier": tier, "source": source}


def approvals_view(
    catalog: CatalogVersion | None, config: TenantConfig | None = None
) -> list[dict[str, Any]]:
    """Every held tool with its diffs (only the parts that differ), its scan findings and its tier
    (under ``config``'s pins when given)."""
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
        shown = row["id"] if row["id"] != row["key"] else display_name(row["key"])
        out.append({
            "id": shown,
            "tier": _tier(row.get("server"), upstream, config),
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


def by_server(held: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The held tools awaiting review grouped by server (in name order): each group's tools and its
    pending ones (new tools never approved, which one confirmation may approve together)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for tool in held:
        groups.setdefault(str(tool.get("server") or ""), []).append(tool)
    return [
        {
            "server": name,
            "tools": tools,
            "pending": [t for t in tools if t.get("state") == "pending"][:MAX_BULK],
        }
        for name, tools in sorted(groups.items())
    ]


def _rule(finding: Any) -> dict[str, str]:
    """One scan finding (``{"rule", "field", "excerpt"}`` from the poisoning scan) as text cells."""
    if not isinstance(finding, dict):
        return {"rule": str(finding), "field": "", "excerpt": ""}
    return {k: str(finding.get(k) or "") for k in ("rule", "field", "excerpt")}
