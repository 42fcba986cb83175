"""The gateway service: per-tenant views of the cached catalog, describe_tool and validated calls.

Protocol-free: the MCP and HTTP layers call these methods and map results and errors to the wire.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from foldgate.call_surface import (
    CALL_INSTRUCTIONS,
    CALL_VARIANTS,
    READ_CACHE_NAME,
    RETRIEVE_TOOLS_NAME,
    VARIANT_OF,
    call_surface_listing,
    hit_entry,
    parse_call_arguments,
    parse_read_cache_arguments,
    parse_retrieve_arguments,
)
from foldgate.code_runner import CodeRunner
from foldgate.code_surface import CODE_INSTRUCTIONS, CODE_TOOL_NAME
from foldgate.config import TenantConfig, parse_tenant_config
from foldgate.config_source import ConfigSource
from foldgate.describe import describe_tools, parse_describe_arguments
from foldgate.errors import (
    ConfigError,
    FoldgateError,
    InvalidRequestError,
    NotFoundError,
    StoreError,
    ToolChangedError,
    ToolPendingApprovalError,
    UpstreamError,
    WrongVariantError,
)
from foldgate.indexed import CatalogVersion, IndexedTool
from foldgate.listing import instructions_text
from foldgate.principal import Principal
from foldgate.result_cache import ResultPager
from foldgate.store.base import CatalogStore
from foldgate.upstream import UpstreamClient
from foldgate.validation import ValidatorCache
from foldgate.views import DESCRIBE_TOOL_NAME, TenantView, build_view

if TYPE_CHECKING:
    from foldgate.code.sandbox import Sandbox
    from foldgate.search import SearchHit
    from foldgate.search.embed import Embedder


class Searcher(Protocol):
    """Lexical or hybrid search over one catalog version."""

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        """The best ``limit`` allowed tools for the query."""
        ...


__all__ = ["SURFACES", "Gateway", "error_result", "json_result"]

_AWAITS = "awaits an operator's approval before it can be called"
_MAX_VIEWS = 512  # views are per (caller scope, catalog version, config): bound the cache

# Surfaces an endpoint can serve; "routed" (POST /mcp) follows the tenant's routing_mode.
SURFACES = ("direct", "call", "routed")

log = logging.getLogger(__name__)

HINT = "Call describe_tool with this tool's id for its full definition, then retry with valid arguments."


def json_result(body: dict[str, Any], *, is_error: bool = False) -> dict[str, Any]:
    """A CallToolResult (wire dict) carrying a JSON body as text and as structured content."""
    return {
        "content": [{"type": "text", "text": json.dumps(body, ensure_ascii=False)}],
        "structuredContent": body,
        "isError": is_error,
    }


def error_result(error: FoldgateError, **extra: Any) -> dict[str, Any]:
    """A tool-level error result: the message, a stable error_type and any extra fields."""
    return json_result({"error": error.message, "error_type": error.code, **extra}, is_error=True)


@dataclass
class _Cached:
    catalog: CatalogVersion
    checked: float


class Gateway:
    """Serves tenants from a catalog store. Catalogs are cached in memory by version; the pointer is
    re-read at most every ``catalog_ttl`` seconds, so a new version is picked up within that bound."""

    def __init__(
        self,
        store: CatalogStore,
        configs: ConfigSource,
        upstream: UpstreamClient,
        *,
        catalog_ttl: float = 5.0,
        results: ResultPager | None = None,
        embedder: Callable[[], Embedder] | None = None,
        hybrid_weight: float = 0.6,
        sandbox: Callable[[], Sandbox] | None = None,
    ) -> None:
        self.store = store
        # The code surface; without a sandbox (the cloud's McpFunction) it lists no code tool.
        self.code = CodeRunner(self, sandbox)
        self.results = results
        self.embedder = embedder
        self.hybrid_weight = hybrid_weight
        self.configs = configs
        self.upstream = upstream
        self.catalog_ttl = catalog_ttl
        self.validators = ValidatorCache()
        self._catalogs: dict[str, _Cached] = {}
        self._views: dict[tuple[Principal, str, int], TenantView] = {}
        self._indexed_configs: dict[str, tuple[str, TenantConfig]] = {}
        self._search: dict[str, tuple[str, Searcher]] = {}
        self._call_listings: dict[int, str] = {}
        self._lock = threading.Lock()

    def catalog(self, tenant: str) -> CatalogVersion | None:
        """The tenant's current catalog (None before its first index)."""
        now = time.monotonic()
        cached = self._catalogs.get(tenant)
        if cached is not None and now - cached.checked < self.catalog_ttl:
            return cached.catalog
        try:
            version = self.store.current_version(tenant)
        except StoreError as exc:
            if cached is None:
                raise
            # The store is unreachable: keep serving what this instance already holds.
            log.warning("tenant %s: serving cached catalog %s: %s", tenant, cached.catalog.version, exc)
            return cached.catalog
        if version is None:
            return None
        if cached is not None and cached.catalog.version == version:
            cached.checked = now
            return cached.catalog
        catalog = self.store.load_version(tenant, version)
        if catalog is None:
            return cached.catalog if cached else None
        self._catalogs[tenant] = _Cached(catalog, now)
        return catalog

    def invalidate(self, tenant: str) -> None:
        """Forget the cached catalog pointer (a local reindex just published): re-read it next request."""
        self._catalogs.pop(tenant, None)

    def indexed_config(self, tenant: str) -> TenantConfig | None:
        """The config the tenant's current catalog was indexed with (the last good one), if any."""
        catalog = self.catalog(tenant)
        if catalog is None or catalog.config is None:
            return None
        cached = self._indexed_configs.get(tenant)
        if cached is not None and cached[0] == catalog.version:
            return cached[1]
        try:
            config = parse_tenant_config(catalog.config, source=f"catalog {catalog.version}")
        except ConfigError as exc:
            log.error("tenant %s: stored config unusable: %s", tenant, exc.message)
            return None
        self._indexed_configs[tenant] = (catalog.version, config)
        return config

    def config(self, tenant: str) -> TenantConfig:
        """The tenant's current config (cached by its source)."""
        return self.configs.get(tenant)

    def view(self, who: str | Principal) -> TenantView:
        """What this caller sees now (a bare tenant id sees everything); empty before the first index."""
        principal = who if isinstance(who, Principal) else Principal(who)
        tenant = principal.tenant
        config = self.config(tenant)
        catalog = self.catalog(tenant) or CatalogVersion(tenant, "none", 0.0, ())
        key = (principal, catalog.version, id(config))
        view = self._views.get(key)
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

    def surface_of(self, who: str | Principal, surface: str) -> str:
        """The concrete surface: ``routed`` follows the tenant's routing_mode."""
        if surface != "routed":
            return surface
        tenant = who.tenant if isinstance(who, Principal) else who
        mode = self.config(tenant).routing_mode
        if mode == "code_execution":
            # Where this process runs no agent code (the cloud's McpFunction), /mcp/code serves it.
            return "code" if self.code.can_run else "call"
        return "call" if mode == "retrieve_tools" else "direct"

    def listing_json(self, who: str | Principal, surface: str) -> str:
        """The surface's ``tools`` array as JSON text (pre-rendered; cached per view)."""
        view = self.view(who)
        concrete = self.surface_of(who, surface)
        if concrete == "direct":
            return view.listing_json
        if concrete == "code":
            return self.code.listing_json(view)
        limit = view.config.tools_limit
        listing = self._call_listings.get(limit)
        if listing is None:
            listing = self._call_listings[limit] = call_surface_listing(limit)
        return listing

    def instructions(self, who: str | Principal, surface: str) -> str:
        """``initialize`` instructions: the operator's text, else the surface's default, then the legend."""
        view = self.view(who)
        concrete = self.surface_of(who, surface)
        if concrete == "direct" or view.config.instructions:
            return view.instructions
        return instructions_text(CODE_INSTRUCTIONS if concrete == "code" else CALL_INSTRUCTIONS)

    def searcher(self, catalog: CatalogVersion) -> Searcher:
        """The catalog's search, loaded once per version: hybrid (lexical + dense) when the catalog has
        vectors and the embedding provider matches them, else lexical (built here only for old catalogs)."""
        cached = self._search.get(catalog.tenant)
        if cached is not None and cached[0] == catalog.version:
            return cached[1]
        from foldgate.search import IndexFormatError, SearchIndex, build_search_index
        from foldgate.search.multi import MultiIntentSearcher

        lexical = None
        if catalog.search is not None:
            try:
                lexical = SearchIndex.from_doc(catalog.search)
            except IndexFormatError as exc:
                log.error("tenant %s: stored search index unreadable: %s", catalog.tenant, exc)
        if lexical is None:
            lexical = build_search_index([t.tool for t in catalog.tools])
        searcher: Searcher = lexical
        if catalog.dense is not None and self.embedder is not None:
            # numpy and the encoder load on the first search that needs them, not at init.
            from foldgate.search.dense import DenseIndex
            from foldgate.search.hybrid import HybridSearcher

            try:
                dense = DenseIndex.from_doc(catalog.dense)
                searcher = HybridSearcher(lexical, dense, self.embedder(), weight=self.hybrid_weight)
            except IndexFormatError as exc:
                log.error("tenant %s: stored dense index unreadable: %s", catalog.tenant, exc)
        # Multi-need requests are searched need by need (foldgate.search.multi); one need: unchanged.
        searcher = MultiIntentSearcher(searcher)
        self._search[catalog.tenant] = (catalog.version, searcher)
        return searcher

    async def call(
        self, who: str | Principal, name: str, arguments: Any, surface: str = "direct"
    ) -> dict[str, Any]:
        """Handle a tools/call on a surface; always returns a CallToolResult wire dict."""
        concrete = self.surface_of(who, surface)
        if concrete == "code":
            return await self._code_surface(who, name, arguments)
        if concrete == "call":
            return await self._call_surface(who, name, arguments)
        view = self.view(who)
        if name == DESCRIBE_TOOL_NAME:
            try:
                ids, check = parse_describe_arguments(arguments if arguments is not None else {})
            except InvalidRequestError as exc:
                return error_result(exc)
            return json_result(describe_tools(view, ids, check))
        tool = view.resolve(name)
        if tool is None:
            return error_result(
                NotFoundError(f"unknown tool: {name}"), hint="tools/list shows every callable tool"
            )
        return await self.call_tool(view, tool, arguments)

    def check_arguments(self, tool: IndexedTool, arguments: Any) -> dict[str, Any] | None:
        """The self-healing error result when arguments fail the real schema, None when they pass."""
        if arguments is None:
            arguments = {}
        schema = tool.tool.input_schema
        if not isinstance(arguments, dict):
            detail = f"arguments must be a JSON object, got {type(arguments).__name__}"
        else:
            errors = self.validators.errors(tool.tool.content_hash, schema, arguments)
            if not errors:
                return None  # valid, or the schema is uncompilable (fail-open, counted)
            detail = "; ".join(errors)
        return json_result(
            {
                "error": f"invalid arguments for {tool.published}: {detail}",
                "error_type": "invalid_params",
                "tool": tool.published,
                "input_schema": schema,
                "hint": HINT,
            },
            is_error=True,
        )

    async def call_tool(self, view: TenantView, tool: IndexedTool, arguments: Any) -> dict[str, Any]:
        """Validate against the stored schema, then proxy to the tool's upstream."""
        awaiting = view.approval(tool)
        if awaiting is not None:
            # Listed and describable, never callable until an operator approves this exact version.
            what = "is new and awaits" if awaiting == "pending" else "changed upstream and awaits"
            unavailable = ToolPendingApprovalError if awaiting == "pending" else ToolChangedError
            return error_result(
                unavailable(f"{tool.published} {what} an operator's approval before it can be called")
            )
        invalid = self.check_arguments(tool, arguments)
        if invalid is not None:
            return invalid
        server = view.config.server(tool.server)
        if server is None:  # visibility already requires a configured server
            return error_result(NotFoundError(f"unknown tool: {tool.published}"))
        try:
            return await self.upstream.call_tool(server, tool.tool.name, arguments or {})
        except UpstreamError as exc:
            log.warning("tenant %s: %s", view.catalog.tenant, exc.message)
            return error_result(exc, tool=tool.published)

    async def _code_surface(self, who: str | Principal, name: str, arguments: Any) -> dict[str, Any]:
        view = self.view(who)
        if name == CODE_TOOL_NAME and self.code.can_run and view.config.code_execution.enabled:
            try:
                return await self.code.run(view, arguments)
            except FoldgateError as exc:
                return error_result(exc)
        if name in (RETRIEVE_TOOLS_NAME, DESCRIBE_TOOL_NAME):
            return await self._call_surface(who, name, arguments)
        return error_result(
            NotFoundError(f"unknown tool: {name}"),
            hint="this surface's tools are code_execution, retrieve_tools and describe_tool",
        )

    async def _call_surface(self, who: str | Principal, name: str, arguments: Any) -> dict[str, Any]:
        view = self.view(who)
        try:
            if name == RETRIEVE_TOOLS_NAME:
                return json_result(self._retrieve(view, arguments))
            if name in CALL_VARIANTS:
                return await self._call_variant(view, name, arguments)
            if name == DESCRIBE_TOOL_NAME:
                ids, check = parse_describe_arguments(arguments if arguments is not None else {})
                return json_result(describe_tools(view, ids, check))
            if name == READ_CACHE_NAME:
                return json_result(self._read_cache(view, arguments))
        except FoldgateError as exc:
            return error_result(exc)
        return error_result(
            NotFoundError(f"unknown tool: {name}"),
            hint="find tools with retrieve_tools, then call them with the call_tool_* variant it names",
        )

    def _retrieve(self, view: TenantView, arguments: Any) -> dict[str, Any]:
        request = parse_retrieve_arguments(arguments, view.config.tools_limit)

        def allowed(key: str) -> bool:
            tool = view.resolve(key)  # visibility first: nothing invisible is ever scored into a page
            return tool is not None and request.admits(tool)

        from foldgate.search.multi import intents_answer, search_with_intents

        searcher = self.searcher(view.catalog)
        hits, groups = search_with_intents(searcher, request.query, limit=request.limit, allowed=allowed)
        resolved = [(h, t) for h in hits if (t := view.resolve(h.key))]
        body: dict[str, Any] = {
            "query": request.query,
            "tools": [hit_entry(t, h.score, full=request.full) for h, t in resolved],
        }
        if groups:
            names = {h.key: t.published for h, t in resolved}
            body["intents"] = intents_answer(hits, groups, names.get)
        if not hits:
            body["hint"] = "no tool matched; try other words or fewer filters"
        return body

    async def _call_variant(self, view: TenantView, variant: str, arguments: Any) -> dict[str, Any]:
        tool_name, tool_args = parse_call_arguments(variant, arguments)
        tool = view.resolve(tool_name)
        if tool is None:
            raise NotFoundError(f"unknown tool: {tool_name}")
        if tool.tier != CALL_VARIANTS[variant]:
            right = VARIANT_OF[tool.tier]
            message = f"{tool.published} is a {tool.tier} tool: call it with {right}, not {variant}"
            return error_result(WrongVariantError(message), call_with=right)
        result = await self.call_tool(view, tool, tool_args)
        if self.results is None:
            return result
        return self.results.truncate(
            result, limit=view.config.tool_response_limit, stamp=view.principal.stamp
        )

    def _read_cache(self, view: TenantView, arguments: Any) -> dict[str, Any]:
        key, offset, limit = parse_read_cache_arguments(arguments, view.config.tool_response_limit)
        if self.results is None:
            raise NotFoundError("no cached result for this key (it may have expired)")
        return self.results.read(key, offset, limit, stamp=view.principal.stamp)
