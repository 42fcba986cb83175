"""Quota buckets in the embedded SQLite file (local mode): every process serving from the same file
shares them, each take one IMMEDIATE transaction (read the bucket, write it back) so two processes never
spend the same tokens."""

from __future__ import annotations

import math
import sqlite3
import threading
from pathlib import Path
from typing import Final

from foldgate.errors import StoreError
from foldgate.store.connections import connect_sqlite
from foldgate.store.quotas.base import EXPIRY_MARGIN_S, Bucket, QuotaStore, Taken, portion

__all__ = ["SqliteQuotaStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS quota_buckets (key TEXT PRIMARY KEY, tat REAL NOT NULL, expires_at REAL NOT NULL);
"""
# Full buckets (records past their expiry) are purged at most this often.
_PURGE_EVERY_S: Final = 60.0


class SqliteQuotaStore(QuotaStore):
    """Quota buckets in the embedded SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="quota store")
        self._purged = 0.0

    def take(self, key: str, want: int, bucket: Bucket, now: float, *, least: int = 1) -> Taken:
        """Read and advance the bucket in one write transaction."""
        want = max(1, min(want, bucket.capacity))
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    taken = self._take(key, want, least, bucket, now)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot take from a request quota: {exc}") from exc
        return taken

    def _take(self, key: str, want: int, least: int, bucket: Bucket, now: float) -> Taken:
        if now - self._purged > _PURGE_EVERY_S:
            self._db.execute("DELETE FROM quota_buckets WHERE expires_at < ?", (now,))
            self._purged = now
        row = self._db.execute("SELECT tat FROM quota_buckets WHERE key = ?", (key,)).fetchone()
        tat = float(row[0]) if row is not None else None
        granted = portion(want, least, bucket.available(tat, now))
        if granted == 0:
            assert tat is not None  # no record is a full bucket, and least <= want <= capacity
            return Taken(0, tat)
        after = bucket.after(tat, now, granted)
        self._db.execute(
            "INSERT INTO quota_buckets (key, tat, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET tat = excluded.tat, expires_at = excluded.expires_at",
            (key, after, math.ceil(after) + EXPIRY_MARGIN_S),
        )
        return Taken(granted, after)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
