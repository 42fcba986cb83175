"""Factories of the parts that let one stack serve many tenants: the instance's memory budget and the
request quotas across instances. Re-exported by :mod:`foldgate.app.wiring`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldgate.config.settings import Settings
from foldgate.config.source import ConfigSource
from foldgate.errors import FoldgateError
from foldgate.model.lru import MemoryBudget

if TYPE_CHECKING:
    from foldgate.config.tenant import RequestLimits
    from foldgate.edge.quota import Quotas
    from foldgate.store.quotas.base import QuotaStore

__all__ = ["open_memory", "open_quota_store", "open_quotas"]


def open_memory(settings: Settings) -> MemoryBudget:
    """The one memory budget of this instance's per-tenant caches (``FOLDGATE_CACHE_MB``)."""
    return MemoryBudget(settings.cache_mb * 1024 * 1024)


def open_quota_store(settings: Settings) -> QuotaStore:
    """The shared request-quota buckets, on the same backend (file or table) as the catalog."""
    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.quotas.dynamodb import DynamoQuotaStore

        return DynamoQuotaStore(settings.table_name)
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.store.quotas.sqlite import SqliteQuotaStore

    return SqliteQuotaStore(settings.sqlite_path)


def open_quotas(settings: Settings, configs: ConfigSource) -> Quotas:
    """Request quotas across instances for the tenants whose config sets ``limits:`` (a tenant without
    costs no store call)."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.edge.quota import Quotas

    def limits(tenant: str) -> RequestLimits | None:
        try:
            found = configs.get(tenant).limits
        except FoldgateError:
            return None  # an unknown or unreadable tenant is answered by the endpoint, not here
        if found.requests_per_minute is None and found.per_token_requests_per_minute is None:
            return None
        return found

    return Quotas(open_quota_store(settings), limits)
