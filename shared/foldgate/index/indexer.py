"""The indexer: list every upstream, pre-compute everything, write a new catalog version, flip.

All the expensive work (listing, hashing, signatures, rendering, token counts) happens here, once,
never on the request path. A server that fails keeps its last good tools, marked unhealthy; a run
that changes nothing an agent can see writes no new version.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from foldgate.config.tenant import ServerConfig, TenantConfig
from foldgate.errors import ConflictError, NotFoundError, StoreError, UpstreamConsentError, UpstreamError
from foldgate.guard.poison_scan import scan_findings
from foldgate.index.holds import Holds, Scanner, carried_over, hold_unapproved
from foldgate.index.offerings import OfferingHolds, build_offerings
from foldgate.model.caller import calling_as
from foldgate.model.catalog import CatalogVersion, IndexedTool, ServerStatus, new_version_id
from foldgate.model.listing import fragments_for
from foldgate.model.naming import assign_names
from foldgate.model.param_headers import header_params
from foldgate.model.pattern_probe import unsafe_patterns
from foldgate.model.token_count import TokenCounter, get_counter
from foldgate.model.tool import Tool, tool_from_wire
from foldgate.store.approvals.base import ApprovalStore
from foldgate.store.catalog.base import CatalogStore
from foldgate.upstream.client import Listing, Offerings, UpstreamClient
from foldgate.upstream.declared import declared_listing

if TYPE_CHECKING:
    from foldgate.enrich.pipeline import EnrichmentPass
    from foldgate.model.enrichment import Enrichment
    from foldgate.search.embed import Embedder

__all__ = ["IndexReport", "Indexer", "catalog_from_tools", "index_tool"]

log = logging.getLogger(__name__)


@dataclass
class IndexReport:
    """What one index run did, for logs, metrics and the admin API."""

    tenant: str
    version: str | None
    changed: bool
    tools: int = 0
    catalog_bytes: int = 0
    duration_s: float = 0.0
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None
    # Tools held for an operator (pending, changed or flagged) and how many of them the scan flagged.
    awaiting_approval: int = 0
    flagged: int = 0
    # Set when the current version could not be read and this run rebuilt the catalog over it.
    recovered: str | None = None
    # Schemas whose patterns backtrack catastrophically (validation bounds them; the upstream may not).
    unsafe_patterns: dict[str, list[str]] = field(default_factory=dict)
    # Another indexer published first (the pointer moved under this run): nothing was written.
    conflict: bool = False
    # The enrichment pass (foldgate.enrich.pipeline): counts, tokens, wall time; None when none ran.
    enrichment: dict[str, Any] | None = None

    @property
    def failed_servers(self) -> int:
        """How many upstreams could not be listed this run."""
        return sum(1 for s in self.servers.values() if not s["healthy"])


def index_tool(
    tool: Tool, published: str, renamed: str | None, count: TokenCounter, reuse: IndexedTool | None = None
) -> IndexedTool:
    """Pre-compute one tool: signature, both rendered entries and their token costs."""
    if (
        reuse is not None
        and reuse.published == published
        and reuse.tool.content_hash == tool.content_hash
        and reuse.signature == tool.signature.params  # a version stored under another grammar re-renders
    ):
        return reuse
    frags = fragments_for(tool, published)
    return IndexedTool(
        published=published,
        tool=tool,
        signature=tool.signature.params,
        lossy=tool.signature.lossy,
        full_fragment=frags.full,
        deferred_fragment=frags.deferred,
        tokens_full=count(frags.full),
        tokens_deferred=count(frags.deferred),
        renamed=renamed,
        header_params=header_params(tool.input_schema),
    )


def catalog_from_tools(
    tenant: str,
    tools: list[Tool],
    statuses: dict[str, ServerStatus] | None = None,
    *,
    count: TokenCounter | None = None,
    previous: CatalogVersion | None = None,
    now: float | None = None,
    embedder: Embedder | None = None,
    bare: Collection[str] = (),
    enrichments: dict[str, Enrichment] | None = None,
) -> CatalogVersion:
    """Name, pre-compute and assemble a catalog version from tools in listing order; tools of the
    servers in ``bare`` keep their upstream names where nothing collides (:mod:`foldgate.model.naming`).
    ``enrichments`` (canonical key → enrichment of that tool version) are stored with the tools and
    searched as their own fields; without them no tool carries an enrichment."""
    now = time.time() if now is None else now
    count = count or get_counter("cl100k", exact=False)
    names = assign_names(((t.server, t.name) for t in tools), bare=bare)
    by_pair = {(t.server, t.name): t for t in tools}
    reuse = previous.by_key if previous else {}
    indexed = []
    for pub in names:
        tool = by_pair[(pub.server, pub.tool)]
        entry = index_tool(tool, pub.published, pub.renamed, count, reuse.get(tool.key))
        enrichment = (enrichments or {}).get(tool.key)
        if enrichment is not None and enrichment.content_hash != tool.content_hash:
            enrichment = None  # made for another version of the tool
        if entry.enrichment is not enrichment:
            entry = replace(entry, enrichment=enrichment)
        indexed.append(entry)
    if statuses is None:
        statuses = {}
        for t in tools:
            old = statuses.get(t.server)
            statuses[t.server] = ServerStatus(
                t.server, True, (old.tool_count if old else 0) + 1, None, now, now
            )
    from foldgate.search import build_search_index  # the indexer's cost, never the request path's

    tools_in_order = [t.tool for t in indexed]
    made = {t.tool.key: t.enrichment for t in indexed if t.enrichment is not None}
    search = build_search_index(tools_in_order, enrichments=made).to_doc()
    dense = _dense_doc(embedder, tools_in_order, previous, made) if embedder is not None else None
    return CatalogVersion(
        tenant, new_version_id(now), now, tuple(indexed), statuses, search=search, dense=dense
    )


def _dense_doc(
    embedder: Embedder,
    tools: list[Tool],
    previous: CatalogVersion | None,
    enrichments: dict[str, Enrichment],
) -> dict[str, Any] | None:
    """Embed every tool once (unchanged tools reuse their vectors by content hash); None when the
    provider is unavailable, so the version is published lexical-only rather than not at all."""
    if embedder.name == "none":
        return None
    # The search stack (numpy, the encoder) loads only when an index is built.
    from foldgate.search.codec import IndexFormatError
    from foldgate.search.dense import DenseIndex, build_dense_index
    from foldgate.search.embed import EmbeddingError

    reuse = None
    if previous is not None and previous.dense is not None:
        try:
            reuse = DenseIndex.from_doc(previous.dense).reusable_for(embedder)
        except IndexFormatError:
            reuse = None
    try:
        dense = build_dense_index(embedder, tools, reuse, enrichments=enrichments)
    except EmbeddingError as exc:
        log.error("embedding provider %s failed; publishing lexical search only: %s", embedder.name, exc)
        return None
    return None if dense is None else dense.to_doc()


def _in_place(
    previous: CatalogVersion, scope: set[str], untouched: set[str], listed: list[Tool]
) -> list[Tool]:
    """A scoped run's tools in the previous version's order: untouched servers' tools as they were,
    each reindexed server's new tools where its old ones stood (appended when it is new)."""
    fresh: dict[str, list[Tool]] = {}
    for tool in listed:
        fresh.setdefault(tool.server, []).append(tool)
    out: list[Tool] = []
    placed: set[str] = set()
    for old in previous.tools:
        if old.server in scope:
            if old.server not in placed:
                out.extend(fresh.get(old.server, []))
                placed.add(old.server)
        elif old.server in untouched:
            out.append(old.tool)
    for server, tools in fresh.items():
        if server not in placed:
            out.extend(tools)
    return out


