"""Durable tasks' decisions (issue 28) without the wire: which pin applies, what the tenant config
accepts, how a task's outcome is kept (a result over tool_response_limit is cut and kept for
read_cache under the owner's stamp, as on every call path; one too large for a task item becomes an
error result), and that a task's outcome written after a cancel never replaces it."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import ConfigError, StoreError, UpstreamError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.principal import Principal
from foldgate.model.tool import Tool
from foldgate.serve.paging import ResultPager
from foldgate.serve.task_context import TaskRequest, task_mode, task_request
from foldgate.serve.tasks import TaskService
from foldgate.store.results.sqlite import SqliteResultStore
from foldgate.store.tasks.base import TaskRecord
from foldgate.store.tasks.sqlite import SqliteTaskStore
from foldgate.upstream.relay import current_relay

OWNER = Principal("acme", key="tok1")


def server_doc(**extra: Any) -> dict[str, Any]:
    return {"servers": [{"name": "crm", "url": "https://crm.example/mcp", **extra}]}


def test_a_tools_pin_wins_over_its_servers_and_auto_is_the_default() -> None:
    config = parse_tenant_config(server_doc(task="always", tools={"quick": {"task": "never"}, "other": {}}))
    server = config.servers[0]
    assert task_mode(config, server, "quick") == "never"
    assert task_mode(config, server, "other") == "always"
    assert task_mode(config, server, "unlisted") == "always"
    plain = parse_tenant_config(server_doc())
    assert task_mode(plain, plain.servers[0], "x") == "auto"


@pytest.mark.parametrize(
    "doc",
    [
        server_doc(task="sometimes"),
        server_doc(sync_window_s=0),
        server_doc(sync_window_s=901),
        {**server_doc(), "sync_window_s": -1},
        server_doc(tools={"x": {"task": "maybe"}}),
    ],
)
def test_the_config_refuses_task_settings_out_of_range(doc: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        parse_tenant_config(doc)


def service() -> TaskService:
    return TaskService(SqliteTaskStore(":memory:"), results=ResultPager(SqliteResultStore(":memory:")))


def record(tasks: TaskService, limit: int = 1_000) -> TaskRecord:
    now = time.time()
    payload = json.dumps({"principal": {}, "tool": "crm__export", "arguments": {}, "limit": limit})
    task = TaskRecord(
        "t1", OWNER.stamp, "acme", "crm__export", "working", now, now, now + 600, 2000, call=payload
    )
    tasks.store.create(task)
    return task


def test_a_long_result_is_cut_and_kept_for_read_cache_under_the_owners_stamp() -> None:
    tasks = service()
    task = record(tasks, limit=1_000)
    text = "x" * 5_000
    assert tasks.settle(
        task, "completed", result={"content": [{"type": "text", "text": text}], "isError": False}
    )
    stored = json.loads(tasks.get(OWNER, "t1").result or "{}")
    kept = stored["content"][0]["text"]
    assert kept.startswith("x" * 1_000)
    assert "Call read_cache with key" in kept
    key = kept.split('key "')[1].split('"')[0]
    assert tasks.results is not None
    page = tasks.results.read(key, 1_000, 10_000, stamp=OWNER.stamp)
    assert page["text"] == "x" * 4_000


def test_a_result_too_large_for_a_task_item_becomes_an_error_result() -> None:
    tasks = service()
    task = record(tasks)
    huge = {"content": [], "structuredContent": {"rows": ["y" * 1_000] * 400}, "isError": False}
    assert tasks.settle(task, "completed", result=huge)
    stored = json.loads(tasks.get(OWNER, "t1").result or "{}")
    assert stored["isError"] is True
    assert "too large to keep" in stored["content"][0]["text"]


def test_an_outcome_after_a_cancel_is_not_kept() -> None:
    tasks = service()
    task = record(tasks)
    cancelled, won = tasks.cancel(OWNER, "t1")
    assert won
    assert cancelled.status == "cancelled"
    assert not tasks.settle(task, "completed", result={"content": [], "isError": False})
    assert tasks.get(OWNER, "t1").status == "cancelled"
    again, won = tasks.cancel(OWNER, "t1")
    assert (again.status, won) == ("cancelled", False)


def test_task_result_answers_a_running_a_cancelled_and_a_foreign_task() -> None:
    tasks = service()
    record(tasks)
    running = tasks.result_of(OWNER, {"key": "t1"})
    assert json.loads(running["content"][0]["text"])["status"] == "working"
    tasks.cancel(OWNER, "t1")
    cancelled = tasks.result_of(OWNER, {"key": "t1"})
    assert cancelled["isError"] is True
    assert json.loads(cancelled["content"][0]["text"])["error_type"] == "cancelled"
    with pytest.raises(Exception, match="no task for this key"):
        tasks.result_of(Principal("acme", key="tok2"), {"key": "t1"})


class DownStore(SqliteTaskStore):
    """A task store that cannot create tasks (DynamoDB throttling, an outage); ``tried`` is set when a
    create was attempted."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.tried = asyncio.Event()

    def create(self, record: TaskRecord) -> None:
        self.tried.set()
        raise StoreError("the table is unavailable")


