"""The activity log in the embedded SQLite file (local mode).

One row per event keyed ``(tenant, kind, event_id)``: a listing is a walk down that primary key,
newest first (event ids sort by time), with the filterable fields in columns of their own and the
event itself as JSON. Expired rows are deleted on every write (a batch arrives every second or so at
most, from the buffered recorder) and never returned by a read in between.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from foldgate.errors import StoreError
from foldgate.store.activity.base import ActivityPage, ActivityQuery, ActivityStore, StoredRecord
from foldgate.store.activity.codec import (
    check_query,
    decode_cursor,
    encode_cursor,
    filterable,
    id_bounds,
    kind_of,
    record_from_json,
    record_to_json,
)
from foldgate.store.connections import connect_sqlite

__all__ = ["SqliteActivityStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS activity (
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    event_id TEXT NOT NULL,
    at REAL NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    principal TEXT NOT NULL,
    outcome TEXT NOT NULL,
    expires_at REAL NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, kind, event_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS activity_expiry ON activity (expires_at);
"""


class SqliteActivityStore(ActivityStore):
    """Events in the embedded SQLite file, shared by every thread of the process."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="activity store")

    def put_many(self, records: Sequence[StoredRecord]) -> None:
        """Insert the batch in one transaction (an id written twice keeps its first copy) after deleting
        expired rows."""
        rows = []
        for stored in records:
            record = stored.record.with_id()
            f = filterable(record)
            rows.append(
                (
                    record.tenant,
                    kind_of(record),
                    record.event_id,
                    record.at,
                    f.server,
                    f.tool,
                    f.principal,
                    f.outcome,
                    float(stored.expires_at),
                    record_to_json(record),
                )
            )
        with self._lock:
            try:
                self._db.execute("BEGIN")
                self._db.execute("DELETE FROM activity WHERE expires_at <= ?", (time.time(),))
                self._db.executemany(
                    "INSERT OR IGNORE INTO activity (tenant, kind, event_id, at, server, tool, principal, "
                    "outcome, expires_at, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise StoreError(f"cannot write activity events: {exc}") from exc

    def query(self, query: ActivityQuery) -> ActivityPage:
        """One indexed walk down the tenant's events, newest first, filters in the same statement."""
        check_query(query)
        below = decode_cursor(query)
        low, high = id_bounds(query)
        sql = ["SELECT event_id, doc FROM activity WHERE tenant = ? AND kind = ? AND expires_at > ?"]
        args: list[Any] = [query.tenant, query.kind, time.time()]
        for column, value in (
            ("server", query.server),
            ("tool", query.tool),
            ("principal", query.principal),
            ("outcome", query.outcome),
        ):
            if value is not None:
                sql.append(f"AND {column} = ?")
                args.append(value)
        bounds: tuple[tuple[str, str | float | None], ...] = (
            ("event_id >= ?", low),
            ("event_id < ?", high),
            ("event_id < ?", below),
            ("at >= ?", query.since),
            ("at < ?", query.until),
        )
        for clause, bound in bounds:
            if bound is not None:
                sql.append(f"AND {clause}")
                args.append(bound)
        sql.append("ORDER BY event_id DESC LIMIT ?")
        args.append(query.limit + 1)
        with self._lock:
            try:
                rows = self._db.execute(" ".join(sql), args).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read activity events: {exc}") from exc
        page = rows[: query.limit]
        records = [r for r in (record_from_json(row[1]) for row in page) if r is not None]
        more = len(rows) > query.limit
        return ActivityPage(records, encode_cursor(query.tenant, query.kind, page[-1][0]) if more else None)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
