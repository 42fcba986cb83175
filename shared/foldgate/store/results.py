"""Where oversized tool results wait to be paged back with ``read_cache``: interface and SQLite store.

An entry is the whole result text plus an authorization stamp (who could have produced it); the
gateway compares stamps, so a caller that could not have produced an entry sees the same "not found"
as for a missing key. Entries expire after a TTL.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from foldgate.errors import StoreError
from foldgate.store.connections import connect_sqlite

__all__ = ["CachedResult", "ResultStore", "SqliteResultStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, stamp TEXT NOT NULL, expires_at REAL NOT NULL, data BLOB NOT NULL);
"""


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