def crm_tool(**execution: Any) -> Any:
    tool = Tool("crm", "export", "Exports.", {"type": "object"}, execution=execution or None)
    return catalog_from_tools("acme", [tool]).tools[0]


async def quick_result() -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "done"}], "isError": False}


@pytest.mark.parametrize("pin", ["auto", "always"])
async def test_without_a_task_store_a_call_answers_in_its_request(pin: str) -> None:
    """The window passes (the call ends only once a task was tried), the store refuses the task: the
    call keeps its request and answers there, pinned or not."""
    config = parse_tenant_config({**server_doc(task=pin), "sync_window_s": 0.01})
    store = DownStore()
    tasks = TaskService(store)

    async def slow() -> dict[str, Any]:
        await store.tried.wait()
        return await quick_result()

    token = task_request.set(TaskRequest(era="2026-07-28"))
    try:
        result = await tasks.run(OWNER, config, config.servers[0], crm_tool(), {}, slow)
    finally:
        task_request.reset(token)
    assert result["content"][0]["text"] == "done"


async def test_an_abandoned_request_abandons_its_call() -> None:
    config = parse_tenant_config({**server_doc(), "sync_window_s": 60})
    tasks = service()
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hangs() -> dict[str, Any]:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    token = task_request.set(TaskRequest())
    try:
        request = asyncio.ensure_future(tasks.run(OWNER, config, config.servers[0], crm_tool(), {}, hangs))
        await started.wait()
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
    finally:
        task_request.reset(token)
    await asyncio.wait_for(cancelled.wait(), 5)


class CapabilityMissing(UpstreamError):
    """What an upstream's protocol error that its client must see looks like (a code and data)."""

    def __init__(self) -> None:
        super().__init__("the upstream requires a client capability")
        self.rpc_code = -32021
        self.rpc_data = {"requiredCapabilities": {"elicitation": {}}}


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            CapabilityMissing(),
            {
                "code": -32021,
                "message": "the upstream requires a client capability",
                "data": {"requiredCapabilities": {"elicitation": {}}},
            },
        ),
        (RuntimeError("boom"), {"code": -32603, "message": "the call failed: RuntimeError"}),
    ],
)
async def test_a_call_that_raises_fails_its_task_with_the_json_rpc_error(
    error: Exception, expected: dict[str, Any]
) -> None:
    tasks = service()
    task = record(tasks)

    async def raises() -> dict[str, Any]:
        raise error

    await tasks.drive(task, asyncio.ensure_future(raises()))
    failed = tasks.get(OWNER, "t1")
    assert failed.status == "failed"
    assert json.loads(failed.error or "{}") == expected


@pytest.mark.parametrize(
    ("request_", "tool", "doc", "listened"),
    [
        (TaskRequest(), crm_tool(), server_doc(), False),  # a plain call: no task can come of it
        (TaskRequest(era="2025-11-25"), crm_tool(), server_doc(), False),  # takes tasks, asked none
        (TaskRequest(era="2025-11-25", requested=True), crm_tool(), server_doc(), True),  # asked one
        (TaskRequest(), crm_tool(taskSupport="optional"), server_doc(), True),  # the tool declares tasks
        (TaskRequest(), crm_tool(), {**server_doc(), "sync_window_s": 60}, True),  # a window to outlast
    ],
)
async def test_only_a_call_that_can_become_a_task_has_its_progress_listened_to(
    request_: TaskRequest, tool: Any, doc: dict[str, Any], listened: bool
) -> None:
    """Pay for what is used: the task machinery (and the progress listener that asks the upstream
    for progress) is installed only where the call may become a task, the gateway's or its upstream's."""
    config = parse_tenant_config(doc)
    heard: list[bool] = []
    ran = asyncio.Event()

    async def call() -> dict[str, Any]:
        relay = current_relay()
        heard.append(relay is not None and relay.on_progress is not None)
        ran.set()
        return await quick_result()

    token = task_request.set(request_)
    try:
        await service().run(OWNER, config, config.servers[0], tool, {}, call)
    finally:
        task_request.reset(token)
    await asyncio.wait_for(ran.wait(), 5)  # a call that became a task runs on after its answer
    assert heard == [listened]
