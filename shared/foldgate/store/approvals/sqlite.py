"""Approved and rejected tool versions in the embedded SQLite file (local mode)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from foldgate.errors import StoreError
from foldgate.store.approvals.base import ApprovalStore
from foldgate.store.connections import connect_sqlite

__all__ = ["SqliteApprovalStore"]

# Rejections have a table of their own so an existing file gains it by CREATE ... IF NOT EXISTS.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    tenant TEXT NOT NULL, key TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (tenant, key));
CREATE TABLE IF NOT EXISTS rejections (
    tenant TEXT NOT NULL, key TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (tenant, key));
"""


class SqliteApprovalStore(ApprovalStore):
    """Approvals in the embedded SQLite file (local mode)."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="approval store")

    def _read(self, table: str, tenant: str) -> dict[str, str]:
        # ``table`` is one of this module's two constants, never input.
        with self._lock:
            try:
                rows = self._db.execute(
                    f"SELECT key, hash FROM {table} WHERE tenant = ?", (tenant,)
                ).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read {table}: {exc}") from exc
        return {str(k): str(h) for k, h in rows}

    def approved(self, tenant: str) -> dict[str, str]:
        """Every approved tool of the tenant."""
        return self._read("approvals", tenant)

    def rejected(self, tenant: str) -> dict[str, str]:
        """Every rejected tool of the tenant."""
        return self._read("rejections", tenant)

    def _write(self, table: str, tenant: str, hashes: dict[str, str], *, clear: str | None) -> None:
        """Upsert into ``table`` and delete the same keys from ``clear``, in one transaction."""
        rows = [(tenant, k, h) for k, h in hashes.items()]
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    f"INSERT INTO {table} (tenant, key, hash) VALUES (?, ?, ?) "
                    "ON CONFLICT(tenant, key) DO UPDATE SET hash = excluded.hash",
                    rows,
                )
                if clear is not None:
                    self._db.executemany(
                        f"DELETE FROM {clear} WHERE tenant = ? AND key = ?", [(t, k) for t, k, _ in rows]
                    )
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise StoreError(f"cannot record {table}: {exc}") from exc

    def approve(self, tenant: str, hashes: dict[str, str]) -> None:
        """Upsert the approvals and drop the same tools' rejections in one transaction."""
        self._write("approvals", tenant, hashes, clear="rejections")

    def reject(self, tenant: str, hashes: dict[str, str]) -> None:
        """Upsert the rejections (approvals stay) in one transaction."""
        self._write("rejections", tenant, hashes, clear=None)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
