"""The gateway: per-caller views of the cached catalog, dispatched to the surface an endpoint serves.

Protocol-free: the edge calls these methods and maps results and errors to the wire. What each surface
lists and how it answers a call lives in :mod:`foldgate.serve.surfaces`; this module only caches
(catalogs, views, searchers) and routes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from foldgate.config.source import ConfigSource
from foldgate.config.tenant import TenantConfig
from foldgate.errors import FoldgateError
from foldgate.model.activity import NullRecorder, Recorder
from foldgate.model.catalog import CatalogVersion
from foldgate.model.listing import instructions_text
from foldgate.model.lru import MemoryBudget
from foldgate.model.principal import Principal
from foldgate.serve.calls import ToolCaller, Upstream
from foldgate.serve.catalogs import CatalogCache
from foldgate.serve.offerings import Offered, offered
from foldgate.serve.paging import ResultPager
from foldgate.serve.recording import current
from foldgate.serve.results import error_result
from foldgate.serve.searchers import SearcherCache
from foldgate.serve.surfaces.base import CallContext, Surface
from foldgate.serve.surfaces.code import CodeSurface
from foldgate.serve.surfaces.registry import ROUTED, build_surfaces
from foldgate.serve.tasks import TASK_RESULT_FRAGMENT, TASK_RESULT_NAME, TaskService
from foldgate.serve.views import TenantView, build_view
from foldgate.store.catalog.base import CatalogStore
from foldgate.telemetry.tracing import span

if TYPE_CHECKING:
    from foldgate.code.sandbox import Sandbox
    from foldgate.search.embed import Embedder

__all__ = ["Gateway", "principal_tenant", "view_bytes"]

# A view's own memory (the catalog is counted with the catalog): per visible tool its plan decision,
# tier and index entries, plus the listings surfaces render into its memo (at most about every
# visible tool's full entry once per surface a caller lists).
_VIEW_BYTES_PER_TOOL = 600
_VIEW_LISTINGS = 2


def principal_tenant(who: str | Principal) -> str:
    """The tenant of a caller given either way."""
    return who.tenant if isinstance(who, Principal) else who


def view_bytes(view: TenantView) -> int:
    """The estimated memory of a view, from its visible tools' count and entry lengths."""
    entries = sum(len(t.full_fragment) for t in view.visible)
    return _VIEW_BYTES_PER_TOOL * len(view.visible) + _VIEW_LISTINGS * entries + 4096


