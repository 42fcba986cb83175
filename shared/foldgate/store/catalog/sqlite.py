"""Embedded SQLite catalog store: the local default, one file under the working directory."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from foldgate.errors import ConflictError, StoreError
from foldgate.model.catalog import CatalogVersion
from foldgate.store.catalog.base import CatalogStore, decode_catalog, encode_catalog
from foldgate.store.connections import connect_sqlite

__all__ = ["SqliteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    tenant TEXT NOT NULL, version TEXT NOT NULL, created_at REAL NOT NULL, doc BLOB NOT NULL,
    PRIMARY KEY (tenant, version));
CREATE TABLE IF NOT EXISTS pointers (
    tenant TEXT PRIMARY KEY, version TEXT NOT NULL, updated_at REAL NOT NULL);
"""


class SqliteStore(CatalogStore):
    """SQLite-backed store; safe to share between threads of one process.

    ``keep`` bounds how many versions per tenant are retained (the current one always is).
    """

    def __init__(self, path: str | Path, *, keep: int = 5) -> None:
        self.path = Path(path)
        self.keep = max(1, keep)
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="store")

    def current_version(self, tenant: str) -> str | None:
        """The id of the tenant's current version."""
        with self._lock:
            row = self._db.execute("SELECT version FROM pointers WHERE tenant = ?", (tenant,)).fetchone()
        return None if row is None else str(row[0])

    def load_version(self, tenant: str, version: str) -> CatalogVersion | None:
        """A stored version, None if absent."""
        with self._lock:
            row = self._db.execute(
                "SELECT doc FROM versions WHERE tenant = ? AND version = ?", (tenant, version)
            ).fetchone()
        return None if row is None else decode_catalog(bytes(row[0]))

    def has_version(self, tenant: str, version: str) -> bool:
        """Whether the version's row exists (a version and its pointer are written in one transaction)."""
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM versions WHERE tenant = ? AND version = ?", (tenant, version)
            ).fetchone()
        return row is not None

    def publish(self, catalog: CatalogVersion, *, expected_current: str | None) -> None:
        """Insert the version and flip the pointer in one transaction (compare-and-set)."""
        blob = encode_catalog(catalog)
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                row = db.execute(
                    "SELECT version FROM pointers WHERE tenant = ?", (catalog.tenant,)
                ).fetchone()
                current = None if row is None else row[0]
                if current != expected_current:
                    db.execute("ROLLBACK")
                    raise ConflictError(
                        f"tenant {catalog.tenant!r} moved to {current} while indexing from {expected_current}"
                    )
                db.execute(
                    "INSERT INTO versions (tenant, version, created_at, doc) VALUES (?, ?, ?, ?)",
                    (catalog.tenant, catalog.version, catalog.created_at, blob),
                )
                db.execute(
                    "INSERT INTO pointers (tenant, version, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(tenant) DO UPDATE SET version = excluded.version, "
                    "updated_at = excluded.updated_at",
                    (catalog.tenant, catalog.version, time.time()),
                )
                db.execute(
                    "DELETE FROM versions WHERE tenant = ? AND version NOT IN "
                    "(SELECT version FROM versions WHERE tenant = ? ORDER BY version DESC LIMIT ?)",
                    (catalog.tenant, catalog.tenant, self.keep),
                )
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise StoreError(f"cannot publish catalog for {catalog.tenant!r}: {exc}") from exc

    def tenants(self) -> list[str]:
        """Tenants that have a current version."""
        with self._lock:
            rows = self._db.execute("SELECT tenant FROM pointers ORDER BY tenant").fetchall()
        return [str(r[0]) for r in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
