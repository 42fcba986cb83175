"""The cloud freshness check: list every server cheaply, reindex only those whose listing changed.

The EventBridge freshness schedule (``FreshnessSchedule``, default every 5 minutes) sends
``{"action": "freshness"}``. Per enabled server the check lists its tools and compares a fingerprint
of the listing (each tool's canonical key and content hash) with what the current catalog version
recorded for that server: the published tools' hashes, and for held tools the held content's hash (a
rug pull waiting for approval is not a change again every five minutes). Only servers that differ,
that are new, or whose health flipped get a server-scoped reindex; nothing else is published. The
warm instance keeps each tenant's current version, so an unchanged tenant costs one pointer read and
one read of that version's manifest (two strongly consistent GetItems of small items: 2 read request
units) per run besides the listings; the manifest read notices a version that vanished or expired
under the pointer, which is then rebuilt whole rather than left for serving instances that cannot
load it.

An upstream's ``ttlMs`` hint on its listing is honoured: the server is not listed again until it
expires (capped at a day). The memory of hints is the warm instance's own; a cold instance lists
everything once, which is always safe.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import Final

from foldgate.config.tenant import TenantConfig
from foldgate.errors import StoreError, UpstreamError
from foldgate.index.indexer import Indexer, IndexReport
from foldgate.model.catalog import CatalogVersion
from foldgate.model.tool import tool_from_wire
from foldgate.upstream.client import Listing

__all__ = ["FreshnessCheck", "listed_fingerprint", "recorded_fingerprint"]

log = logging.getLogger(__name__)

_MAX_TTL_S: Final = 86_400.0
_MAX_HINTS: Final = 100_000


def _digest(pairs: dict[str, str]) -> str:
    text = "\n".join(f"{k}\t{v}" for k, v in sorted(pairs.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def listed_fingerprint(server: str, listing: Listing) -> str:
    """Fingerprint of a fresh listing: canonical key -> content hash of every tool."""
    tools = (tool_from_wire(server, raw) for raw in listing.tools)
    return _digest({t.key: t.content_hash for t in tools})


def recorded_fingerprint(catalog: CatalogVersion, server: str) -> str:
    """The same fingerprint for what ``catalog`` recorded of the server (held content by its hash).
    Held prompts (entries with a ``kind``) are not tools: the tools listing cannot vouch for them."""
    pairs = {t.tool.key: t.tool.content_hash for t in catalog.tools if t.server == server}
    for key, held in catalog.withheld.items():
        if held.get("server") == server and "kind" not in held and isinstance(held.get("hash"), str):
            pairs[key] = held["hash"]
    return _digest(pairs)


class FreshnessCheck:
    """Checks tenants against their current versions; remembers upstream ``ttlMs`` hints."""

    def __init__(self, indexer: Indexer, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.indexer = indexer
        self._clock = clock
        self._fresh_until: dict[tuple[str, str], float] = {}
        self._catalogs: dict[str, CatalogVersion] = {}
        self.listed = 0  # servers listed over the check's life (observability and tests)

    async def _changed(self, tenant: str, config: TenantConfig, current: CatalogVersion) -> list[str]:
        now = self._clock()
        due = [s for s in config.servers if s.enabled and self._fresh_until.get((tenant, s.name), 0.0) <= now]
        listings = await self.indexer.list_servers(due)
        self.listed += len(due)
        changed = []
        for server in due:
            listing = listings[server.name]
            status = current.servers.get(server.name)
            if isinstance(listing, UpstreamError):
                if status is None or status.healthy:
                    changed.append(server.name)  # newly failing: its health shows in the catalog
                continue
            if listing.ttl_ms:
                self._remember(tenant, server.name, now + min(listing.ttl_ms / 1000, _MAX_TTL_S))
            if (
                status is None
                or not status.healthy
                or listed_fingerprint(server.name, listing) != recorded_fingerprint(current, server.name)
            ):
                changed.append(server.name)
        return changed

    def _current(self, tenant: str) -> CatalogVersion | None:
        """The tenant's current version: the pointer is read every run, the version only when it moved."""
        store = self.indexer.store
        try:
            pointer = store.current_version(tenant)
            cached = self._catalogs.get(tenant)
            # The kept copy serves only while the version behind the pointer still exists: serving
            # instances load it from the store, so one that vanished (TTL, a hand clean-up) is rebuilt.
            if pointer is not None and cached is not None and cached.version == pointer:
                if store.has_version(tenant, pointer):
                    return cached
                log.error("tenant %s: current catalog %s is gone from the store", tenant, pointer)
            current = store.load_version(tenant, pointer) if pointer is not None else None
        except StoreError:
            current = None
        if current is None:
            self._catalogs.pop(tenant, None)
        else:
            self._catalogs[tenant] = current
        return current

    def _remember(self, tenant: str, server: str, until: float) -> None:
        self._fresh_until.pop((tenant, server), None)
        self._fresh_until[(tenant, server)] = until
        while len(self._fresh_until) > _MAX_HINTS:
            del self._fresh_until[next(iter(self._fresh_until))]

    async def check(self, tenant: str, config: TenantConfig) -> IndexReport | None:
        """Reindex the tenant's changed servers; None when nothing changed (nothing was written).

        A tenant without a readable current version is indexed whole.
        """
        current = self._current(tenant)
        if current is None:
            return await self.indexer.index_tenant(tenant, config)
        changed = await self._changed(tenant, config, current)
        if not changed:
            return None
        return await self.indexer.index_scoped(tenant, config, set(changed))