class Gateway:
    """Serves tenants from a catalog store (or a shared :class:`CatalogCache` over one)."""

    def __init__(
        self,
        catalogs: CatalogStore | CatalogCache,
        configs: ConfigSource,
        upstream: Upstream,
        *,
        catalog_ttl: float = 5.0,
        results: ResultPager | None = None,
        embedder: Callable[[], Embedder] | None = None,
        hybrid_weight: float = 0.6,
        sandbox: Callable[[], Sandbox] | None = None,
        recorder: Recorder | None = None,
        arguments_key: Callable[[], bytes] | None = None,
        memory: MemoryBudget | None = None,
        tasks: TaskService | None = None,
    ) -> None:
        if isinstance(catalogs, CatalogCache):
            self.catalogs = catalogs
        else:
            self.catalogs = CatalogCache(catalogs, ttl=catalog_ttl, memory=memory)
        # One budget for every per-tenant cache of this instance: the catalog cache's.
        self.memory = self.catalogs.memory
        self.configs = configs
        self.caller = ToolCaller(upstream, arguments_key=arguments_key, memory=self.memory)
        self.searchers = SearcherCache(embedder, hybrid_weight=hybrid_weight, memory=self.memory)
        self.results = results
        # Durable tasks (serve/tasks.py): long calls continue in the background; None: they do not.
        self.tasks = tasks
        self.caller.tasks = tasks
        self._task_listings: dict[str, str] = {}
        self.surfaces: dict[str, Surface] = build_surfaces(sandbox)
        # By caller scope: (catalog version, config fingerprint, view); the newest per scope only.
        self._views = self.memory.shelf("view")
        # Where the edges hand what agents and operators did (the activity log); none by default.
        self.recorder: Recorder = recorder if recorder is not None else NullRecorder()

    @property
    def upstream(self) -> Upstream:
        """The upstream client calls are proxied through."""
        return self.caller.upstream

    def catalog(self, tenant: str) -> CatalogVersion | None:
        """The tenant's current catalog (None before its first index)."""
        return self.catalogs.get(tenant)

    def invalidate(self, tenant: str) -> None:
        """Forget the cached catalog pointer (a local reindex just published): re-read it next request."""
        self.catalogs.invalidate(tenant)

    def indexed_config(self, tenant: str) -> TenantConfig | None:
        """The config the tenant's current catalog was indexed with (the last good one), if any."""
        return self.catalogs.indexed_config(tenant)

    def config(self, tenant: str) -> TenantConfig:
        """The tenant's current config (cached by its source)."""
        return self.configs.get(tenant)

    def view(self, who: str | Principal) -> TenantView:
        """What this caller sees now (a bare tenant id sees everything); empty before the first index."""
        principal = who if isinstance(who, Principal) else Principal(who)
        tenant = principal.tenant
        with span("foldgate.view", tenant=tenant) as traced:
            config = self.config(tenant)
            catalog = self.catalog(tenant) or CatalogVersion(tenant, "none", 0.0, ())
            cached: tuple[str, str, TenantView] | None = self._views.get(principal)
            hit = cached is not None and cached[:2] == (catalog.version, config.fingerprint)
            traced.set(cached=hit)
            if cached is not None and hit:
                return cached[2]
            view = build_view(catalog, config, principal)
            # Replaces this scope's older view: old versions and configs are garbage.
            self._views.put(
                principal, (catalog.version, config.fingerprint, view), view_bytes(view), group=tenant
            )
        return view

    def tool_target(self, tenant: str, published: str) -> tuple[str, str] | None:
        """(server, upstream tool name) of a tenant's published tool name, as a served call's activity
        event names it; None when the tenant or the name is unknown (never raises)."""
        try:
            tool = self.view(tenant).resolve(published)
        except Exception:  # a refusal's record must not fail on a broken config or store
            return None
        return (tool.server, tool.tool.name) if tool is not None else None

    def memory_stats(self) -> dict[str, Any]:
        """This instance's cache budget, bytes held, hits, misses, hit rate and evictions (numbers)."""
        return self.memory.stats()

    @property
    def code(self) -> CodeSurface:
        """The code surface (it owns the agent-code worker, where this process runs one)."""
        surface = self.surfaces["code"]
        assert isinstance(surface, CodeSurface)
        return surface

    def surface_of(self, who: str | Principal, surface: str) -> str:
        """The concrete surface: ``routed`` follows the tenant's routing_mode."""
        if surface != ROUTED:
            return surface
        tenant = who.tenant if isinstance(who, Principal) else who
        mode = self.config(tenant).routing_mode
        if mode == "code_execution":
            # Where this process runs no agent code (the cloud's McpFunction), /mcp/code serves it.
            return "code" if self.code.can_run else "call"
        return "call" if mode == "retrieve_tools" else "direct"

    def listing_json(self, who: str | Principal, surface: str) -> str:
        """The surface's ``tools`` array as JSON text (pre-rendered; cached per view), with
        ``task_result`` last on the direct and search surfaces where a sync window applies (a call
        past it continues in the background and answers a key that tool fetches the result with)."""
        concrete = self.surface_of(who, surface)
        listing = self.surfaces[concrete].listing_json(self.view(who))
        if (
            self.tasks is None
            or concrete == "code"
            or not self.tasks.windowed(self.config(principal_tenant(who)))
        ):
            return listing
        return self._with_task_result(listing)

    def _with_task_result(self, listing: str) -> str:
        extended = self._task_listings.get(listing)
        if extended is None:
            extended = (
                f"{listing[:-1]},{TASK_RESULT_FRAGMENT}]" if listing != "[]" else f"[{TASK_RESULT_FRAGMENT}]"
            )
            if len(self._task_listings) > 64:  # old views' listings are garbage
                self._task_listings.clear()
            self._task_listings[listing] = extended
        return extended

    def instructions(self, who: str | Principal, surface: str) -> str:
        """``initialize`` instructions: the operator's text, else the surface's default, then the legend."""
        view = self.view(who)
        default = self.surfaces[self.surface_of(who, surface)].instructions
        if default is None or view.config.instructions:
            return view.instructions
        return instructions_text(default)

    def offerings(self, who: str | Principal, surface: str) -> Offered:
        """The caller's prompts, resources and templates: served on the direct surface only (the search
        and code surfaces expose tools; their agents reach everything else through /mcp/all)."""
        view = self.view(who)
        if self.surface_of(who, surface) != "direct":
            return Offered(view, {}, {}, (), ())
        return offered(view)

    def list_hint(self) -> tuple[int, Literal["public", "private"]]:
        """``(ttlMs, cacheScope)`` for list results (2026-07-28). ttlMs: this instance re-reads the
        catalog pointer and the config at most that often, so a listing is no staler than what it
        would serve anyway within that bound. cacheScope is always ``private``: every listing depends
        on who calls (the tenant, from a token or a header, and the token's server and tier scope),
        so a cache shared across callers could hand one caller another's tools."""
        seconds = min(self.catalogs.ttl, float(getattr(self.configs, "max_age", self.catalogs.ttl)))
        return max(0, int(seconds * 1000)), "private"

    async def call(
        self, who: str | Principal, name: str, arguments: Any, surface: str = "direct"
    ) -> dict[str, Any]:
        """Handle a tools/call on a surface; always returns a CallToolResult wire dict.

        The running request's observation (:mod:`foldgate.serve.recording`) learns how the call
        ended, on whichever surface and whatever answered it."""
        concrete = self.surface_of(who, surface)
        if self.tasks is not None and concrete != "code" and name == TASK_RESULT_NAME:
            result = self._task_result(who, arguments)
        else:
            context = CallContext(self.view(who), self.caller, self.searchers, self.results)
            result = await self.surfaces[concrete].call(context, name, arguments)
        observed = current()
        if observed is not None:
            observed.answered(result)
        return result

    def _task_result(self, who: str | Principal, arguments: Any) -> dict[str, Any]:
        """``task_result``: a call that continued in the background, for the caller that made it."""
        assert self.tasks is not None
        principal = who if isinstance(who, Principal) else Principal(who)
        try:
            return self.tasks.result_of(principal, arguments)
        except FoldgateError as exc:
            return error_result(exc)

    async def aclose(self) -> None:
        """Release what the surfaces hold (the agent-code worker) and stop calls still running here."""
        if self.tasks is not None:
            await self.tasks.aclose()
        for surface in self.surfaces.values():
            await surface.aclose()
