"""Approved tool versions: the content hash an operator (or a trusted server's first baseline) approved
for each tool of a tenant. The indexer compares every listed tool against them, so an upstream that
silently edits a tool's description or schema ("rug pull") gets that tool withheld until approved.

Rejections are the operator's other verdict on held content, also by content hash: the tool stays
withheld and is shown as ``rejected`` while the upstream serves that exact content (not asked about
again), and is held for review as ``changed`` once the content differs. Approving a tool clears its
rejection."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["ApprovalStore"]


class ApprovalStore(ABC):
    """Approved and rejected content hashes by tenant and canonical ``server:tool`` key."""

    @abstractmethod
    def approved(self, tenant: str) -> dict[str, str]:
        """Every approved tool of the tenant: key -> content hash."""

    @abstractmethod
    def approve(self, tenant: str, hashes: dict[str, str]) -> None:
        """Record these versions as approved (replacing earlier approvals of the same tools) and drop
        the tools' rejections."""

    @abstractmethod
    def rejected(self, tenant: str) -> dict[str, str]:
        """Every rejected tool of the tenant: key -> the content hash that was rejected."""

    @abstractmethod
    def reject(self, tenant: str, hashes: dict[str, str]) -> None:
        """Record these versions as rejected (replacing earlier rejections of the same tools; their
        approvals, if any, stay: agents keep the last approved content)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
