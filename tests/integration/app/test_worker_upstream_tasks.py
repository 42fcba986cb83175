"""The Lambda split for a call that runs as its upstream's task (issue 28): the MCP function's call
gets the upstream's task handle, records it in foldgate's task and hands the task to the worker; the
worker (``run_task``, as TaskWorkerFunction runs it) follows that upstream task instead of calling the
tool again. Each side has its own gateway and upstream client; they share only the task store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldgate.app.taskworker_lambda import run_task
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.principal import Principal
from foldgate.serve.gateway import Gateway
from foldgate.serve.task_context import TaskRequest, task_request
from foldgate.serve.tasks import TaskService
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.tasks.sqlite import SqliteTaskStore
from foldgate.upstream.client import UpstreamClient
from tests.integration.telemetry.conftest import serving
from tests.task_upstream import ID_PREFIX, TASK_TOOLS, TaskUpstream

ME = Principal("default", key="tok-1")


@pytest.fixture
def upstream() -> Iterator[tuple[TaskUpstream, str]]:
    up = TaskUpstream()
    with serving(up.app()) as url:
        yield up, url


def instance(url: str, tasks_db: Path, worker: Any = None) -> tuple[Gateway, TaskService]:
    config = parse_tenant_config(
        {"routing_mode": "direct", "servers": [{"name": "up", "url": f"{url}/mcp", "timeout_s": 60}]}
    )
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", TASK_TOOLS), expected_current=None)
    tasks = TaskService(SqliteTaskStore(tasks_db), worker=worker, poll_interval_ms=100)
    gateway = Gateway(store, StaticConfigSource({"default": config}), UpstreamClient(), tasks=tasks)
    return gateway, tasks


async def test_the_worker_follows_the_upstream_task_the_mcp_function_started_and_never_calls_again(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    up, url = upstream
    handed: list[str] = []
    mcp, mcp_tasks = instance(url, tmp_path / "tasks.db", worker=handed.append)
    req = TaskRequest(era="2026-07-28")
    token = task_request.set(req)
    try:
        placeholder = await mcp.call(ME, "up__job", {"seconds": 0.3})
    finally:
        task_request.reset(token)
    assert req.created is not None
    task_id = req.created.task_id
    assert handed == [task_id]  # handed to the worker, not followed in the MCP function
    assert ID_PREFIX not in json.dumps(placeholder)
    record = mcp_tasks.store.get(task_id)
    assert record is not None
    assert record.upstream_task_id == f"{ID_PREFIX}1"
    assert up.methods().count("tools/call") == 1
    await mcp.aclose()

    worker, worker_tasks = instance(url, tmp_path / "tasks.db")
    outcome = await run_task(worker, worker_tasks, task_id, None)
    assert outcome == "completed"
    assert up.methods().count("tools/call") == 1  # followed, never sent again
    assert "tasks/get" in up.methods()
    done = worker_tasks.store.get(task_id)
    assert done is not None
    assert json.loads(done.result or "{}")["content"] == [{"type": "text", "text": "job done"}]
    await worker.aclose()


async def test_a_call_past_its_window_that_runs_as_an_upstream_task_is_handed_over_not_sent_again(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    """A client that takes no tasks, a tool that is neither read-only nor idempotent: sent again by a
    worker it could act twice, so it would keep its request. Running as its upstream's task, it is
    handed to the worker, which follows that task."""
    up, url = upstream
    handed: list[str] = []
    mcp, mcp_tasks = instance(url, tmp_path / "tasks.db", worker=handed.append)
    mcp_tasks.default_window_s = 0.3
    token = task_request.set(TaskRequest())
    try:
        continues = await mcp.call(ME, "up__job", {"seconds": 1.5})
    finally:
        task_request.reset(token)
    said = json.loads(continues["content"][0]["text"])
    assert said["status"] == "working"
    assert handed == [said["key"]]
    record = mcp_tasks.store.get(said["key"])
    assert record is not None
    assert record.upstream_task_id == f"{ID_PREFIX}1"
    await mcp.aclose()

    worker, worker_tasks = instance(url, tmp_path / "tasks.db")
    assert await run_task(worker, worker_tasks, said["key"], None) == "completed"
    assert up.methods().count("tools/call") == 1
    await worker.aclose()
