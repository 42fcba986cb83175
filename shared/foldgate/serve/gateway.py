"""The gateway: per-caller views of the cached catalog, dispatched to the surface an endpoint serves.

Protocol-free: the edge calls these methods and maps results and errors to the wire. What each surface
lists and how it answers a call lives in :mod:`foldgate.serve.surfaces`; this module only caches
(catalogs, views, searchers) and routes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from foldgate.config.source import ConfigSource
from foldgate.config.tenant import TenantConfig
from foldgate.model.activity import NullRecorder, Recorder
from foldgate.model.catalog import CatalogVersion
from foldgate.model.listing import instructions_text
from foldgate.model.principal import Principal
from foldgate.serve.calls import ToolCaller, Upstream
from foldgate.serve.catalogs import CatalogCache
from foldgate.serve.offerings import Offered, offered
from foldgate.serve.paging import ResultPager
from foldgate.serve.recording import current
from foldgate.serve.searchers import SearcherCache
from foldgate.serve.surfaces.base import CallContext, Surface
from foldgate.serve.surfaces.code import CodeSurface
from foldgate.serve.surfaces.registry import ROUTED, build_surfaces
from foldgate.serve.views import TenantView, build_view
from foldgate.store.catalog.base import CatalogStore
from foldgate.telemetry.tracing import span

if TYPE_CHECKING:
    from foldgate.code.sandbox import Sandbox
    from foldgate.search.embed import Embedder

__all__ = ["Gateway"]

_MAX_VIEWS = 512  # views are per (caller scope, catalog version, config): bound the cache


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
    ) -> None:
        self.catalogs = (
            catalogs if isinstance(catalogs, CatalogCache) else CatalogCache(catalogs, ttl=catalog_ttl)
        )
        self.configs = configs
        self.caller = ToolCaller(upstream, arguments_key=arguments_key)
        self.searchers = SearcherCache(embedder, hybrid_weight=hybrid_weight)
        self.results = results
        self.surfaces: dict[str, Surface] = build_surfaces(sandbox)
        self._views: dict[tuple[Principal, str, str], TenantView] = {}
        self._lock = threading.Lock()
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
            key = (principal, catalog.version, config.fingerprint)
            view = self._views.get(key)
            traced.set(cached=view is not None)
            if view is None:
                view = build_view(catalog, config, principal)
                with self._lock:
                    # Keep only the newest view per caller scope: old versions and configs are garbage.
                    for stale in [k for k in self._views if k[0] == principal]:
                        del self._views[stale]
                    if len(self._views) >= _MAX_VIEWS:
                        self._views.pop(next(iter(self._views)))
                    self._views[key] = view
        return view

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
        """The surface's ``tools`` array as JSON text (pre-rendered; cached per view)."""
        return self.surfaces[self.surface_of(who, surface)].listing_json(self.view(who))

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
        handler = self.surfaces[self.surface_of(who, surface)]
        context = CallContext(self.view(who), self.caller, self.searchers, self.results)
        result = await handler.call(context, name, arguments)
        observed = current()
        if observed is not None:
            observed.answered(result)
        return result

    async def aclose(self) -> None:
        """Release what the surfaces hold (the agent-code worker)."""
        for surface in self.surfaces.values():
            await surface.aclose()
