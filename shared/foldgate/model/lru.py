"""One byte budget for an instance's per-tenant caches, least recently used evicted first.

Every cache on the request path that grows with the tenants an instance serves (catalogs, views,
search indexes, compiled validators, config and Parameter Store reads) keeps its entries on a
:class:`Shelf` of one shared :class:`MemoryBudget`, so the instance holds at most the budget whatever
the number of tenants. Sizes are estimates computed once when an entry is stored (from text lengths,
tool counts, array sizes), never a deep ``sizeof`` on access.

An entry larger than the whole budget is served to the request that built it but not kept (it would
evict everything else and still not fit). An entry stored with a ``group`` (its tenant) and
``anchor=True`` (the tenant's catalog) takes its group along when evicted: views and searchers hold
their catalog, so keeping them after it would keep the catalog's memory uncounted. Reading the anchor
makes its whole group the most recently used: a tenant ages as one, by when it was last served.

Thread-safe: the event loop, the sync endpoints' threads and the validator compile thread share it.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["DEFAULT_BUDGET_BYTES", "MemoryBudget", "Shelf", "collect_young", "text_bytes"]

log = logging.getLogger(__name__)

V = TypeVar("V")

# A budget for caches built without one (tests, tools); the processes take theirs from Settings.
DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024
# The eviction summary is logged at most this often (evictions under load come in bursts).
_LOG_EVERY_S = 60.0


def collect_young() -> None:
    """Collect CPython's young generations now, on a cold load's own request.

    Decoding a catalog or building a searcher leaves some 10^5 new container objects; left young,
    the collections they cost (~5 ms each, measured) fell on whichever request allocated next, mostly
    the warm requests of hot tenants: a 0.2 ms retrieve_tools p95 became 4.5 ms in a mix of cold
    tenants, 0.6 ms with this collection paid where the load happens.
    """
    gc.collect(1)


def text_bytes(*texts: str | None) -> int:
    """What Python strings of these lengths hold, about: mostly ASCII, ~49 bytes of header each."""
    return sum(49 + len(t) for t in texts if t is not None)


@dataclass
class _Entry:
    value: Any
    size: int
    group: str | None
    anchor: bool


@dataclass
class _Counts:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    oversize: int = 0
    entries: int = 0
    bytes: int = 0


class MemoryBudget:
    """Entries of every shelf, least recently used first, holding at most ``budget`` estimated bytes."""

    def __init__(self, budget: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget = max(0, int(budget))
        self._entries: OrderedDict[tuple[str, Hashable], _Entry] = OrderedDict()
        self._groups: dict[str, set[tuple[str, Hashable]]] = {}
        self._counts: dict[str, _Counts] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._logged = 0.0
        self._logged_evictions = 0

    def shelf(self, kind: str) -> Shelf[Any]:
        """The entries of one kind (its counts are reported under that name)."""
        with self._lock:
            self._counts.setdefault(kind, _Counts())
        return Shelf(self, kind)

    def _peek(self, kind: str, key: Hashable) -> Any | None:
        with self._lock:
            entry = self._entries.get((kind, key))
            return None if entry is None else entry.value

    def _get(self, kind: str, key: Hashable) -> Any | None:
        with self._lock:
            entry = self._entries.get((kind, key))
            counts = self._counts[kind]
            if entry is None:
                counts.misses += 1
                return None
            counts.hits += 1
            self._entries.move_to_end((kind, key))
            if entry.anchor and entry.group is not None:
                # A tenant ages as one: its catalog is read on every request, so its views and
                # searchers stay as long as it is served, whichever of them this request needs.
                for member in self._groups.get(entry.group, ()):
                    self._entries.move_to_end(member)
            return entry.value

    def _put(self, kind: str, key: Hashable, value: Any, size: int, group: str | None, anchor: bool) -> bool:
        size = max(1, int(size))
        with self._lock:
            self._remove((kind, key))
            if size > self.budget:
                self._counts[kind].oversize += 1
                return False
            entry = _Entry(value, size, group, anchor)
            self._entries[(kind, key)] = entry
            self._bytes += size
            counts = self._counts[kind]
            counts.entries += 1
            counts.bytes += size
            if group is not None:
                self._groups.setdefault(group, set()).add((kind, key))
            evicted = self._evict()
        if evicted:
            self._log_evictions()
        return True

    def _evict(self) -> bool:
        # Called with the lock held. The newest entry fits by itself (checked above), so this stops.
        evicted = False
        while self._bytes > self.budget:
            full_key, entry = next(iter(self._entries.items()))
            self._counts[full_key[0]].evictions += 1
            self._remove(full_key)
            evicted = True
            if entry.anchor and entry.group is not None:
                for dependent in list(self._groups.get(entry.group, ())):
                    self._counts[dependent[0]].evictions += 1
                    self._remove(dependent)
        return evicted

    def _remove(self, full_key: tuple[str, Hashable]) -> _Entry | None:
        # Called with the lock held.
        entry = self._entries.pop(full_key, None)
        if entry is None:
            return None
        self._bytes -= entry.size
        counts = self._counts[full_key[0]]
        counts.entries -= 1
        counts.bytes -= entry.size
        if entry.group is not None:
            members = self._groups.get(entry.group)
            if members is not None:
                members.discard(full_key)
                if not members:
                    del self._groups[entry.group]
        return entry

    def _pop(self, kind: str, key: Hashable) -> None:
        with self._lock:
            self._remove((kind, key))

    def drop_group(self, group: str) -> None:
        """Forget every entry of the group (a tenant), whatever its shelf."""
        with self._lock:
            for full_key in list(self._groups.get(group, ())):
                self._remove(full_key)

    def clear(self, kind: str | None = None) -> None:
        """Forget every entry, or every entry of one shelf (counts of hits, misses and evictions stay)."""
        with self._lock:
            for full_key in [k for k in self._entries if kind is None or k[0] == kind]:
                self._remove(full_key)

    @property
    def bytes(self) -> int:
        """Estimated bytes held now."""
        with self._lock:
            return self._bytes

    def stats(self) -> dict[str, Any]:
        """Numbers only: the budget, bytes and entries held, hits, misses, hit rate, evictions, and
        entries served but not kept for exceeding the budget; overall and per shelf."""
        with self._lock:
            counts = sorted(self._counts.items())
            total = _Counts()
            for _, c in counts:
                for name in ("hits", "misses", "evictions", "oversize", "entries", "bytes"):
                    setattr(total, name, getattr(total, name) + getattr(c, name))
            kinds = {kind: _numbers(c) for kind, c in counts}
        return {"budget_bytes": self.budget, **_numbers(total), "kinds": kinds}

    def _log_evictions(self) -> None:
        now = time.monotonic()
        if now - self._logged < _LOG_EVERY_S:
            return
        self._logged = now
        stats = self.stats()
        fields = {k: stats[k] for k in ("budget_bytes", "bytes", "entries", "hit_rate", "evictions")}
        fields["evicted_since_last"] = stats["evictions"] - self._logged_evictions
        self._logged_evictions = stats["evictions"]
        log.info("instance cache evicting at its budget", extra={"cache": fields})


def _numbers(c: _Counts) -> dict[str, Any]:
    looked_up = c.hits + c.misses
    return {
        "bytes": c.bytes,
        "entries": c.entries,
        "hits": c.hits,
        "misses": c.misses,
        "hit_rate": round(c.hits / looked_up, 4) if looked_up else 0.0,
        "evictions": c.evictions,
        "oversize": c.oversize,
    }


class Shelf(Generic[V]):
    """One kind of entry on a :class:`MemoryBudget` (catalogs, views, searchers, ...)."""

    def __init__(self, budget: MemoryBudget, kind: str) -> None:
        self.budget = budget
        self.kind = kind

    def get(self, key: Hashable) -> V | None:
        """The entry, now the most recently used; None (a miss) when absent or evicted."""
        found: V | None = self.budget._get(self.kind, key)
        return found

    def peek(self, key: Hashable) -> V | None:
        """The entry if held, neither counted as a lookup nor made the most recently used."""
        found: V | None = self.budget._peek(self.kind, key)
        return found

    def put(
        self, key: Hashable, value: V, size: int, *, group: str | None = None, anchor: bool = False
    ) -> bool:
        """Keep the value as ``size`` estimated bytes, evicting the least recently used past the
        budget; False (not kept) when it alone exceeds the budget."""
        return self.budget._put(self.kind, key, value, size, group, anchor)

    def pop(self, key: Hashable) -> None:
        """Forget the entry, if held."""
        self.budget._pop(self.kind, key)

    def clear(self) -> None:
        """Forget every entry of this shelf."""
        self.budget.clear(self.kind)
