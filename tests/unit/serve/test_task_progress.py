"""A durable task's statusMessage follows its call's progress (issue 28 item 3): the upstream's latest
notifications/progress (as the relay hands it on) is written to the task, so tasks/get from any
instance says how far the call is; writes are bounded by the poll interval, hostile messages are
cut to printable text, and a settled task is never reopened by a late progress."""

from __future__ import annotations

import asyncio
from typing import Any

from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.principal import Principal
from foldgate.model.tool import Tool
from foldgate.serve.task_context import TaskRequest, task_request
from foldgate.serve.task_progress import ProgressNote, progress_text
from foldgate.serve.tasks import TaskService
from foldgate.store.tasks.sqlite import SqliteTaskStore
from foldgate.upstream.relay import Progress, current_relay

OWNER = Principal("acme", key="tok1")


def test_a_status_line_is_the_share_done_and_the_message_printable_and_bounded() -> None:
    assert progress_text(Progress(2, 5, "indexing files")) == "40% — indexing files"
    assert progress_text(Progress(7, None, None)) == "step 7"
    hostile = progress_text(Progress(1, 2, "line\nbreak\x1b[31m" + "x" * 500))
    assert "\n" not in hostile
    assert "\x1b" not in hostile
    assert len(hostile) <= 200


async def report(progress: Progress) -> None:
    """What the plain upstream session does with a notifications/progress: hand it to the relay."""
    relay = current_relay()
    assert relay is not None
    assert relay.on_progress is not None
    await relay.on_progress(progress)


async def test_a_call_that_becomes_a_task_keeps_its_latest_progress_as_the_status_message() -> None:
    store = SqliteTaskStore(":memory:")
    tasks = TaskService(store, poll_interval_ms=1)
    config = parse_tenant_config(
        {"sync_window_s": 0.05, "servers": [{"name": "crm", "url": "https://crm.example/mcp"}]}
    )
    tool = catalog_from_tools("acme", [Tool("crm", "export", "Exports.", {"type": "object"})]).tools[0]
    became_task, reported, finish = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def long_call() -> dict[str, Any]:
        await report(Progress(1, 4, "before the window"))  # no task yet: kept, not written
        await became_task.wait()
        await report(Progress(3, 4, "exporting rows"))  # written before report returns
        reported.set()
        await finish.wait()
        return {"content": [{"type": "text", "text": "done"}], "isError": False}

    token = task_request.set(TaskRequest(era="2026-07-28"))
    try:
        answer = await tasks.run(OWNER, config, config.servers[0], tool, {}, long_call)
    finally:
        task_request.reset(token)
    (record,), _ = store.list(OWNER.stamp, limit=5)
    assert answer["content"]  # the task's handle: the call continues
    assert store.get(record.task_id).status_message == "The call is running."  # type: ignore[union-attr]
    became_task.set()
    await asyncio.wait_for(reported.wait(), 10)
    assert store.get(record.task_id).status_message == "75% — exporting rows"  # type: ignore[union-attr]
    finish.set()


async def test_writes_are_spaced_by_the_gap_and_never_reopen_a_settled_task() -> None:
    store = SqliteTaskStore(":memory:")
    tasks = TaskService(store, poll_interval_ms=1)
    now = [1000.0]
    note = ProgressNote(store, min_gap_s=2.0, clock=lambda: now[0])
    config = parse_tenant_config({"servers": [{"name": "crm", "url": "https://crm.example/mcp"}]})
    tool = catalog_from_tools("acme", [Tool("crm", "export", "Exports.", {"type": "object"})]).tools[0]
    payload = tasks._payload(OWNER, config, tool, {})
    assert payload is not None
    record = tasks._create(OWNER, tool, payload, None)
    note.attach(record)
    await note.heard(Progress(1, 10, None))
    await note.heard(Progress(2, 10, None))  # within the gap: kept, not written
    assert store.get(record.task_id).status_message == "10%"  # type: ignore[union-attr]
    now[0] += 2.5
    await note.flush()
    assert store.get(record.task_id).status_message == "20%"  # type: ignore[union-attr]
    assert tasks.settle(record, "completed", result={"content": [], "isError": False})
    now[0] += 10
    await note.heard(Progress(9, 10, "late"))
    settled = store.get(record.task_id)
    assert settled is not None
    assert (settled.status, settled.status_message) == ("completed", "The call completed.")
