"""Where oversized tool results wait to be paged back with ``read_cache``: the interface.

An entry is the whole result text plus an authorization stamp (who could have produced it); the
gateway compares stamps, so a caller that could not have produced an entry sees the same "not found"
as for a missing key. Entries expire after a TTL.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

__all__ = ["CachedResult", "ResultStore"]


@dataclass(frozen=True)
class CachedResult:
    """One stored result: its full text, the stamp of who may read it, and when it expires."""

    stamp: str
    text: str
    expires_at: float


class ResultStore(ABC):
    """Oversized tool results by random key."""

    @abstractmethod
    def put(self, key: str, result: CachedResult) -> None:
        """Store a result under a fresh key."""

    @abstractmethod
    def get(self, key: str) -> CachedResult | None:
        """The result, None when absent or expired."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
