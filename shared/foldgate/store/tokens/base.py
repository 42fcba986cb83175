"""Where agent tokens live: the interface.

A store keeps each token's grant (:class:`AgentToken`) with its keyed digest, addressed by the public
token id. It never sees a token; the digest is handed out by :meth:`TokenStore.get` only, for the
constant-time comparison in :class:`~foldgate.auth.authority.TokenAuthority`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from foldgate.errors import StoreError
from foldgate.model.agent_token import TIERS, AgentToken

if TYPE_CHECKING:
    pass

__all__ = ["TokenStore", "decode_tier"]


class TokenStore(ABC):
    """Token grants and their digests by token id."""

    @abstractmethod
    def put(self, token: AgentToken, digest: str) -> None:
        """Store a new token; raises ConflictError when its id is already taken (never overwrites)."""

    @abstractmethod
    def get(self, token_id: str) -> tuple[AgentToken, str] | None:
        """The token and its digest, None when the id is unknown (expired or revoked ones included)."""

    @abstractmethod
    def list(self, tenant: str | None = None) -> list[AgentToken]:
        """Every stored token (of one tenant, when given), oldest first; never digests."""

    @abstractmethod
    def revoke(self, token_id: str) -> bool:
        """Mark the token revoked; True if it exists (revoking twice is fine), False if unknown."""

    @abstractmethod
    def touch(self, token_id: str, at: float) -> None:
        """Record that the token was used at ``at`` (epoch seconds); a later time only ever replaces an
        earlier one, and an unknown id is left unknown (no stub is created)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""


def decode_tier(value: Any) -> Any:
    """A stored tier, checked: a corrupt row must never grant more than it says."""
    if value not in TIERS:
        raise StoreError(f"stored token has an unknown tier {value!r}")
    return value
