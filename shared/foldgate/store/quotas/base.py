"""Request-quota buckets shared by every serving instance: the interface and the bucket arithmetic.

A quota of ``per_minute`` requests is a token bucket kept as one number per key, its *theoretical
arrival time* (``tat``, epoch seconds; the generic cell rate algorithm): each token costs ``interval``
= 60 / ``per_minute`` seconds, and a take of ``n`` tokens at ``now`` is allowed when
``max(tat, now) + n * interval <= now + capacity * interval``, advancing ``tat`` to the left side. A
``tat`` in the past is a full bucket, the same as no record at all, so records expire (the table's TTL)
soon after their ``tat``.

Why a bucket and not a counter per fixed minute: a fixed window admits its whole budget just before
its end and again just after, twice the quota within one minute. The bucket refills continuously and
holds ``capacity`` = three seconds' worth of requests (at least one), so any 60 s take at most
``capacity + per_minute`` = 63/60 of the quota. Two more allowances make the bound: an instance spends
a leased slice within two seconds (:data:`SLICE_LIFETIME_S`, edge/quota.py) or drops it, and a busy
bucket whose ``tat`` fell at most one second behind the clock (:data:`CATCH_UP_S`) may be taken from
without first being brought up to it (the DynamoDB backend's commuting update, see there). Any 60 s
admit at most (60 + 3 + 2 + 1)/60 = 1.1 x the quota (plus one request of rounding for quotas under 20
a minute), given instance clocks that agree (NTP; Lambda's do).

Instances never take one token per request: they take a *slice* in one call and spend it locally. A
take grants what the bucket holds when it holds less than asked but at least the taker's ``least`` (a
slice shrinks at the quota's end), and nothing otherwise; the answer's ``tat`` says when tokens free.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BURST_SECONDS", "CATCH_UP_S", "EXPIRY_MARGIN_S", "SLICE_LIFETIME_S", "Bucket", "QuotaStore", "Taken",
    "portion",
]  # fmt: skip

# The bucket holds this many seconds' worth of a quota's requests; an instance spends a slice within
# the lifetime or drops the rest; a take may find the bucket's tat this far behind the clock and add to
# it as it is: together (60 + 3 + 2 + 1)/60 = 1.1 x the quota in any minute at most.
BURST_SECONDS: Final = 3
SLICE_LIFETIME_S: Final = 2.0
CATCH_UP_S: Final = 1.0
# Float slack: 60 / 7 * 7 must count as 60, not one token short.
_EPSILON: Final = 1e-6
# A record outlives its tat by this much before the table's TTL may drop it (it is a full bucket by then).
EXPIRY_MARGIN_S: Final = 60


@dataclass(frozen=True, slots=True)
class Bucket:
    """The bucket of a ``per_minute`` quota: its token cost in seconds and its capacity in tokens."""

    per_minute: int

    def __post_init__(self) -> None:
        if self.per_minute < 1:
            raise ValueError("a quota is at least one request per minute")

    @property
    def interval(self) -> float:
        """Seconds one token takes to refill."""
        return 60.0 / self.per_minute

    @property
    def capacity(self) -> int:
        """Tokens a full bucket holds: three seconds' worth, at least one."""
        return max(1, self.per_minute * BURST_SECONDS // 60)

    def available(self, tat: float | None, now: float) -> int:
        """Tokens the bucket holds at ``now`` given its ``tat`` (None: no record, a full bucket)."""
        base = now if tat is None else max(tat, now)
        free = (now + self.capacity * self.interval - base) / self.interval
        return max(0, min(self.capacity, math.floor(free + _EPSILON)))

    def after(self, tat: float | None, now: float, tokens: int) -> float:
        """The ``tat`` after taking ``tokens`` at ``now``."""
        base = now if tat is None else max(tat, now)
        return base + tokens * self.interval

    def free_at(self, tat: float) -> float:
        """When (epoch seconds) the bucket holds one token again, given its ``tat``."""
        return tat - (self.capacity - 1) * self.interval


@dataclass(frozen=True, slots=True)
class Taken:
    """What a take granted (0 when the bucket was empty) and the bucket's ``tat`` afterwards."""

    granted: int
    tat: float


def portion(want: int, least: int, available: int) -> int:
    """What a take of ``want`` (``least`` at the fewest) grants from a bucket holding ``available``."""
    granted = min(want, available)
    return granted if granted >= max(1, min(least, want)) else 0


class QuotaStore(ABC):
    """Quota buckets by key, shared by every instance on the same file or table."""

    @abstractmethod
    def take(self, key: str, want: int, bucket: Bucket, now: float, *, least: int = 1) -> Taken:
        """Atomically take up to ``want`` tokens (at least 1, at most ``bucket.capacity``) from
        ``key``'s bucket at ``now`` (epoch seconds): all of them when it holds that many, what it holds
        when fewer but at least ``least``, none otherwise (:func:`portion`). StoreError when the store
        cannot answer."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
