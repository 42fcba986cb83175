"""How a durable task's call ends (SEP-2663 error semantics): a tool that ran and answered isError ends
the task ``completed`` with that result; a protocol error (the upstream's JSON-RPC error, or foldgate
getting no answer) ends it ``failed`` with the error inlined and no result kept."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import UpstreamError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.principal import Principal
from foldgate.model.tool import Tool
from foldgate.serve.results import error_result
from foldgate.serve.task_context import Call, TaskRequest, note_protocol_error, task_request
from foldgate.serve.tasks import TaskService
from foldgate.store.tasks.base import TaskRecord
from foldgate.store.tasks.sqlite import SqliteTaskStore

OWNER = Principal("acme", key="tok1")


async def run_as_task(call: Call) -> TaskRecord:
    """Run ``call`` as a task (the server pins ``task: always``) and return its settled record."""
    store = SqliteTaskStore(":memory:")
    tasks = TaskService(store, poll_interval_ms=1000)
    config = parse_tenant_config(
        {"servers": [{"name": "crm", "url": "https://crm.example/mcp", "task": "always"}]}
    )
    tool = catalog_from_tools("acme", [Tool("crm", "export", "Exports.", {"type": "object"})]).tools[0]
    req = TaskRequest(era="2026-07-28")
    token = task_request.set(req)
    try:
        await tasks.run(OWNER, config, config.servers[0], tool, {}, call)
    finally:
        task_request.reset(token)
    assert req.created is not None
    await asyncio.gather(*tasks._supervisors)  # the in-process call has run to its stored outcome
    settled = store.get(req.created.task_id)
    assert settled is not None
    return settled


async def test_a_tool_error_ends_the_task_completed_with_its_result() -> None:
    tool_error = {"content": [{"type": "text", "text": "nothing to process"}], "isError": True}

    async def failing_job() -> dict[str, Any]:
        return tool_error

    record = await run_as_task(failing_job)
    assert record.status == "completed"
    assert record.error is None
    assert record.result is not None
    assert json.loads(record.result) == tool_error


async def test_an_upstream_protocol_error_ends_the_task_failed_with_the_error_and_no_result() -> None:
    async def protocol_error_job() -> dict[str, Any]:
        # What the call path does with an upstream's JSON-RPC error: notes it, answers an error result.
        exc = UpstreamError("crm: export failed upstream: Internal error: the job crashed", rpc_code=-32603)
        note_protocol_error(exc)
        return error_result(exc)

    record = await run_as_task(protocol_error_job)
    assert record.status == "failed"
    assert record.result is None
    assert record.error is not None
    assert json.loads(record.error) == {
        "code": -32603,
        "message": "crm: export failed upstream: Internal error: the job crashed",
    }
