"""Request quotas that hold across instances: a tenant's ``limits:`` (per tenant and per agent token)
counted in buckets every instance shares (:mod:`foldgate.store.quotas`), without a round trip per
request.

An instance *leases* a slice of a key's bucket with one store call and spends it locally; the
per-instance rate limiter (:mod:`foldgate.edge.ratelimit`) stays in front as the cheap first line. The
slice adapts to the instance's own traffic on that key: the first is one token, each next one is what
the previous slice's spending rate would use in a slice's lifetime (two seconds; at most twice the
previous slice, at most half the bucket), so a quiet key leases one token per request and a busy one
a store write per many. A slice is taken whole or, when the bucket is short, half of it at the
fewest: under contention, crumbs would shrink every instance's slices to a write per few requests. A
slice not spent within its lifetime is dropped, never carried (the lifetime is part of the 1.1 x
quota bound, see :mod:`foldgate.store.quotas.base`). A bucket found short is not asked again until it
holds the slice this instance wants: meanwhile requests are refused here with the wait as
``Retry-After``, and an agent looping on 429s costs no store writes.

Store calls run on a small thread pool, never on the event loop; requests on one key share the call in
flight. A request waits at most ``lease_timeout`` seconds for it.

**Fails open.** When the store cannot answer (an error, a timeout, an unreadable record), the
request is admitted, the reason is logged once and counted (:meth:`Quotas.stats`), and for the next
``open_for`` seconds quotas are not asked at all on this instance (the per-instance limit still
applies). A counter outage must never take the gateway down with it: the quota is a fairness bound
between tenants, not a security boundary, and the per-instance limiter and the function's concurrency
still cap what a tenant can do meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from foldgate.edge.access import RateLimited
from foldgate.store.quotas.base import SLICE_LIFETIME_S, Bucket, QuotaStore, Taken

if TYPE_CHECKING:
    from foldgate.config.tenant import RequestLimits
    from foldgate.model.principal import Principal

__all__ = ["QuotaExceeded", "Quotas"]

log = logging.getLogger(__name__)

# A request waits at most this long for the store, then is admitted (fail open).
LEASE_TIMEOUT_S: Final = 1.0
# After a store failure, quotas are not asked for this long (no request pays another timeout).
OPEN_FOR_S: Final = 10.0
# Requests on one instance racing for freshly leased tokens: after this many leases, refuse briefly.
_ROUNDS: Final = 4


class QuotaExceeded(RateLimited):
    """A tenant's or a token's request quota is spent for now; retry after ``retry_after`` seconds.
    Answered like the rate limit (429, Retry-After, JSON-RPC -32002), saying which quota; ``principal``
    is the refused caller."""

    def __init__(self, retry_after: float, whose: str, principal: Principal) -> None:
        super().__init__(retry_after)
        self.args = (f"the {whose} request quota exceeded; retry after {retry_after:.1f}s",)
        self.principal = principal


@dataclass
class _Slot:
    """One key's lease on this instance."""

    per_minute: int
    tokens: int = 0  # leased, not yet spent
    expires: float = 0.0  # monotonic: unspent tokens are dropped then
    asked: int = 0  # the last lease's size
    granted: int = 0  # and what it got
    spent: int = 0  # tokens spent from it
    leased_at: float = 0.0  # monotonic; 0: never leased
    wait_until: float = 0.0  # epoch seconds: the bucket holds less than this instance wants until then
    pending: Future[Taken] | None = None


