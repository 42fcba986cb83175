"""What the indexer writes and the request path reads: a tenant's catalog version.

A version holds every tool with its pre-computed facts (published name, hash, signature,
pre-rendered entries, token costs) and each server's health. Versions are immutable once written;
the store flips a per-tenant pointer to make one current.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from foldgate.model.enrichment import Enrichment
from foldgate.model.jsonutil import canonical, sha256_hex
from foldgate.model.offerings import IndexedItem
from foldgate.model.param_headers import HeaderParam, header_params, params_from_doc, params_to_doc
from foldgate.model.tool import Tool, tool_from_wire

__all__ = [
    "CatalogVersion",
    "IndexedTool",
    "ServerStatus",
    "Tier",
    "TierSource",
    "declared_tier",
    "new_version_id",
    "tier_of",
]

Tier = Literal["read", "write", "destructive"]
# Where a tool's tier came from: its annotations, the MCP spec's defaults, or the operator's pin.
TierSource = Literal["declared", "default", "pinned"]


def declared_tier(annotations: dict[str, Any] | None) -> tuple[Tier, TierSource]:
    """Permission tier from annotations with the MCP spec's defaults (``readOnlyHint: false``,
    ``destructiveHint: true``): a tool that declares nothing is destructive. ``readOnlyHint: true`` →
    read; otherwise ``destructiveHint: false`` → write, ``true`` → destructive. A hint counts only when
    it is a real boolean: anything else is as good as absent."""
    ann = annotations if isinstance(annotations, dict) else {}
    if ann.get("readOnlyHint") is True:
        return "read", "declared"
    destructive = ann.get("destructiveHint")
    if destructive is False:
        return "write", "declared"
    if destructive is True:
        return "destructive", "declared"
    return "destructive", "default"


def tier_of(annotations: dict[str, Any] | None) -> Tier:
    """The tier the annotations give (see :func:`declared_tier`)."""
    return declared_tier(annotations)[0]


def new_version_id(now: float | None = None) -> str:
    """A version id that sorts by creation time and never collides across concurrent indexers."""
    stamp = int((time.time() if now is None else now) * 1000)
    return f"v{stamp:015d}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, slots=True)
class IndexedTool:
    """One tool as indexed: the upstream facts plus everything the request path needs pre-computed."""

    published: str
    tool: Tool
    signature: str
    lossy: bool
    full_fragment: str
    deferred_fragment: str
    tokens_full: int
    tokens_deferred: int
    renamed: str | None = None
    # The arguments clients mirror in Mcp-Param-* headers (SEP-2243), read from the schema once.
    header_params: tuple[HeaderParam, ...] = ()
    # Generated "when to use" hint and queries for this tool version (foldgate.enrich): searchable,
    # never shown as the upstream's words. None when not enriched (yet, or ever).
    enrichment: Enrichment | None = None

    @property
    def server(self) -> str:
        """The upstream server's configured name."""
        return self.tool.server

    @property
    def tier(self) -> Tier:
        """Permission tier derived from the upstream's annotations."""
        return tier_of(self.tool.annotations)

    def to_doc(self) -> dict[str, Any]:
        """A JSON-able document for the stores."""
        return {
            "published": self.published,
            "server": self.tool.server,
            "entry": self.tool.to_wire(),
            "hash": self.tool.content_hash,
            "signature": self.signature,
            "lossy": self.lossy,
            "full": self.full_fragment,
            "deferred": self.deferred_fragment,
            "tokens_full": self.tokens_full,
            "tokens_deferred": self.tokens_deferred,
            "renamed": self.renamed,
            "headers": params_to_doc(self.header_params),
        } | ({"enrichment": self.enrichment.to_doc()} if self.enrichment is not None else {})

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> IndexedTool:
        """Inverse of :meth:`to_doc` (a version written before header params were kept reads them from
        the schema, once, as it loads)."""
        tool = tool_from_wire(doc["server"], doc["entry"])
        stored = doc.get("headers")
        return cls(
            published=doc["published"],
            tool=tool,
            signature=doc["signature"],
            lossy=doc["lossy"],
            full_fragment=doc["full"],
            deferred_fragment=doc["deferred"],
            tokens_full=doc["tokens_full"],
            tokens_deferred=doc["tokens_deferred"],
            renamed=doc.get("renamed"),
            header_params=params_from_doc(stored) if stored is not None else header_params(tool.input_schema),
            enrichment=_enrichment(doc.get("enrichment")),
        )


def _enrichment(doc: Any) -> Enrichment | None:
    """A stored enrichment; None when absent (documents written before enrichment) or malformed."""
    if not isinstance(doc, dict):
        return None
    try:
        return Enrichment.from_doc(doc)
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """Health of one upstream as of the last index run."""

    name: str
    healthy: bool
    tool_count: int = 0
    error: str | None = None
    checked_at: float = 0.0
    indexed_at: float | None = None  # last time its tools were listed successfully
    skipped: tuple[tuple[str, str], ...] = ()  # (tool name, reason) for tools not published
    # The tools are the operator's declaration (a per_user server nobody shared), not a fetched listing.
    declared: bool = False

    def to_doc(self) -> dict[str, Any]:
        """A JSON-able document for the stores."""
        return {
            "name": self.name,
            "healthy": self.healthy,
            "tool_count": self.tool_count,
            "error": self.error,
            "checked_at": self.checked_at,
            "indexed_at": self.indexed_at,
            "skipped": [list(s) for s in self.skipped],
        } | ({"declared": True} if self.declared else {})

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> ServerStatus:
        """Inverse of :meth:`to_doc`."""
        return cls(
            name=doc["name"],
            healthy=doc["healthy"],
            tool_count=doc.get("tool_count", 0),
            error=doc.get("error"),
            checked_at=doc.get("checked_at", 0.0),
            indexed_at=doc.get("indexed_at"),
            skipped=tuple((str(a), str(b)) for a, b in doc.get("skipped", [])),
            declared=bool(doc.get("declared", False)),
        )


