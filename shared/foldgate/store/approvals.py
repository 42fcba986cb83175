"""Approved tool versions: the content hash an operator (or a trusted server's first baseline) approved
for each tool of a tenant. The indexer compares every listed tool against them, so an upstream that
silently edits a tool's description or schema ("rug pull") gets that tool withheld until approved."""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from pathlib import Path

from foldgate.errors import StoreError
from foldgate.store.connections import connect_sqlite

__all__ = ["ApprovalStore", "SqliteApprovalStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    tenant TEXT NOT NULL, key TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (tenant, key));
"""


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


class SqliteApprovalStore(ApprovalStore):
    """Approvals in the embedded SQLite file (local mode)."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="approval store")

    def approved(self, tenant: str) -> dict[str, str]:
        """Every approved tool of the tenant."""
        with self._lock:
            try:
                rows = self._db.execute(
                    "SELECT key, hash FROM approvals WHERE tenant = ?", (tenant,)
                ).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read approvals: {exc}") from exc
        return {str(k): str(h) for k, h in rows}

    def approve(self, tenant: str, hashes: dict[str, str]) -> None:
        """Upsert the approvals in one transaction."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    "INSERT INTO approvals (tenant, key, hash) VALUES (?, ?, ?) "
                    "ON CONFLICT(tenant, key) DO UPDATE SET hash = excluded.hash",
                    [(tenant, k, h) for k, h in hashes.items()],
                )
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise StoreError(f"cannot record approvals: {exc}") from exc

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
