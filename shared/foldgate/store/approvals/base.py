"""Approved tool versions: the content hash an operator (or a trusted server's first baseline) approved
for each tool of a tenant. The indexer compares every listed tool against them, so an upstream that
silently edits a tool's description or schema ("rug pull") gets that tool withheld until approved."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["ApprovalStore"]


class ApprovalStore(ABC):
    """Approved content hashes by tenant and canonical ``server:tool`` key."""

    @abstractmethod
    def approved(self, tenant: str) -> dict[str, str]:
        """Every approved tool of the tenant: key -> content hash."""

    @abstractmethod
    def approve(self, tenant: str, hashes: dict[str, str]) -> None:
        """Record these versions as approved (replacing earlier approvals of the same tools)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
