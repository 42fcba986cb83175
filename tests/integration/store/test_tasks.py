"""Task stores behind durable MCP tasks, SQLite and DynamoDB (moto_server) alike: a created task is
read back whole, expired tasks are gone, the first terminal write wins (a cancel and a completion never
both win), listing is per owner, newest first, in pages, and results of any size a task keeps survive."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from foldgate.store.tasks.base import TaskRecord, TaskStore
from foldgate.store.tasks.dynamodb import DynamoTaskStore
from foldgate.store.tasks.sqlite import SqliteTaskStore
from tests.integration.store.backends import BACKENDS, open_backend


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    yield from open_backend(request, tmp_path, SqliteTaskStore, DynamoTaskStore)


def task(
    task_id: str, *, owner: str = "acme\x1ftok1", created: float | None = None, ttl: float = 600
) -> TaskRecord:
    now = time.time() if created is None else created
    return TaskRecord(
        task_id=task_id,
        owner=owner,
        tenant="acme",
        tool="crm__export",
        status="working",
        created_at=now,
        updated_at=now,
        expires_at=float(int(now + ttl)),  # whole seconds, as the service writes (DynamoDB TTL)
        poll_interval_ms=2000,
        call=json.dumps({"tool": "crm__export", "arguments": {"q": "é"}}),
    )


def test_a_created_task_reads_back_whole(store: TaskStore) -> None:
    record = task("t1")
    store.create(record)
    assert store.get("t1") == record
    assert store.get("t2") is None


def test_expired_tasks_are_gone(store: TaskStore) -> None:
    store.create(task("old", ttl=-1))
    assert store.get("old") is None
    assert store.list("acme\x1ftok1", limit=10) == ([], None)


def test_completion_settles_and_drops_the_call(store: TaskStore) -> None:
    record = task("t1")
    store.create(record)
    result = json.dumps({"content": [{"type": "text", "text": "x" * 300_000}], "isError": False})
    done = record.settled("completed", time.time(), message="done", result=result)
    assert store.transition(done)
    got = store.get("t1")
    assert got is not None
    assert (got.status, got.status_message, got.result, got.call) == ("completed", "done", result, "")


def test_a_cancel_and_a_completion_never_both_win(store: TaskStore) -> None:
    record = task("t1")
    store.create(record)
    assert store.transition(record.settled("cancelled", time.time(), message="cancelled by the client"))
    assert not store.transition(record.settled("completed", time.time(), result="{}"))
    got = store.get("t1")
    assert got is not None
    assert got.status == "cancelled"
    assert got.result is None
    # and the other way round
    other = task("t2")
    store.create(other)
    assert store.transition(other.settled("failed", time.time(), error='{"code": -32603}'))
    assert not store.transition(other.settled("cancelled", time.time()))
    assert store.get("t2").status == "failed"  # type: ignore[union-attr]


def test_non_terminal_updates_keep_the_task_open(store: TaskStore) -> None:
    record = task("t1")
    store.create(record)
    assert store.transition(record.settled("working", time.time(), message="50%"))
    got = store.get("t1")
    assert got is not None
    assert got.status_message == "50%"
    assert got.call == record.call
    assert store.transition(record.settled("completed", time.time(), result="{}"))


def test_an_upstream_task_and_its_input_requests_are_kept_until_settled(store: TaskStore) -> None:
    """The upstream's task id (any instance follows it, forwards update and cancel to it) is written with
    the record and by a transition; pending input requests live only while input_required."""
    record = replace(task("t1"), upstream_server="crm", upstream_task_id="up-7")
    store.create(record)
    assert store.get("t1") == record
    asking = json.dumps({"confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}}})
    assert store.transition(record.waiting(time.time(), asking, "waiting for input"))
    got = store.get("t1")
    assert got is not None
    assert (got.status, got.input_requests, got.upstream_task_id) == ("input_required", asking, "up-7")
    assert store.transition(got.settled("working", time.time()))
    resumed = store.get("t1")
    assert resumed is not None
    assert (resumed.status, resumed.input_requests, resumed.upstream_server) == ("working", None, "crm")
    # A task that became one upstream only later gains the id by a transition.
    later = task("t2")
    store.create(later)
    assert store.transition(replace(later, upstream_server="crm", upstream_task_id="up-8"))
    assert store.get("t2").upstream_task_id == "up-8"  # type: ignore[union-attr]


def test_a_missing_task_cannot_be_settled(store: TaskStore) -> None:
    assert not store.transition(task("ghost").settled("cancelled", time.time()))
    assert store.get("ghost") is None


def test_listing_is_per_owner_newest_first_in_pages(store: TaskStore) -> None:
    base = time.time()
    for i in range(5):
        store.create(task(f"t{i}", created=base + i))
    store.create(task("theirs", owner="acme\x1ftok2", created=base + 10))
    first, cursor = store.list("acme\x1ftok1", limit=2)
    assert [r.task_id for r in first] == ["t4", "t3"]
    assert cursor is not None
    second, cursor = store.list("acme\x1ftok1", limit=2, after=cursor)
    assert [r.task_id for r in second] == ["t2", "t1"]
    third, cursor = store.list("acme\x1ftok1", limit=2, after=cursor)
    assert [r.task_id for r in third] == ["t0"]
    assert cursor is None
    assert [r.task_id for r in store.list("acme\x1ftok2", limit=10)[0]] == ["theirs"]
    assert store.list("acme\x1ftok3", limit=10) == ([], None)


def test_a_task_file_made_before_upstream_tasks_gains_their_columns_and_keeps_its_tasks(
    tmp_path: Path,
) -> None:
    """`foldgate serve` upgraded over an existing file: its tasks table gets the new columns on open."""
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        """CREATE TABLE tasks (
        task_id TEXT PRIMARY KEY, owner TEXT NOT NULL, tenant TEXT NOT NULL, tool TEXT NOT NULL,
        status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL NOT NULL,
        poll_interval_ms INTEGER NOT NULL, status_message TEXT, result TEXT, error TEXT,
        call TEXT NOT NULL);"""
    )
    old = task("t1")
    db.execute(
        "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (old.task_id, old.owner, old.tenant, old.tool, old.status, old.created_at, old.updated_at,
         old.expires_at, old.poll_interval_ms, None, None, None, old.call),
    )  # fmt: skip
    db.commit()
    db.close()
    store = SqliteTaskStore(path)
    assert store.get("t1") == old
    assert store.transition(replace(old, upstream_server="crm", upstream_task_id="up-1"))
    assert store.get("t1").upstream_task_id == "up-1"  # type: ignore[union-attr]
    store.close()