def _with_vectors(scan: Scanner | None, embedder: Embedder | None) -> Scanner | None:
    """The default scan reading sentence vectors with the local search encoder the indexer already has
    open (the semantic scorer's vector head was trained on it); any other scan, or no local encoder,
    as given (the scorer then reads cues alone)."""
    if scan is scan_findings and embedder is not None and embedder.name == "local":
        return functools.partial(scan_findings, encoder=embedder)
    return scan


class Indexer:
    """Indexes tenants into a store. ``max_concurrency`` bounds upstreams listed at once."""

    def __init__(
        self,
        store: CatalogStore,
        upstream: UpstreamClient,
        *,
        counter: TokenCounter | None = None,
        max_concurrency: int = 8,
        approvals: ApprovalStore | None = None,
        embedder: Embedder | None = None,
        scan: Scanner | None = scan_findings,
        enrichment: EnrichmentPass | None = None,
    ) -> None:
        self.store = store
        # Index-time enrichment (a language model's hint and queries per tool); None: no enrichment.
        self.enrichment = enrichment
        self.approvals = approvals
        # The poisoning scan run on content that is not approved yet (see foldgate.index.holds); None
        # turns it off (a tenant that approves everything by hand anyway).
        self.scan = _with_vectors(scan, embedder)
        self.embedder = embedder
        self.upstream = upstream
        self.count = counter or get_counter("cl100k", exact=False)
        self.max_concurrency = max_concurrency

    async def list_servers(self, servers: list[ServerConfig]) -> dict[str, Listing | UpstreamError]:
        """Every server's listing (or its failure), ``max_concurrency`` at a time."""
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(server: ServerConfig) -> Listing | UpstreamError:
            async with gate:
                try:
                    return await self.upstream.list_tools(server)
                except UpstreamConsentError as exc:
                    # No shared grant for a per_user server: the operator's declared tools, if any.
                    return declared_listing(server) or exc
                except UpstreamError as exc:
                    return exc

        results = await asyncio.gather(*(one(s) for s in servers))
        return {s.name: r for s, r in zip(servers, results, strict=True)}

    async def _offerings(
        self,
        tenant: str,
        servers: list[ServerConfig],
        listings: dict[str, Listing | UpstreamError],
        previous: CatalogVersion | None,
        config: TenantConfig,
        carry: Collection[str] = (),
    ) -> OfferingHolds:
        """Prompts, resources and templates of the servers whose tools listed (others, and the servers
        in ``carry`` that a scoped run does not list, keep theirs)."""
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(server: ServerConfig) -> Offerings | UpstreamError | None:
            listing = listings[server.name]
            if isinstance(listing, UpstreamError) or listing.declared:
                return None  # a declared listing has no connection to list prompts and resources with
            async with gate:
                try:
                    return await self.upstream.list_offerings(server)
                except UpstreamError as exc:
                    log.warning("tenant %s: %s (kept its last prompts and resources)", tenant, exc.message)
                    return exc
                except Exception as exc:  # an upstream JSON-RPC error: same verdict, keep the last good
                    log.warning(
                        "tenant %s: %s: prompts/resources listing failed: %s", tenant, server.name, exc
                    )
                    return UpstreamError(f"{server.name}: {exc}")

        with calling_as(tenant):  # prompts/resources with the tenant's shared connection
            results = await asyncio.gather(*(one(s) for s in servers))
        approved = self.approvals.approved(tenant) if self.approvals is not None else None
        rejected = self.approvals.rejected(tenant) if self.approvals is not None else None
        listed: dict[str, Offerings | UpstreamError | None] = dict.fromkeys(carry)
        listed.update({s.name: r for s, r in zip(servers, results, strict=True)})
        holds = build_offerings(listed, previous, config, approved, self.scan, rejected)
        if holds.baseline and self.approvals is not None:
            self.approvals.approve(tenant, holds.baseline)
        return holds

    def _load_previous(self, tenant: str) -> tuple[CatalogVersion | None, str | None, str | None]:
        """(current catalog, the pointer to publish against, a problem to report). A current version
        that cannot be loaded (unreadable, or missing, incomplete or expired) is treated as absent: the
        run rebuilds from the listings and publishes over its pointer, instead of stalling on a version
        nobody can read (publishing against no pointer would lose the compare-and-set every run)."""
        problem: str | None = None
        try:
            previous = self.store.load_current(tenant)
        except StoreError as exc:
            log.error("tenant %s: last catalog unreadable, indexing from scratch: %s", tenant, exc.message)
            problem = f"current catalog unreadable, rebuilt from scratch: {exc.message}"
        else:
            if previous is not None:
                return previous, None, None
        # No catalog: the tenant's first run, or a pointer to a version that is gone. One more small read
        # (the pointer) tells them apart; it costs nothing on the path of a loadable catalog.
        try:
            pointer = self.store.current_version(tenant)
        except StoreError as exc:
            return None, None, f"{problem or 'current catalog not loaded'}; pointer unreadable: {exc.message}"
        if pointer is not None and problem is None:
            log.error("tenant %s: current catalog %s not loadable, indexing from scratch", tenant, pointer)
            problem = f"current catalog {pointer} is missing, incomplete or expired, rebuilt from scratch"
        return None, pointer, problem

    def _holds(
        self, tenant: str, fresh: list[Tool], config: TenantConfig, previous: CatalogVersion | None
    ) -> Holds:
        """Apply the approval and poisoning-scan rules (:mod:`foldgate.index.holds`) to fresh listings."""
        if self.approvals is None:
            return Holds(published=list(fresh))
        approved, rejected = self.approvals.approved(tenant), self.approvals.rejected(tenant)
        holds = hold_unapproved(fresh, approved, config, previous, scan=self.scan, rejected=rejected)
        if holds.baseline:
            self.approvals.approve(tenant, holds.baseline)
        return holds

    async def index_server(self, tenant: str, config: TenantConfig, server: str) -> IndexReport:
        """Reindex one server of a tenant: only its entries may change in the new version (see
        ``index_tenant``'s ``only``). NotFoundError when the config has no enabled server of that name."""
        found = config.server(server)
        if found is None or not found.enabled:
            raise NotFoundError(f"tenant {tenant} has no enabled server {server!r}")
        return await self.index_scoped(tenant, config, {server})

    async def index_scoped(
        self, tenant: str, config: TenantConfig, servers: Collection[str], *, attempts: int = 3
    ) -> IndexReport:
        """``index_tenant(only=servers)``, run again on top of the winner when another run published
        first: change triggers of several servers of one tenant arrive together, and each must land
        (a full run may give up instead; its schedule comes round again)."""
        report = await self.index_tenant(tenant, config, only=servers)
        for _ in range(attempts - 1):
            if not report.conflict:
                break
            report = await self.index_tenant(tenant, config, only=servers)
        return report

    async def index_tenant(
        self, tenant: str, config: TenantConfig, *, only: Collection[str] | None = None
    ) -> IndexReport:
        """Index one tenant: list its enabled upstreams and publish a new version if anything changed.

        ``only`` names the servers to list (an upstream's change trigger); every other server's tools,
        status and holds are carried over from the current version untouched, in their order, so their
        indexed entries and vectors are reused as they are. Without a current version there is nothing
        to carry over and the whole tenant is indexed.
        """
        started = time.monotonic()
        previous, pointer, problem = self._load_previous(tenant)
        enabled = [s for s in config.servers if s.enabled]
        scope = set(only) if only is not None and previous is not None else None
        servers = enabled if scope is None else [s for s in enabled if s.name in scope]
        with calling_as(tenant):  # OAuth upstreams list with the tenant's shared connection
            listings = await self.list_servers(servers)
        now = time.time()
        old_by_server: dict[str, list[IndexedTool]] = {}
        if previous is not None:
            for t in previous.tools:
                old_by_server.setdefault(t.server, []).append(t)
        fresh: list[Tool] = []
        kept: list[Tool] = []
        failed: set[str] = set()
        statuses: dict[str, ServerStatus] = {}
        for server in servers:
            result = listings[server.name]
            old_status = previous.servers.get(server.name) if previous else None
            if isinstance(result, UpstreamError):
                failed.add(server.name)
                kept.extend(
                    t.tool for t in old_by_server.get(server.name, [])
                )  # the last good catalog serves
                statuses[server.name] = ServerStatus(
                    server.name,
                    False,
                    len(old_by_server.get(server.name, [])),
                    result.message,
                    now,
                    old_status.indexed_at if old_status else None,
                )
                log.warning(
                    "tenant %s: %s (kept %d tools)",
                    tenant,
                    result.message,
                    len(old_by_server.get(server.name, [])),
                )
                continue
            fresh.extend(tool_from_wire(server.name, raw) for raw in result.tools)
            statuses[server.name] = ServerStatus(
                server.name, True, len(result.tools), None, now, now, tuple(result.skipped), result.declared
            )
        untouched: set[str] = set()
        if scope is not None and previous is not None:
            untouched = {s.name for s in enabled if s.name not in scope}
            carried = {n: st for n, st in previous.servers.items() if n in untouched}
            statuses = {**carried, **statuses}
        approvals_error = None
        try:
            holds = self._holds(tenant, fresh, config, previous)
            offerings = await self._offerings(tenant, servers, listings, previous, config, carry=untouched)
        except StoreError as exc:
            # Without the approved hashes a changed tool cannot be told apart: publish nothing.
            holds, offerings, approvals_error = Holds(), OfferingHolds(), exc.message
        changed, withheld = carried_over(previous, failed | untouched)
        changed.update(holds.changed)
        withheld.update(holds.withheld)
        withheld.update(offerings.withheld)
        listed = kept + holds.published
        if scope is not None and previous is not None:
            listed = _in_place(previous, scope, untouched, listed)
        enrichments, enrich_report = None, None
        if self.enrichment is not None and approvals_error is None:
            enrichments, run = await self.enrichment.run(listed, previous, held=withheld.keys())
            enrich_report = run.to_doc()
        catalog = catalog_from_tools(
            tenant,
            listed,
            statuses,
            count=self.count,
            previous=previous,
            now=now,
            embedder=self.embedder,
            bare=config.bare_servers,
            enrichments=enrichments,
        )
        catalog = replace(
            catalog,
            config=config.model_dump(mode="json"),
            approvals=changed,
            withheld=withheld,
            offerings=offerings.items,
        )
        indexed = catalog.tools
        for t in indexed:
            if t.renamed is not None and t.renamed.startswith("bare name refused"):
                # The operator asked for this name; say which name it got instead, and why.
                log.warning("tenant %s: %s published as %s (%s)", tenant, t.tool.key, t.published, t.renamed)
        report = IndexReport(tenant, previous.version if previous else None, False, len(indexed))
        report.servers = {
            name: {
                "healthy": s.healthy,
                "tools": s.tool_count,
                "error": s.error,
                "skipped": [list(x) for x in s.skipped],
            }
            for name, s in statuses.items()
        }
        report.recovered = problem
        report.enrichment = enrich_report
        # Rejected content is held too, but an operator has decided on it: it awaits nobody.
        report.awaiting_approval = sum(1 for w in withheld.values() if w.get("state") != "rejected")
        report.flagged = sum(1 for w in withheld.values() if w.get("state") == "flagged")
        if approvals_error is not None:
            report.error = approvals_error
        elif previous is None or previous.fingerprint != catalog.fingerprint:
            expected = previous.version if previous is not None else pointer
            try:
                self.store.publish(catalog, expected_current=expected)
                report.version, report.changed = catalog.version, True
            except ConflictError as exc:
                report.error = exc.message  # another indexer won the race; its version is current
                report.conflict = True
            except StoreError as exc:
                report.error = exc.message
        report.unsafe_patterns = {
            t.published: found for t in indexed if (found := unsafe_patterns(t.tool.input_schema))
        }
        report.catalog_bytes = sum(len(t.full_fragment) + len(t.deferred_fragment) for t in indexed)
        report.duration_s = round(time.monotonic() - started, 4)
        return report
