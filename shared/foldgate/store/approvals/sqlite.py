"""Approved tool versions in the embedded SQLite file (local mode)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from foldgate.errors import StoreError
from foldgate.store.approvals.base import ApprovalStore
from foldgate.store.connections import connect_sqlite

__all__ = ["SqliteApprovalStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    tenant TEXT NOT NULL, key TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (tenant, key));
"""


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
