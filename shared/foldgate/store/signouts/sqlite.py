"""Signed-out console sessions in the embedded SQLite file (local mode)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from foldgate.errors import StoreError
from foldgate.store.connections import connect_sqlite
from foldgate.store.signouts.base import SignOutStore

__all__ = ["SqliteSignOutStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS console_signouts (sid TEXT PRIMARY KEY, until REAL NOT NULL);
"""


class SqliteSignOutStore(SignOutStore):
    """Signed-out sessions in the embedded SQLite file; expired rows are purged on every sign-out."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="sign-out store")

    def sign_out(self, sid: str, until: float) -> None:
        """Upsert the record (the later expiry wins) and drop expired ones."""
        with self._lock:
            try:
                self._db.execute("DELETE FROM console_signouts WHERE until <= ?", (time.time(),))
                self._db.execute(
                    "INSERT INTO console_signouts (sid, until) VALUES (?, ?) "
                    "ON CONFLICT(sid) DO UPDATE SET until = max(until, excluded.until)",
                    (sid, float(until)),
                )
            except sqlite3.Error as exc:
                raise StoreError(f"cannot record a console sign-out: {exc}") from exc

    def signed_out(self, sid: str) -> bool:
        """One primary-key lookup."""
        with self._lock:
            try:
                row = self._db.execute("SELECT until FROM console_signouts WHERE sid = ?", (sid,)).fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read console sign-outs: {exc}") from exc
        return row is not None and float(row[0]) > time.time()

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
