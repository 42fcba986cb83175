"""Access tokens held in this process until their refresh margin before expiry.

One mechanism for every kind that gets its tokens with no stored grant (``client_credentials``,
``workload_jwt``, ``token_exchange``, ``id_jag``), so the rule for when a held token stops being used
cannot drift between them: a token is used while ``expires - margin(received, expires)`` is ahead
(``margin`` is the provider's :func:`~foldgate.upstream.oauth.provider.refresh_margin` rule), a token
held for another config is not used, and the oldest go first beyond ``max_held``. Tokens are never
stored: a cold instance asks again.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["HeldTokens", "Margin"]

Margin = Callable[[float, float | None], float]
"""``margin(received_at, expires_at)`` -> seconds before expiry a token is no longer used."""
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class _Held:
    presented: str  # the Authorization value (a DPoP one signs each request anew)
    received: float
    expires: float | None
    config: str


class HeldTokens(Generic[K]):
    """Authorization values by key, each until its margin before expiry (see the module doc)."""

    def __init__(self, margin: Margin, *, max_held: int | None = None) -> None:
        self.margin = margin
        self.max_held = max_held
        self._held: OrderedDict[K, _Held] = OrderedDict()

    def get(self, key: K, config: str = "") -> str | None:
        """The held value for ``key`` (held for ``config``) while it is within its time, else None."""
        held = self._held.get(key)
        if held is None:
            return None
        if held.config != config or (
            held.expires is not None
            and held.expires - self.margin(held.received, held.expires) <= time.time()
        ):
            del self._held[key]
            return None
        return held.presented

    def put(
        self, key: K, presented: str, expires: float | None, *, received: float, config: str = ""
    ) -> None:
        """Hold ``presented`` (received at ``received``, expiring at ``expires``; None: not said)."""
        self._held[key] = _Held(presented, received, expires, config)
        self._held.move_to_end(key)
        while self.max_held is not None and len(self._held) > self.max_held:
            self._held.popitem(last=False)

    def drop(self, key: K, presented: str | None = None) -> None:
        """Forget ``key``'s token (only when it is ``presented``, where given: another request may have
        replaced the refused one already)."""
        held = self._held.get(key)
        if held is not None and (presented is None or held.presented == presented):
            del self._held[key]
