"""What the guards found, for the operator: both sides of one tenant in one document.

- **Results** (the result guard, :mod:`foldgate.serve.guarding`): the counts by rule that calls'
  activity events carry, summed per server, tool and rule over a window — how often each rule fired,
  on how many calls, how many of those answers were withheld, when last. Never a value: events hold
  counts only.
- **Descriptions** (the poisoning scan at index time): the scan findings the catalog keeps with each
  held tool (:mod:`foldgate.index.holds`), with the content hash an operator approves to release one.

With each side comes how a false positive is released: a result rule by an allowance in the tenant's
``guard.allow`` (by tool and rule), a description by approving its content hash.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Final

from foldgate.config.tenant import TenantConfig
from foldgate.guard.secret_rules import SECRET_KINDS
from foldgate.model.activity import ActivityEvent
from foldgate.model.catalog import CatalogVersion
from foldgate.serve.activity_summary import window_seconds
from foldgate.store.activity.base import ActivityQuery, ActivityStore

__all__ = ["MAX_EVENTS", "description_findings", "guard_findings", "result_findings"]

MAX_EVENTS: Final = 100_000
_PAGE: Final = 1000
_SECRET_KINDS: Final = frozenset(SECRET_KINDS)
RELEASE: Final = {
    "results": "add the rule id to the tenant config's guard.allow under the tool's published name "
    '(e.g. guard: {allow: {"github__get_file": ["generic_secret"]}}; "server__*" for the whole server)',
    "descriptions": "POST /api/v1/approvals with the tool's id and the content hash listed here",
}


@dataclass
class _Tally:
    findings: int = 0
    calls: int = 0
    withheld: int = 0
    last_at: float = 0.0


def result_findings(events: list[ActivityEvent], config: TenantConfig) -> list[dict[str, Any]]:
    """Per (server, tool, method, rule): findings, calls they were found in, calls withheld, last seen;
    most findings first. ``allowed`` says whether the tenant's config releases the rule there now."""
    tallies: dict[tuple[str, str, str, str], _Tally] = {}
    for event in events:
        if not event.guard:
            continue
        for rule, count in event.guard.items():
            tally = tallies.setdefault((event.server, event.tool, event.method, rule), _Tally())
            tally.findings += count
            tally.calls += 1
            tally.withheld += event.detail == "result_blocked"
            tally.last_at = max(tally.last_at, event.at)
    rows: list[dict[str, Any]] = []
    for (server, tool, method, rule), tally in sorted(
        tallies.items(), key=lambda item: (-item[1].findings, item[0])
    ):
        name = "*" if method == "resources/read" else tool
        rows.append({
            "server": server,
            "tool": tool,
            "method": method,
            "side": "secrets" if rule in _SECRET_KINDS else "injection",
            "rule": rule,
            "findings": tally.findings,
            "calls": tally.calls,
            "withheld": tally.withheld,
            "last_at": tally.last_at,
            "allowed": rule in config.guard.allowed(server, name),
        })  # fmt: skip
    return rows


def description_findings(catalog: CatalogVersion) -> list[dict[str, Any]]:
    """The held tools the scan flagged: server, tool, state, content hash and each rule with its field
    and excerpt (from the tool's own description or schema)."""
    rows = []
    for key, held in catalog.withheld.items():
        rules = held.get("rules")
        if not isinstance(rules, list) or not rules:
            continue
        tool = held.get("tool")
        name = tool.get("name") if isinstance(tool, dict) else None
        rows.append({
            "key": key,
            "server": held.get("server"),
            "tool": name if isinstance(name, str) else key.partition(":")[2],
            "state": held.get("state"),
            "hash": held.get("hash"),
            "rules": [
                {k: r.get(k) for k in ("rule", "field", "excerpt", "score", "features") if k in r}
                for r in rules
                if isinstance(r, dict)
            ],
        })  # fmt: skip
    rows.sort(key=lambda r: (str(r["server"]), str(r["tool"])))
    return rows


def _events(
    store: ActivityStore, tenant: str, since: float, until: float
) -> tuple[list[ActivityEvent], bool]:
    query = ActivityQuery(tenant, since=since, until=until, limit=_PAGE)
    events: list[ActivityEvent] = []
    while True:
        page = store.query(query)
        events.extend(r for r in page.records if isinstance(r, ActivityEvent))
        if len(events) >= MAX_EVENTS:
            return events[:MAX_EVENTS], True
        if page.cursor is None:
            return events, False
        query = replace(query, cursor=page.cursor)


def guard_findings(
    tenant: str,
    config: TenantConfig,
    catalog: CatalogVersion,
    store: ActivityStore | None,
    window: str = "24h",
    *,
    now: float | None = None,
) -> dict[str, Any]:
    """Both sides for one tenant (results over ``window``; None ``store``: the activity log is off and
    the results side says so). Raises StoreError when the store fails."""
    until = time.time() if now is None else now
    results: dict[str, Any]
    if store is None:
        results = {"available": False, "findings": []}
    else:
        events, truncated = _events(store, tenant, until - window_seconds(window), until)
        results = {
            "available": True,
            "calls_read": len(events),
            "truncated": truncated,
            "findings": result_findings(events, config),
        }
    return {
        "tenant": tenant,
        "window": window,
        "policy": config.guard.model_dump(mode="json"),
        "results": results,
        "descriptions": description_findings(catalog),
        "release": RELEASE,
    }
