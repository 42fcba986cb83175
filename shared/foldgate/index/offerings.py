"""Prompts, resources and resource templates for a new catalog version, and the approval hold on prompts.

Per server: a fresh listing replaces the server's entries; a failed one keeps the previous version's
(the last good ones, like tools). Prompts go through the tools' approval rules
(:mod:`foldgate.index.holds`): a prompt's text is handed to the model as instructions, so only approved
prompt content is published. Keys are ``server#prompt:name`` (never a tool key). Resources and templates
are published as listed: what they hold is data read live, which an approval of the listing could not
vouch for anyway; scope and quarantine still apply to them (:mod:`foldgate.serve.offerings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from foldgate.config.tenant import TenantConfig
from foldgate.errors import UpstreamError
from foldgate.index.holds import Scanner, held_state
from foldgate.model.catalog import CatalogVersion
from foldgate.model.offerings import KINDS, IndexedItem, publish_items
from foldgate.model.tool import Tool
from foldgate.upstream.client import Offerings

__all__ = ["OfferingHolds", "build_offerings"]


@dataclass
class OfferingHolds:
    """The published entries and, for prompts, what waits for an operator."""

    items: tuple[IndexedItem, ...] = ()
    withheld: dict[str, dict[str, Any]] = field(default_factory=dict)
    baseline: dict[str, str] = field(default_factory=dict)


def _as_tool(item: IndexedItem) -> Tool:
    """A prompt in the shape the poisoning scan reads: its texts as description and argument schema."""
    entry = item.entry
    listed = entry.get("arguments")
    args: list[Any] = listed if isinstance(listed, list) else []
    props = {
        str(a.get("name")): {"description": str(a.get("description") or "")}
        for a in args
        if isinstance(a, dict)
    }
    return Tool(
        item.server,
        item.upstream_id,
        str(entry.get("description") or ""),
        {"type": "object", "properties": props},
        title=entry.get("title") if isinstance(entry.get("title"), str) else None,
    )


def _held(item: IndexedItem, state: str, approved: str | None, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "state": state,
        "hash": item.content_hash,
        "approved_hash": approved,
        "server": item.server,
        "kind": item.kind,
        "prompt": item.to_wire() | {"name": item.upstream_id},
        "rules": rules,
    }


def build_offerings(
    listings: Mapping[str, Offerings | UpstreamError | None],
    previous: CatalogVersion | None,
    config: TenantConfig,
    approved: dict[str, str] | None,
    scan: Scanner | None = None,
    rejected: Mapping[str, str] | None = None,
) -> OfferingHolds:
    """Entries for the new version from each server's listing (None: the server was not asked, e.g.
    its tools listing failed) and the prompt holds. ``approved`` None means no approval store: every
    prompt is published (the tools' rule too). ``rejected``: the operator's rejected hashes."""
    refused = rejected or {}
    old: dict[str, list[IndexedItem]] = {}
    for item in previous.offerings if previous is not None else ():
        old.setdefault(item.server, []).append(item)
    shown = {i.key: i for i in previous.offerings} if previous is not None else {}
    out = OfferingHolds()
    raw: dict[str, list[tuple[str, dict[str, Any]]]] = {k: [] for k in KINDS}
    kept: list[IndexedItem] = []
    for name, listing in listings.items():
        if not isinstance(listing, Offerings):
            kept.extend(old.get(name, []))  # the last good entries serve, holds included
            if previous is not None:
                out.withheld.update(
                    {k: w for k, w in previous.withheld.items() if w.get("server") == name and "kind" in w}
                )
            continue
        for kind in KINDS:
            raw[kind].extend((name, entry) for entry in listing.items.get(kind, []))
    fresh = [i for kind in KINDS for i in publish_items(kind, raw[kind], bare=config.bare_servers)]
    published: list[IndexedItem] = []
    for item in fresh:
        if item.kind != "prompt" or approved is None:
            published.append(item)
            continue
        known = approved.get(item.key)
        if known == item.content_hash:
            published.append(item)
            continue
        # A prompt's title names a user-facing template ("Team Management") while its name is an
        # identifier: a title unlike the name is the norm for prompts, not a poisoning signal.
        findings = [
            f for f in (scan(_as_tool(item)) if scan is not None else []) if f.get("rule") != "title-mismatch"
        ]
        state = held_state(item.content_hash, known, refused.get(item.key), findings)
        if known is None and item.key not in refused:
            server = config.server(item.server)
            if not findings and server is not None and server.trusted:
                out.baseline[item.key] = item.content_hash
                published.append(item)
            else:
                out.withheld[item.key] = _held(item, state, None, findings)
            continue
        last = shown.get(item.key)
        if known is not None and last is not None and last.content_hash == known:
            published.append(last)  # agents keep the approved entry; prompts/get is refused meanwhile
        out.withheld[item.key] = _held(item, state, known, findings)
    # Kept entries keep the names they had; fresh ones that now collide with them are dropped.
    taken = {(i.kind, i.published) for i in kept}
    out.items = tuple(kept + [i for i in published if (i.kind, i.published) not in taken])
    return out
