"""The activity log's store: the interface.

Events arrive in batches from a buffered writer (never one store round trip per agent request) and are
read newest first per tenant, filtered and paginated, by the admin API and the console. Every event
carries its expiry (``at`` + the tenant's retention): backends drop expired events (DynamoDB by TTL,
SQLite on write) and never return them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from foldgate.model.activity import ActivityRecord

__all__ = ["ActivityPage", "ActivityQuery", "ActivityStore", "StoredRecord"]


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """An event with the epoch second after which it is dropped."""

    record: ActivityRecord
    expires_at: float


@dataclass(frozen=True, slots=True)
class ActivityQuery:
    """What to list for one tenant. ``kind`` is ``call`` or ``audit``; every other field narrows the
    list when set; ``since``/``until`` are epoch seconds (inclusive/exclusive); ``cursor`` continues a
    previous page."""

    tenant: str
    kind: str = "call"
    server: str | None = None
    tool: str | None = None
    principal: str | None = None
    outcome: str | None = None
    since: float | None = None
    until: float | None = None
    cursor: str | None = None
    limit: int = 100


@dataclass(frozen=True, slots=True)
class ActivityPage:
    """Events newest first, and the cursor of the next page (None: no more)."""

    records: list[ActivityRecord]
    cursor: str | None


class ActivityStore(ABC):
    """Call and operator events per tenant, newest first."""

    @abstractmethod
    def put_many(self, records: Sequence[StoredRecord]) -> None:
        """Write a batch of events (ids already assigned); raises StoreError when the store fails."""

    @abstractmethod
    def query(self, query: ActivityQuery) -> ActivityPage:
        """One page of a tenant's events, newest first, expired ones never included."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
