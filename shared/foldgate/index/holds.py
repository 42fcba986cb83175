"""What agents may see of a fresh listing: approved content is published, everything else is held.

Rules (per tool, by canonical key, against the tenant's approved content hashes):

- the listed content is the approved one → published;
- never approved, from a trusted server, and the poisoning scan finds nothing → approved as the
  server's baseline and published;
- never approved otherwise → held ``pending`` (or ``flagged`` when the scan matched): not listed,
  described, searched or callable anywhere;
- approved before but the upstream now lists other content ("rug pull") → held ``changed``: agents keep
  seeing the last approved content (from the previous catalog version) and calls are refused with
  ``tool_changed``; when that content is not at hand the tool is hidden like a pending one;
- the listed content is the one an operator rejected → held ``rejected`` (listed or hidden as above,
  but not asked about again) for as long as the upstream serves it; other content of a rejected tool
  is held ``changed`` (an operator has reviewed this tool before, so no trusted-server baseline).

Held content is kept in the catalog version (``withheld``) with its hash, so an operator reviews
exactly what they approve (approval is by content hash).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from foldgate.config.tenant import TenantConfig
from foldgate.model.catalog import CatalogVersion
from foldgate.model.tool import Tool

__all__ = ["Holds", "Scanner", "held_state", "hold_unapproved"]

# A poisoning scan: the findings for one tool (each a JSON-able dict), empty when it looks clean.
Scanner = Callable[[Tool], list[dict[str, Any]]]


@dataclass
class Holds:
    """The outcome for one tenant's fresh listing."""

    published: list[Tool] = field(default_factory=list)
    # Listed with their last approved content while a change awaits approval: key -> "changed".
    changed: dict[str, str] = field(default_factory=dict)
    withheld: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Trusted servers' first sightings, to record as approved.
    baseline: dict[str, str] = field(default_factory=dict)


def _entry(tool: Tool, state: str, approved_hash: str | None, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "state": state,
        "hash": tool.content_hash,
        "approved_hash": approved_hash,
        "server": tool.server,
        "tool": tool.to_wire(),
        "rules": rules,
    }


def held_state(
    digest: str, approved: str | None, rejected: str | None, findings: list[dict[str, Any]]
) -> str:
    """The state of held (not approved) content: ``rejected`` when it is the content an operator
    rejected, ``changed`` when the tool was reviewed before (approved or rejected, other content),
    else ``flagged`` or ``pending`` by the scan's findings."""
    if rejected == digest:
        return "rejected"
    if approved is not None or rejected is not None:
        return "changed"
    return "flagged" if findings else "pending"


def hold_unapproved(
    tools: Iterable[Tool],
    approved: dict[str, str],
    config: TenantConfig,
    previous: CatalogVersion | None,
    *,
    scan: Scanner | None = None,
    rejected: dict[str, str] | None = None,
) -> Holds:
    """Split a listing into what agents see and what waits for an operator (see the module doc)."""
    shown = {t.tool.key: t.tool for t in previous.tools} if previous is not None else {}
    refused = rejected or {}
    holds = Holds()
    for tool in tools:
        key, digest = tool.key, tool.content_hash
        known = approved.get(key)
        if known == digest:
            holds.published.append(tool)
            continue
        findings = scan(tool) if scan is not None else []
        state = held_state(digest, known, refused.get(key), findings)
        if known is None and key not in refused:
            server = config.server(tool.server)
            if not findings and server is not None and server.trusted:
                holds.baseline[key] = digest
                holds.published.append(tool)
            else:
                holds.withheld[key] = _entry(tool, state, None, findings)
            continue
        last = shown.get(key)
        if known is not None and last is not None and last.content_hash == known:
            # Rejected content too: agents keep the approved version, and calls stay refused.
            holds.published.append(last)
            holds.changed[key] = "changed"
        holds.withheld[key] = _entry(tool, state, known, findings)
    return holds


def carried_over(previous: CatalogVersion | None, servers: set[str]) -> tuple[dict[str, str], dict[str, Any]]:
    """The previous version's change markers and held content of servers whose listing failed this
    run (their tools are kept as they were, and so are their holds)."""
    if previous is None:
        return {}, {}
    changed = {
        k: v
        for k, v in previous.approvals.items()
        if (t := previous.by_key.get(k)) is not None and t.server in servers
    }
    withheld = {k: w for k, w in previous.withheld.items() if w.get("server") in servers}
    return changed, withheld
