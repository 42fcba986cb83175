"""How many wrong operator keys the console's sign-in form and the admin API take (one budget: they guard
the same key): failed attempts are limited per client address, and by a looser cap over all addresses so
a guesser spread over many addresses is slowed too.

Each attempt spends a token from its address's bucket and from the global one *before* the key is
checked, so parallel guesses cannot overdraw a bucket, and while either is empty the key is not checked
at all (the answer's timing says nothing about it). A sign-in that succeeds gets its tokens back: the
operator's own logins never use up the budget.

On Lambda the buckets live in one McpFunction instance (see :mod:`foldgate.edge.ratelimit`): the limit
holds per warm instance, and the fleet-wide ceiling is that times the instances serving the console.
The operator key is a long random secret, so this is defence in depth against online guessing, not what
makes it unguessable. The global cap also means a flood of wrong keys can hold the operator off the
form and the admin API for a while; console sessions already signed in are unaffected.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Final

from foldgate.edge.ratelimit import RateLimiter

__all__ = ["LoginLimit"]

# The global limiter's one key (it has a limiter of its own, so no address collides with it).
_ALL: Final = "*all*"


class LoginLimit:
    """Failed sign-ins per client address and overall, as token buckets whose burst is the per-minute
    rate; a rate of 0 turns that half off."""

    def __init__(
        self,
        per_address_per_minute: int,
        global_per_minute: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._buckets: list[tuple[RateLimiter, bool]] = [
            (RateLimiter(rate, clock=clock), by_address)
            for rate, by_address in ((per_address_per_minute, True), (global_per_minute, False))
            if rate > 0
        ]

    def attempt(self, address: str) -> int:
        """Spend one attempt for ``address``: 0 when the key may be checked, else the whole seconds
        until an attempt would be taken again (then nothing is spent)."""
        spent: list[tuple[RateLimiter, str]] = []
        for limiter, by_address in self._buckets:
            key = address if by_address else _ALL
            allowed, wait = limiter.allow(key)
            if not allowed:
                # Refused before any check: not an attempt, so no bucket keeps what it gave.
                for earlier, earlier_key in spent:
                    earlier.refund(earlier_key)
                return max(1, math.ceil(wait))
            spent.append((limiter, key))
        return 0

    def succeeded(self, address: str) -> None:
        """The attempt from ``address`` signed in: it does not count against either budget."""
        for limiter, by_address in self._buckets:
            limiter.refund(address if by_address else _ALL)
