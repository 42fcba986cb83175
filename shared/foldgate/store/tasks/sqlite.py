"""Durable tasks in the embedded SQLite file (local mode): conditional writes are one UPDATE each."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from foldgate.errors import StoreError
from foldgate.store.connections import connect_sqlite
from foldgate.store.tasks.base import TaskRecord, TaskStore

__all__ = ["SqliteTaskStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, owner TEXT NOT NULL, tenant TEXT NOT NULL, tool TEXT NOT NULL,
    status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL NOT NULL,
    poll_interval_ms INTEGER NOT NULL, status_message TEXT, result TEXT, error TEXT,
    call TEXT NOT NULL, upstream_server TEXT, upstream_task_id TEXT, input_requests TEXT);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, created_at DESC, task_id DESC);
"""
_COLUMNS = (
    "task_id, owner, tenant, tool, status, created_at, updated_at, expires_at, poll_interval_ms, "
    "status_message, result, error, call, upstream_server, upstream_task_id, input_requests"
)
# Columns added after the first release (a file made before them gains them on open).
_ADDED = (("upstream_server", "TEXT"), ("upstream_task_id", "TEXT"), ("input_requests", "TEXT"))
_NOT_TERMINAL = "status NOT IN ('completed', 'failed', 'cancelled')"


def _row(record: TaskRecord) -> tuple[Any, ...]:
    r = record
    return (
        r.task_id, r.owner, r.tenant, r.tool, r.status, r.created_at, r.updated_at, r.expires_at,
        r.poll_interval_ms, r.status_message, r.result, r.error, r.call, r.upstream_server,
        r.upstream_task_id, r.input_requests,
    )  # fmt: skip


def _record(row: tuple[Any, ...]) -> TaskRecord:
    return TaskRecord(
        str(row[0]), str(row[1]), str(row[2]), str(row[3]), row[4], float(row[5]), float(row[6]),
        float(row[7]), int(row[8]), row[9], row[10], row[11], str(row[12]), row[13], row[14], row[15],
    )  # fmt: skip


class SqliteTaskStore(TaskStore):
    """Tasks in the embedded SQLite file; expired rows are purged on create."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="task store")
        self._add_columns()

    def _add_columns(self) -> None:
        have = {str(row[1]) for row in self._run("read the schema", "PRAGMA table_info(tasks)", ())[0]}
        for column, kind in _ADDED:
            if column in have:
                continue
            try:
                self._run("upgrade the schema", f"ALTER TABLE tasks ADD COLUMN {column} {kind}", ())
            except StoreError:
                # Another process sharing the file may have added it between the look and the ALTER.
                again = {
                    str(row[1]) for row in self._run("read the schema", "PRAGMA table_info(tasks)", ())[0]
                }
                if column not in again:
                    raise

    def _run(self, what: str, sql: str, args: tuple[Any, ...]) -> tuple[list[Any], int]:
        """The rows and the row count of one statement (read under the lock: one shared connection)."""
        with self._lock:
            try:
                cursor = self._db.execute(sql, args)
                return cursor.fetchall(), cursor.rowcount
            except sqlite3.Error as exc:
                raise StoreError(f"cannot {what}: {exc}") from exc

    def create(self, record: TaskRecord) -> None:
        """Insert the task (and drop expired ones)."""
        self._run("purge expired tasks", "DELETE FROM tasks WHERE expires_at < ?", (time.time(),))
        marks = ", ".join("?" * 16)
        self._run("create a task", f"INSERT INTO tasks ({_COLUMNS}) VALUES ({marks})", _row(record))

    def get(self, task_id: str) -> TaskRecord | None:
        """The task, None when absent or expired."""
        rows, _ = self._run(
            "read a task", f"SELECT {_COLUMNS} FROM tasks WHERE task_id = ? AND expires_at >= ?",
            (task_id, time.time()),
        )  # fmt: skip
        return _record(rows[0]) if rows else None

    def transition(self, record: TaskRecord) -> bool:
        """One UPDATE guarded by the stored status: the first terminal write wins."""
        r = record
        _, count = self._run(
            "update a task",
            "UPDATE tasks SET status = ?, updated_at = ?, status_message = ?, result = ?, error = ?, "
            "call = ?, poll_interval_ms = ?, upstream_server = ?, upstream_task_id = ?, input_requests = ? "
            f"WHERE task_id = ? AND {_NOT_TERMINAL}",
            (r.status, r.updated_at, r.status_message, r.result, r.error, r.call, r.poll_interval_ms,
             r.upstream_server, r.upstream_task_id, r.input_requests, r.task_id),
        )  # fmt: skip
        return count == 1

    def list(
        self, owner: str, *, limit: int, after: str | None = None
    ) -> tuple[list[TaskRecord], str | None]:
        """Newest first; the cursor is the last task's id (its creation time is read back)."""
        args: tuple[Any, ...] = (owner, time.time())
        where = "owner = ? AND expires_at >= ?"
        if after is not None:
            where += (
                " AND (created_at, task_id) < (SELECT created_at, task_id FROM tasks WHERE task_id = ?"
                " AND owner = ?)"
            )
            args += (after, owner)
        rows, _ = self._run(
            "list tasks",
            f"SELECT {_COLUMNS} FROM tasks WHERE {where} ORDER BY created_at DESC, task_id DESC LIMIT ?",
            (*args, limit + 1),
        )
        records = [_record(r) for r in rows[:limit]]
        return records, (records[-1].task_id if len(rows) > limit else None)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
