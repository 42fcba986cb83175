"""Oversized tool results in the embedded SQLite file (local mode)."""

from __future__ import annotations

import sqlite3
import threading
import time
import zlib
from pathlib import Path

from foldgate.errors import StoreError
from foldgate.store.connections import connect_sqlite
from foldgate.store.results.base import CachedResult, ResultStore

__all__ = ["SqliteResultStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, stamp TEXT NOT NULL, expires_at REAL NOT NULL, data BLOB NOT NULL);
"""


class SqliteResultStore(ResultStore):
    """Results in the embedded SQLite file (local mode); expired rows are purged on write."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="result store")

    def put(self, key: str, result: CachedResult) -> None:
        """Insert the result (compressed) and drop expired ones."""
        blob = zlib.compress(result.text.encode("utf-8"), 6)
        with self._lock:
            try:
                self._db.execute("DELETE FROM results WHERE expires_at < ?", (time.time(),))
                self._db.execute(
                    "INSERT INTO results (key, stamp, expires_at, data) VALUES (?, ?, ?, ?)",
                    (key, result.stamp, result.expires_at, blob),
                )
            except sqlite3.Error as exc:
                raise StoreError(f"cannot cache a tool result: {exc}") from exc

    def get(self, key: str) -> CachedResult | None:
        """The result, None when absent or expired."""
        with self._lock:
            try:
                row = self._db.execute(
                    "SELECT stamp, expires_at, data FROM results WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read a cached tool result: {exc}") from exc
        if row is None or row[1] < time.time():
            return None
        return CachedResult(str(row[0]), zlib.decompress(row[2]).decode("utf-8"), float(row[1]))

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