@dataclass(frozen=True)
class CatalogVersion:
    """An immutable catalog of one tenant."""

    tenant: str
    version: str
    created_at: float
    tools: tuple[IndexedTool, ...]
    servers: dict[str, ServerStatus] = field(default_factory=dict)
    # The validated tenant config this version was indexed with: what a fresh instance serves with when
    # the live config document is invalid (the last good config travels with the last good catalog).
    config: dict[str, Any] | None = None
    # The serialized search index (foldgate.search), built by the indexer; derived, so not fingerprinted.
    search: dict[str, Any] | None = None
    # The serialized dense index (foldgate.search.dense), None when no embedding provider ran.
    dense: dict[str, Any] | None = None
    # Listed tools whose upstream changed and awaits an operator: canonical key -> "changed". Agents
    # see the last approved content of such a tool and cannot call it.
    approvals: dict[str, str] = field(default_factory=dict)
    # Content agents must not see until an operator approves it: canonical key -> {"state": "pending"
    # | "changed" | "flagged", "hash", "approved_hash", "tool" (wire entry), "rules" (scan findings)}.
    withheld: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Upstream prompts, resources and resource templates (approved prompts only; see index.offerings).
    offerings: tuple[IndexedItem, ...] = ()

    @cached_property
    def fingerprint(self) -> str:
        """Hash of the published content: equal fingerprints mean nothing an agent sees changed."""
        rows = sorted((t.published, t.tool.content_hash) for t in self.tools)
        # A declared listing is marked only when set, so versions without one keep their fingerprints
        # (and a real listing equal to the declaration still publishes, to drop the mark).
        health = sorted(
            [s.name, s.healthy] + (["declared"] if s.declared else []) for s in self.servers.values()
        )
        # Which embedding model indexed it: switching providers republishes even if no tool changed.
        model = self.dense.get("model_id") if self.dense else None
        doc = {
            "tools": rows,
            "health": health,
            "config": self.config,
            "approvals": self.approvals,
            "withheld": {k: [w.get("state"), w.get("hash")] for k, w in self.withheld.items()},
            "model": model,
        }
        enriched = sorted(
            (t.tool.key, t.enrichment.content_hash, t.enrichment.source)
            for t in self.tools
            if t.enrichment is not None
        )
        if enriched:  # only when present, so versions without any keep their fingerprints
            # A run that only adds enrichment publishes: the next run continues from what it stored.
            doc["enriched"] = enriched
        # Signatures follow from the schema, except across grammar versions: a version whose signatures
        # write objects inline (grammar v2) differs from one rendered before. Only when present, so
        # versions without any keep their fingerprints (and a v1 catalog is republished once in v2).
        inline = sorted(
            (t.published, t.signature) for t in self.tools if ":{" in t.signature or ":[{" in t.signature
        )
        if inline:
            doc["inline_signatures"] = inline
        if self.offerings:  # only when present, so versions without any keep their fingerprints
            doc["offerings"] = sorted((i.kind, i.published, i.content_hash) for i in self.offerings)
        return sha256_hex(canonical(doc))

    @cached_property
    def by_published(self) -> dict[str, IndexedTool]:
        """Registration map: published name → tool (names are never split)."""
        return {t.published: t for t in self.tools}

    @cached_property
    def by_key(self) -> dict[str, IndexedTool]:
        """Canonical ``server:tool`` → tool."""
        return {t.tool.key: t for t in self.tools}

    def resolve(self, tool_id: str) -> IndexedTool | None:
        """A tool by published name or by canonical ``server:tool`` id."""
        return self.by_published.get(tool_id) or self.by_key.get(tool_id)

    def to_doc(self) -> dict[str, Any]:
        """A JSON-able document for the stores."""
        return {
            "tenant": self.tenant,
            "version": self.version,
            "created_at": self.created_at,
            "servers": [s.to_doc() for s in self.servers.values()],
            "tools": [t.to_doc() for t in self.tools],
            "config": self.config,
            "search": self.search,
            "approvals": self.approvals,
            "withheld": self.withheld,
            "dense": self.dense,
            "offerings": [i.to_doc() for i in self.offerings],
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> CatalogVersion:
        """Inverse of :meth:`to_doc`."""
        servers = [ServerStatus.from_doc(s) for s in doc.get("servers", [])]
        return cls(
            tenant=doc["tenant"],
            version=doc["version"],
            created_at=doc["created_at"],
            tools=tuple(IndexedTool.from_doc(t) for t in doc.get("tools", [])),
            servers={s.name: s for s in servers},
            config=doc.get("config"),
            search=doc.get("search"),
            approvals=dict(doc.get("approvals") or {}),
            withheld=dict(doc.get("withheld") or {}),
            dense=doc.get("dense"),
            offerings=tuple(IndexedItem.from_doc(i) for i in doc.get("offerings") or []),
        )
