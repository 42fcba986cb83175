"""An in-memory token-bucket rate limiter, one bucket per key (e.g. per tenant or per caller).

Each key may spend ``burst`` requests at once and then ``per_minute`` requests per minute, refilled
continuously. Denied requests cost nothing, and the answer says how long until the next one would pass.

What this enforces in a stateless Lambda deployment, precisely: the buckets live in one process, so
each warm McpFunction instance counts on its own and forgets on recycle. A key is held to
``per_minute`` (after a ``burst``) *per instance*; across the fleet its ceiling is ``per_minute`` times
the number of instances serving it concurrently, and a fresh instance starts every key with a full
bucket. It damps a single hot caller on a warm instance (the common shape of a runaway agent loop)
cheaply, with no network round trip; it is not a global quota. The hard bound on the total comes from
outside the process: API Gateway stage/route throttling (and usage plans per API key), and the
function's reserved concurrency, which caps the instance count and so the multiplier above. A true
cross-instance quota would need a shared counter (e.g. a DynamoDB conditional update per window),
which costs a round trip per request.

Memory is bounded: buckets idle long enough to have refilled completely are dropped (a full bucket
is the same as no bucket), and at most ``max_keys`` buckets are kept, least recently used evicted
first (an evicted key merely starts again with a full bucket).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["RateLimiter"]

# Refill sums fractions of a token; without slack, 10 x 0.1 = 0.9999... would deny a request due now.
_EPSILON = 1e-9


class RateLimiter:
    """Token buckets per key: ``burst`` capacity, refilled at ``per_minute`` / 60 tokens per second."""

    def __init__(
        self,
        per_minute: int,
        burst: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_keys: int = 10_000,
    ) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive (skip the limiter to disable limiting)")
        if burst is not None and burst < 1:
            raise ValueError("burst must be at least 1")
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.per_minute = per_minute
        self.burst = burst if burst is not None else per_minute
        self.max_keys = max_keys
        self._rate = per_minute / 60.0  # tokens per second
        # Idle this long, a bucket is full again and indistinguishable from a fresh one.
        self._refill_seconds = self.burst / self._rate
        self._clock = clock
        self._lock = threading.Lock()
        # key -> (tokens, last update); ordered by last use, least recent first.
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        """How many keys currently hold a (not yet refilled) bucket."""
        with self._lock:
            return len(self._buckets)

    def allow(self, key: str) -> tuple[bool, float]:
        """Spend one token of ``key``'s bucket: (allowed, seconds until a request would be allowed).

        The second value is 0.0 when allowed.
        """
        with self._lock:
            now = self._clock()
            self._evict_idle(now)
            entry = self._buckets.pop(key, None)
            if entry is None:
                tokens = float(self.burst)
            else:
                stored, last = entry
                # max(): a clock that steps back must not drain the bucket.
                tokens = min(float(self.burst), stored + max(0.0, now - last) * self._rate)
            if tokens >= 1.0 - _EPSILON:
                tokens -= 1.0
                allowed, retry_after = True, 0.0
                tokens = max(tokens, 0.0)
            else:
                allowed, retry_after = False, (1.0 - tokens) / self._rate
            self._buckets[key] = (tokens, now)  # re-inserted at the most-recent end
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return allowed, retry_after

    def refund(self, key: str) -> None:
        """Give back one token spent by :meth:`allow` (the request turned out not to count against the
        key, e.g. a sign-in that succeeded); never beyond ``burst``."""
        with self._lock:
            entry = self._buckets.get(key)
            # No bucket: it refilled completely (or was evicted), which is already a full one.
            if entry is not None:
                tokens, last = entry
                self._buckets[key] = (min(float(self.burst), tokens + 1.0), last)

    def _evict_idle(self, now: float) -> None:
        # Least recently used first, so stop at the first bucket still refilling: amortised O(1).
        while self._buckets:
            key, (_, last) = next(iter(self._buckets.items()))
            if now - last < self._refill_seconds:
                return
            del self._buckets[key]
