"""Tenant configs from the table (the ``table`` config source): one document per tenant, servers
inline, written by ``foldgate tenant apply`` and listed by the tenant registry
(:mod:`foldgate.store.configs`). Upstream secrets stay SecureString parameters under
``{prefix}/tenants/{tenant}/secrets/`` and are resolved exactly as for the Parameter Store source.

Reads are cached ``max_age`` seconds per tenant (a change applies on the next request after that,
with no redeploy), unknown tenants too, so a flood of made-up tenant names costs one read per name per
``max_age``; at most ``max_tenants`` tenants are remembered, least recently used dropped first. A
document that fails validation keeps the tenant's last good config, as in every cloud source.
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
    stored: StoredConfig | None
    # The parsed config of ``stored`` (same revision, same object: views keyed on it stay cached).
    config: TenantConfig | None = None


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

    def _entry(self, tenant: str, force: bool) -> _Entry:
        now = self._clock()
        with self._lock:
            entry = self._entries.get(tenant)
            if entry is not None and not force and now - entry.fetched_at < self.max_age:
                self._entries.move_to_end(tenant)
                return entry
        try:
            # A change trigger (force) must see the write that fired it.
            stored = self.store.get(tenant, consistent=force)
        except StoreError as exc:
            # Keeps the tenant's last good config (the caller's rule for ConfigError).
            raise ConfigError(f"cannot read the config of {tenant!r}: {exc.message}") from exc
        with self._lock:
            kept = entry.config if entry is not None and _same(entry.stored, stored) else None
            fresh = _Entry(now, stored, kept)
            self._entries[tenant] = fresh
            self._entries.move_to_end(tenant)
            while len(self._entries) > self.max_tenants:
                self._entries.popitem(last=False)
        return fresh

    def _read(self, tenant: str, force: bool) -> TenantConfig:
        entry = self._entry(tenant, force)
        if entry.stored is None:
            raise NotFoundError(f"unknown tenant {tenant!r}")
        if entry.config is None:
            entry.config = parse_cloud_config(entry.stored.doc, tenant_path(self.prefix, tenant))
            # The last good config, on the memory budget (sized by its document's JSON length).
            size = len(json.dumps(entry.stored.doc, default=str))
            self._remember(tenant, entry.stored.revision, entry.config, size)
        return entry.config

    def tenants(self) -> list[str]:
        """Every tenant in the registry (one Query per ~12,800 tenants)."""
        return self.store.tenants()


def _same(old: StoredConfig | None, new: StoredConfig | None) -> bool:
    return old is not None and new is not None and old.revision == new.revision
