"""Tenant configs from the table (the ``table`` config source): one document per tenant, servers
inline, written by ``foldgate tenant apply`` and listed by the tenant registry
(:mod:`foldgate.store.configs`). Upstream secrets stay SecureString parameters under
``{prefix}/tenants/{tenant}/secrets/`` and are resolved exactly as for the Parameter Store source.

Reads are cached ``max_age`` seconds per tenant (a change applies on the next request after that,
with no redeploy), unknown tenants too, so a flood of made-up tenant names costs one read per name per
``max_age``; at most ``max_tenants`` tenants' revisions are remembered, least recently used dropped
first. Parsed configs live on the instance's memory budget (``FOLDGATE_CACHE_MB``) with every other
per-tenant cache: one evicted is read and parsed again. A document that fails validation keeps the
tenant's last good config, as in every cloud source.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from foldgate.config.cloud import CloudConfigSource, parse_cloud_config, tenant_path
from foldgate.config.tenant import TenantConfig
from foldgate.errors import ConfigError, NotFoundError, StoreError
from foldgate.model.lru import MemoryBudget
from foldgate.store.configs.base import StoredConfig, TenantConfigStore

__all__ = ["TableConfigSource"]


@dataclass
class _Entry:
    fetched_at: float
    # The revision read then (None: no such tenant). The parsed config itself lives on the instance's
    # memory budget (CloudConfigSource._recall), never here: this cache is a few dozen bytes a tenant.
    revision: str | None
    # Why that revision's document was refused (read again only after ``max_age``, like any other).
    error: str | None = None


class TableConfigSource(CloudConfigSource):
    """Tenant configs read from a :class:`TenantConfigStore`, cached ``max_age`` seconds."""

    def __init__(
        self,
        store: TenantConfigStore,
        prefix: str,
        *,
        max_age: float = 30.0,
        fallback: Callable[[str], TenantConfig | None] | None = None,
        max_tenants: int = 4096,
        clock: Callable[[], float] = time.monotonic,
        memory: MemoryBudget | None = None,
    ) -> None:
        if not prefix.startswith("/"):
            raise ConfigError(f"config prefix {prefix!r} must start with '/'")
        super().__init__(fallback, memory)
        self.store = store
        self.prefix = prefix.rstrip("/")
        self.max_age = max(0.0, float(max_age))
        self.max_tenants = max(1, max_tenants)
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def _fresh(self, tenant: str, force: bool) -> _Entry | None:
        """The tenant's entry if read within ``max_age`` (and not forced), now the most recent."""
        with self._lock:
            entry = self._entries.get(tenant)
            if entry is None or force or self._clock() - entry.fetched_at >= self.max_age:
                return None
            self._entries.move_to_end(tenant)
            return entry

    def _fetch(self, tenant: str, force: bool) -> StoredConfig | None:
        try:
            # A change trigger (force) must see the write that fired it.
            stored = self.store.get(tenant, consistent=force)
        except StoreError as exc:
            # Keeps the tenant's last good config (the caller's rule for ConfigError).
            raise ConfigError(f"cannot read the config of {tenant!r}: {exc.message}") from exc
        with self._lock:
            self._entries[tenant] = _Entry(self._clock(), stored.revision if stored else None)
            self._entries.move_to_end(tenant)
            while len(self._entries) > self.max_tenants:
                self._entries.popitem(last=False)
        return stored

    def _read(self, tenant: str, force: bool) -> TenantConfig:
        entry = self._fresh(tenant, force)
        if entry is not None:
            if entry.revision is None:
                raise NotFoundError(f"unknown tenant {tenant!r}")
            if entry.error is not None:
                raise ConfigError(entry.error)
            known = self._recall(tenant, entry.revision)
            if known is not None:
                return known
            # Evicted from the memory budget: read the document again.
        stored = self._fetch(tenant, force)
        if stored is None:
            raise NotFoundError(f"unknown tenant {tenant!r}")
        known = self._recall(tenant, stored.revision)
        if known is not None:
            return known  # the same revision: the same object, so views keyed on it stay cached
        try:
            config = parse_cloud_config(stored.doc, tenant_path(self.prefix, tenant))
        except ConfigError as exc:
            with self._lock:
                held = self._entries.get(tenant)
                if held is not None and held.revision == stored.revision:
                    held.error = exc.message
            raise
        self._remember(tenant, stored.revision, config, len(json.dumps(stored.doc, default=str)))
        return config

    def tenants(self) -> list[str]:
        """Every tenant in the registry (one Query per ~12,800 tenants)."""
        return self.store.tenants()
