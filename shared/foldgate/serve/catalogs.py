"""Per-instance cache of each tenant's current catalog version and the config it was indexed with.

The pointer is re-read at most every ``ttl`` seconds, so a new version is picked up within that bound;
catalogs themselves are immutable per version. They are kept on the instance's memory budget
(:mod:`foldgate.model.lru`): a tenant not served for a while is evicted, with the views and searchers
built on its catalog, and read back from the store on its next request.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from foldgate.config.tenant import TenantConfig, parse_tenant_config
from foldgate.errors import ConfigError, StoreError
from foldgate.model.catalog import CatalogVersion
from foldgate.model.lru import MemoryBudget, collect_young, text_bytes
from foldgate.store.catalog.base import CatalogStore

__all__ = ["CatalogCache", "catalog_bytes"]

log = logging.getLogger(__name__)

# Measured with tracemalloc over corpus catalogs of 50-500 tools (decode of a stored version): a
# loaded catalog holds ~4.3-5.3 bytes per character of its two rendered entries per tool (the parsed
# schema, the tool's fields and the entries themselves), the rest per tool is covered by the constant.
_BYTES_PER_FRAGMENT_CHAR = 5
_BYTES_PER_TOOL = 400
# A parsed config (pydantic models) against its JSON text.
_BYTES_PER_CONFIG_CHAR = 8


def catalog_bytes(catalog: CatalogVersion) -> int:
    """The estimated memory of a loaded catalog version: from its entries' lengths and tool count,
    plus the stored search and dense documents (strings, counted at their length)."""
    chars = sum(len(t.full_fragment) + len(t.deferred_fragment) for t in catalog.tools)
    docs = 0
    for doc in (catalog.search, catalog.dense):
        if doc is not None:
            docs += text_bytes(*(v for v in doc.values() if isinstance(v, str)))
            docs += sum(96 * len(v) for v in doc.values() if isinstance(v, list))
    config = _BYTES_PER_CONFIG_CHAR * len(json.dumps(catalog.config)) if catalog.config else 0
    return _BYTES_PER_FRAGMENT_CHAR * chars + _BYTES_PER_TOOL * len(catalog.tools) + docs + config + 4096


@dataclass
class _Cached:
    catalog: CatalogVersion
    checked: float


class CatalogCache:
    """Tenants' current catalogs, read through from a store, held within a memory budget."""

    def __init__(self, store: CatalogStore, *, ttl: float = 5.0, memory: MemoryBudget | None = None) -> None:
        self.store = store
        self.ttl = ttl
        self.memory = memory if memory is not None else MemoryBudget()
        # A tenant's catalog anchors its group: evicting it drops the tenant's views and searchers.
        self._catalogs = self.memory.shelf("catalog")
        self._indexed_configs = self.memory.shelf("indexed_config")

    def get(self, tenant: str) -> CatalogVersion | None:
        """The tenant's current catalog (None before its first index)."""
        now = time.monotonic()
        cached: _Cached | None = self._catalogs.get(tenant)
        if cached is not None and now - cached.checked < self.ttl:
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
        self._catalogs.put(tenant, _Cached(catalog, now), catalog_bytes(catalog), group=tenant, anchor=True)
        collect_young()  # the decode's objects, collected on this (cold) request
        return catalog

    def invalidate(self, tenant: str) -> None:
        """Forget the cached pointer (a local reindex just published): re-read it on the next request."""
        self._catalogs.pop(tenant)

    def indexed_config(self, tenant: str) -> TenantConfig | None:
        """The config the tenant's current catalog was indexed with (its last good one), if any."""
        catalog = self.get(tenant)
        if catalog is None or catalog.config is None:
            return None
        cached: tuple[str, TenantConfig] | None = self._indexed_configs.get(tenant)
        if cached is not None and cached[0] == catalog.version:
            return cached[1]
        try:
            config = parse_tenant_config(catalog.config, source=f"catalog {catalog.version}")
        except ConfigError as exc:
            log.error("tenant %s: stored config unusable: %s", tenant, exc.message)
            return None
        size = _BYTES_PER_CONFIG_CHAR * len(json.dumps(catalog.config)) + 1024
        self._indexed_configs.put(tenant, (catalog.version, config), size, group=tenant)
        return config
