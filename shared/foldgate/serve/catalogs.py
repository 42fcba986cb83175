"""Per-instance cache of each tenant's current catalog version and the config it was indexed with.

The pointer is re-read at most every ``ttl`` seconds, so a new version is picked up within that bound;
catalogs themselves are immutable per version and kept until a newer one replaces them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from foldgate.config.tenant import TenantConfig, parse_tenant_config
from foldgate.errors import ConfigError, StoreError
from foldgate.model.catalog import CatalogVersion
from foldgate.store.catalog.base import CatalogStore

__all__ = ["CatalogCache"]

log = logging.getLogger(__name__)


@dataclass
class _Cached:
    catalog: CatalogVersion
    checked: float


class CatalogCache:
    """Tenants' current catalogs, read through from a store."""

    def __init__(self, store: CatalogStore, *, ttl: float = 5.0) -> None:
        self.store = store
        self.ttl = ttl
        self._catalogs: dict[str, _Cached] = {}
        self._indexed_configs: dict[str, tuple[str, TenantConfig]] = {}

    def get(self, tenant: str) -> CatalogVersion | None:
        """The tenant's current catalog (None before its first index)."""
        now = time.monotonic()
        cached = self._catalogs.get(tenant)
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
        self._catalogs[tenant] = _Cached(catalog, now)
        return catalog

    def invalidate(self, tenant: str) -> None:
        """Forget the cached pointer (a local reindex just published): re-read it on the next request."""
        self._catalogs.pop(tenant, None)

    def indexed_config(self, tenant: str) -> TenantConfig | None:
        """The config the tenant's current catalog was indexed with (its last good one), if any."""
        catalog = self.get(tenant)
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
