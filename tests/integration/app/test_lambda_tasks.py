"""Durable tasks on the cloud path (issue 28): McpFunction (functions/mcp/app.py under Mangum) behind the
test HTTP -> API Gateway v2 bridge, TaskWorkerFunction (functions/taskworker/app.py) started by its
Event invoke, the official Python client polling through the bridge.

The worker runs as another Lambda instance would: its own handler, event loop and gateway, in a thread
the invoke starts, sharing only the store with McpFunction. The upstream is a real MCP server on
loopback whose tools sleep. One call runs 40 seconds (past API Gateway's 30 s limit); the others are
short, with the window set low.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient
from tests.integration.serve.test_tasks import Tasks
from tests.integration.telemetry.conftest import serving
from tests.lambda_http import lambda_http
from tests.lambdas import LambdaContext, load_function
from tests.node_clients import CONFORMANCE_DIR, need_node_clients
from tests.slow_upstream import SlowUpstream

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


class Stack:
    """The functions under test, the bridge's URL, and the worker invocations started."""

    def __init__(self, url: str, slow: SlowUpstream, worker: Handler) -> None:
        self.url = url
        self.slow = slow
        self.worker = worker
        self.invocations: list[threading.Thread] = []
        self.outcomes: list[dict[str, Any]] = []

    def invoke(self, task_id: str) -> None:
        """lambda:InvokeFunction, InvocationType Event: queued, then run by another instance."""

        def run() -> None:
            self.outcomes.append(self.worker({"task_id": task_id}, LambdaContext()))

        thread = threading.Thread(target=run, name=f"taskworker-{task_id[:6]}")
        self.invocations.append(thread)
        thread.start()

    def join(self) -> None:
        for thread in self.invocations:
            thread.join(120)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("lambda-tasks")
    slow = SlowUpstream()
    with serving(slow.app()) as upstream:
        doc = {
            "routing_mode": "direct",
            "servers": [
                {
                    "name": "slow",
                    "url": f"{upstream}/mcp/",
                    "timeout_s": 120,
                    "sync_window_s": 1,
                    "tools": {"export": {"task": "always"}},
                }
            ],
        }
        (tmp / "foldgate.json").write_text(json.dumps(doc))
        store = SqliteStore(tmp / "store.sqlite3")
        report = asyncio.run(
            Indexer(store, UpstreamClient()).index_tenant("default", parse_tenant_config(doc))
        )
        assert report.changed
        store.close()
        env = {
            "FOLDGATE_STORE": "sqlite",
            "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
            "FOLDGATE_CONFIG_SOURCE": "file",
            "FOLDGATE_CONFIG_FILE": str(tmp / "foldgate.json"),
            "FOLDGATE_TASK_WORKER_FUNCTION": "TaskWorkerFunction",
            "FOLDGATE_TASK_SYNC_WINDOW_S": "20",
        }
        mcp = load_function("mcp", "mcp_function_tasks_app", env).handler
        worker = load_function("taskworker", "taskworker_function_app", env).handler
        running = Stack("", slow, worker)
        # The Event invoke, as boto3 would send it, reaches the worker here instead of Lambda.
        mcp.app.state.gateway.tasks.worker = running.invoke
        with lambda_http(mcp) as (url, _):
            running.url = url
            yield running
        running.join()


async def test_a_forty_second_call_completes_as_a_task_through_the_lambda_path(stack: Stack) -> None:
    tasks = Tasks()
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(
            streamable_http_client(f"{stack.url}/mcp/all", http_client=http), cache=None, extensions=[tasks]
        ) as c,
    ):
        result = await c.call_tool("slow__export", {"seconds": 40})
        assert result.content[0].text == "slept 40.0"  # type: ignore[union-attr]
    assert len(tasks.handles) == 1
    assert 40.0 in stack.slow.finished


HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


async def rpc(http: httpx2.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    msg = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    r = await http.post(f"{url}/mcp/all", json=msg, headers=HEADERS)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


async def test_a_read_only_call_past_its_window_is_handed_to_the_worker(stack: Stack) -> None:
    """The window (1 s here) passes in McpFunction: the in-process call is abandoned and the worker
    sends it again; a client without tasks gets the key, then the result from task_result."""
    before = len(stack.invocations)
    async with httpx2.AsyncClient(timeout=60) as http:
        params = {"name": "slow__sleep", "arguments": {"seconds": 2.5}}
        first = (await rpc(http, stack.url, "tools/call", params))["result"]
        body = json.loads(first["content"][0]["text"])
        assert body["status"] == "working"
        while True:
            fetched = await rpc(
                http, stack.url, "tools/call", {"name": "task_result", "arguments": {"key": body["key"]}}
            )
            text = fetched["result"]["content"][0]["text"]
            if text == "slept 2.5":
                break
            assert json.loads(text)["status"] == "working"
            await anyio.sleep(json.loads(text)["poll_after_s"])  # the answer's own hint
    assert len(stack.invocations) == before + 1  # the worker sent it
    assert stack.slow.finished.count(2.5) == 1  # the abandoned first send never finished upstream


async def test_a_call_that_may_not_be_sent_twice_keeps_its_request(stack: Stack) -> None:
    """Past the window, a tool that is neither read-only nor idempotent is not handed off (the worker
    would send it again): it answers in its request, as without tasks."""
    before = len(stack.invocations)
    async with httpx2.AsyncClient(timeout=60) as http:
        params = {"name": "slow__export", "arguments": {"seconds": 1.5}}
        result = (await rpc(http, stack.url, "tools/call", params))["result"]
    assert result["content"][0]["text"] == "slept 1.5"
    assert len(stack.invocations) == before


def test_the_typescript_sdk_client_completes_a_task_through_the_lambda_path(stack: Stack) -> None:
    """The TS SDK's own task API (2025-11-25: params.task, then its tasks/get polling and tasks/result)."""
    node = need_node_clients()
    proc = subprocess.run(
        [str(node), str(CONFORMANCE_DIR / "ts_task_client.mjs"), f"{stack.url}/mcp/all", "slow__export",
         json.dumps({"seconds": 2})],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    messages = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    kinds = [m["type"] for m in messages]
    assert kinds[0] == "taskCreated"
    assert kinds[-1] == "result", messages[-1]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "slept 2.0"}]
    assert (
        messages[0]["task"]["taskId"]
        == messages[-1]["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
    )


async def test_a_cancel_reaches_the_call_running_in_the_worker(stack: Stack) -> None:
    """tasks/cancel answered by McpFunction marks the task; the worker, polling the record at the
    hinted interval, abandons the upstream request, which the upstream sees as a cancellation."""
    async with httpx2.AsyncClient(timeout=60) as http:
        params = {"name": "slow__export", "arguments": {"seconds": 60}, "task": {"ttl": 60_000}}
        task = (await rpc(http, stack.url, "tools/call", params))["result"]["task"]
        assert await anyio.to_thread.run_sync(stack.slow.began.wait, 10)  # under way in the worker
        cancelled = (await rpc(http, stack.url, "tasks/cancel", {"taskId": task["taskId"]}))["result"]
        assert cancelled["status"] == "cancelled"
        assert await anyio.to_thread.run_sync(stack.slow.cancelled.wait, 15)
        got = (await rpc(http, stack.url, "tasks/get", {"taskId": task["taskId"]}))["result"]
        assert got["status"] == "cancelled"
    stack.join()
    assert {"task": "cancelled"} in stack.outcomes