class Quotas:
    """Leases of shared quota buckets for the tenants whose config sets ``limits:``."""

    def __init__(
        self,
        store: QuotaStore,
        limits: Callable[[str], RequestLimits | None],
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        lease_timeout: float = LEASE_TIMEOUT_S,
        open_for: float = OPEN_FOR_S,
        max_keys: int = 10_000,
    ) -> None:
        self.store = store
        self._limits = limits
        self._clock = clock
        self._monotonic = monotonic
        self.lease_timeout = lease_timeout
        self.open_for = open_for
        self.max_keys = max_keys
        # Reentrant: a lease that completes at once runs its callback on the thread that holds it.
        self._lock = threading.RLock()
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._open_until = 0.0
        self._pool: ThreadPoolExecutor | None = None
        self._counts: Counter[str] = Counter()

    def stats(self) -> dict[str, int]:
        """Counts since start: ``leases`` (store calls answered), ``tokens`` (leased), ``refused``,
        ``fail_open`` (requests admitted without a lease) and ``store_failed.<reason>`` (times the
        quotas started failing open for that reason)."""
        with self._lock:
            return dict(self._counts)

    async def admit(self, principal: Principal) -> None:
        """Spend one request of the caller's token quota and its tenant's; QuotaExceeded when either
        is spent (the token's is given back when the tenant's refuses)."""
        limits = self._limits(principal.tenant)
        if limits is None:
            return
        checks: list[tuple[str, int, str]] = []
        if limits.per_token_requests_per_minute is not None:
            key = f"{principal.tenant}\x1ftoken\x1f{principal.key}"
            checks.append((key, limits.per_token_requests_per_minute, "token's"))
        if limits.requests_per_minute is not None:
            checks.append((f"{principal.tenant}\x1ftenant", limits.requests_per_minute, "tenant's"))
        spent: list[str] = []
        for key, per_minute, whose in checks:
            try:
                if await self._spend(key, per_minute, whose, principal):
                    spent.append(key)
            except QuotaExceeded:
                for done in spent:
                    self._refund(done)
                raise

    async def _spend(self, key: str, per_minute: int, whose: str, principal: Principal) -> bool:
        """Spend one token of ``key``: True from a lease, False admitted open; QuotaExceeded."""
        for _ in range(_ROUNDS):
            with self._lock:
                slot = self._slot(key, per_minute)
                mono, wall = self._monotonic(), self._clock()
                if slot.tokens > 0 and mono < slot.expires:
                    slot.tokens -= 1
                    slot.spent += 1
                    return True
                if wall < slot.wait_until:
                    self._counts["refused"] += 1
                    raise QuotaExceeded(slot.wait_until - wall, whose, principal)
                if mono < self._open_until:
                    return self._open()
                pending = slot.pending or self._lease(key, slot, mono, wall)
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(pending)), self.lease_timeout)
            except TimeoutError:
                self._failed("timeout", f"no answer within {self.lease_timeout:g}s")
                return self._open()
            except Exception:  # the lease's callback logged and counted it
                return self._open()
        # Other requests of this instance took every token of each lease: the bucket is that busy.
        self._counts["refused"] += 1
        raise QuotaExceeded(Bucket(per_minute).interval, whose, principal)

    def _open(self) -> bool:
        """Admit without a lease (failing open), counted."""
        with self._lock:
            self._counts["fail_open"] += 1
        return False

    def _slot(self, key: str, per_minute: int) -> _Slot:
        slot = self._slots.pop(key, None)
        if slot is None or slot.per_minute != per_minute:  # new, or its quota was reconfigured
            slot = _Slot(per_minute)
        self._slots[key] = slot  # most recently used last
        while len(self._slots) > self.max_keys:
            self._slots.popitem(last=False)
        return slot

    def _lease(self, key: str, slot: _Slot, mono: float, wall: float) -> Future[Taken]:
        """Start the store call for the next slice (the caller holds the lock)."""
        size = self._next_size(slot, mono)
        slot.tokens = 0  # an expired slice's remainder is dropped, never carried
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="foldgate-quota")
        bucket = Bucket(slot.per_minute)
        # Half a slice at the fewest: a crumb left by another instance would cost a write per few requests.
        future = self._pool.submit(self.store.take, key, size, bucket, wall, least=(size + 1) // 2)
        slot.pending, slot.asked = future, size
        future.add_done_callback(lambda done: self._landed(slot, bucket, size, done))
        return future

    def _next_size(self, slot: _Slot, mono: float) -> int:
        """What the last slice's spending rate would use in a slice's lifetime: one for a new or quiet
        key, at most twice the last one asked, at most half the bucket (a share left for other instances)."""
        if slot.leased_at == 0.0:
            return 1
        rate = slot.spent / max(mono - slot.leased_at, 1e-3)
        wanted = math.ceil(rate * SLICE_LIFETIME_S)
        most = max(1, Bucket(slot.per_minute).capacity // 2)
        return max(1, min(wanted, 2 * max(slot.asked, 1), most))

    def _landed(self, slot: _Slot, bucket: Bucket, size: int, done: Future[Taken]) -> None:
        """The store answered (on the pool's thread, or inline): credit the slice or note the wait."""
        with self._lock:
            slot.pending = None
            exc = done.exception()
            if exc is not None:
                self._failed(type(exc).__name__, str(exc))
                return
            taken = done.result()
            self._counts["leases"] += 1
            self._counts["tokens"] += taken.granted
            if taken.granted == 0:
                # Not asked again before the bucket holds what this instance wants (it only refills),
                # nor before one token's time: a bucket other instances keep taking is as good as empty.
                slot.wait_until = max(
                    bucket.free_at(taken.tat) + (size - 1) * bucket.interval, self._clock() + bucket.interval
                )
                return
            mono = self._monotonic()
            slot.tokens, slot.granted, slot.spent = taken.granted, taken.granted, 0
            slot.leased_at, slot.expires, slot.wait_until = mono, mono + SLICE_LIFETIME_S, 0.0

    def _refund(self, key: str) -> None:
        """Give back a token spent from ``key``'s current slice."""
        with self._lock:
            slot = self._slots.get(key)
            if slot is not None and slot.spent > 0:
                slot.tokens += 1
                slot.spent -= 1

    def _failed(self, reason: str, detail: str) -> None:
        """Fail open: admit without asking for ``open_for`` seconds; counted and logged once (requests
        that shared the failed call, or were in flight meanwhile, add nothing)."""
        with self._lock:
            now = self._monotonic()
            if now < self._open_until:
                return
            self._counts[f"store_failed.{reason}"] += 1
            self._open_until = now + self.open_for
        log.warning(
            "request quotas unavailable (%s: %s); admitting on the per-instance limit for %gs",
            reason,
            detail,
            self.open_for,
        )
