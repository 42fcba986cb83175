"""Tenant config documents in the embedded SQLite file (local mode and tests); the table's primary key
is the registry."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from foldgate.errors import ConflictError, StoreError
from foldgate.store.configs.base import (
    STALE,
    StoredConfig,
    TenantConfigStore,
    check_tenant,
    decoded,
    encoded,
    revision_of,
)
from foldgate.store.connections import connect_sqlite

__all__ = ["SqliteTenantConfigStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tenant_configs (
    tenant TEXT PRIMARY KEY, doc TEXT NOT NULL, revision TEXT NOT NULL, updated_at REAL NOT NULL
);
"""


class SqliteTenantConfigStore(TenantConfigStore):
    """One row per tenant."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="tenant config store")

    def put(
        self, tenant: str, doc: dict[str, Any], *, expected_revision: str | None = None
    ) -> tuple[StoredConfig, bool]:
        """Upsert the row unless the stored document is the same; with ``expected_revision`` an
        UPDATE of that revision only (ConflictError when no row matched)."""
        check_tenant(tenant)
        text, revision = encoded(doc), revision_of(doc)
        current = self.get(tenant)
        if expected_revision is not None and (current is None or current.revision != expected_revision):
            raise ConflictError(f"{tenant}: {STALE}")
        if current is not None and current.revision == revision:
            return current, False
        now = time.time()
        with self._lock:
            try:
                if expected_revision is None:
                    self._db.execute(
                        "INSERT INTO tenant_configs (tenant, doc, revision, updated_at) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT(tenant) DO UPDATE SET doc = excluded.doc, "
                        "revision = excluded.revision, updated_at = excluded.updated_at",
                        (tenant, text, revision, now),
                    )
                else:
                    # Checked again in the write itself: another process may have written meanwhile.
                    cur = self._db.execute(
                        "UPDATE tenant_configs SET doc = ?, revision = ?, updated_at = ? "
                        "WHERE tenant = ? AND revision = ?",
                        (text, revision, now, tenant, expected_revision),
                    )
                    if cur.rowcount != 1:
                        raise ConflictError(f"{tenant}: {STALE}")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot store the config of {tenant!r}: {exc}") from exc
        return StoredConfig(tenant, json.loads(text), revision, now), True

    def get(self, tenant: str, *, consistent: bool = False) -> StoredConfig | None:
        """One primary-key lookup (always consistent: one file)."""
        with self._lock:
            try:
                row = self._db.execute(
                    "SELECT doc, revision, updated_at FROM tenant_configs WHERE tenant = ?", (tenant,)
                ).fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read the config of {tenant!r}: {exc}") from exc
        if row is None:
            return None
        return StoredConfig(tenant, decoded(row[0], tenant), str(row[1]), float(row[2]))

    def delete(self, tenant: str) -> bool:
        """Delete the row."""
        with self._lock:
            try:
                cur = self._db.execute("DELETE FROM tenant_configs WHERE tenant = ?", (tenant,))
            except sqlite3.Error as exc:
                raise StoreError(f"cannot delete the config of {tenant!r}: {exc}") from exc
        return cur.rowcount > 0

    def tenants(self) -> list[str]:
        """Every tenant with a row."""
        with self._lock:
            try:
                rows = self._db.execute("SELECT tenant FROM tenant_configs ORDER BY tenant").fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot list tenants: {exc}") from exc
        return [str(r[0]) for r in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
