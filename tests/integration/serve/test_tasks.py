"""Durable MCP tasks through `foldgate`'s app with the official Python client (issue 28, items 1-2).

A real upstream MCP server (the SDK's, over Streamable HTTP on loopback) has a tool that sleeps for as
long as it is asked and notes when it is cancelled. Two gateway instances share one SQLite task store,
as two Lambda instances share the DynamoDB table: a task created through one is polled through the
other. Each call's window is short (``sync_window_s``), so a call of a couple of seconds is "long".
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

from foldgate.app.local import build_local
from foldgate.auth.authority import TokenAuthority
from foldgate.config.settings import Settings
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.app import create_app
from foldgate.errors import NotFoundError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.agent_token import TokenHasher
from foldgate.model.principal import Principal
from foldgate.serve.gateway import Gateway
from foldgate.serve.paging import ResultPager
from foldgate.serve.tasks import TaskService
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.results.sqlite import SqliteResultStore
from foldgate.store.tasks.sqlite import SqliteTaskStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from foldgate.upstream.client import UpstreamClient
from tests.integration.telemetry.conftest import serving
from tests.slow_upstream import TOOLS, SlowUpstream

ANY = TypeAdapter(dict[str, Any])


@pytest.fixture
def upstream() -> Iterator[tuple[SlowUpstream, str]]:
    slow = SlowUpstream()
    with serving(slow.app()) as url:
        yield slow, url


def config(url: str) -> Any:
    return parse_tenant_config(
        {
            "routing_mode": "direct",
            "sync_window_s": 0.5,
            "servers": [
                {
                    "name": "slow",
                    "url": f"{url}/mcp/",
                    "timeout_s": 120,
                    "tools": {"export": {"task": "always"}},
                }
            ],
        }
    )


@contextlib.asynccontextmanager
async def instance(url: str, tasks_db: Path) -> AsyncIterator[tuple[httpx2.AsyncClient, Gateway]]:
    """One gateway instance (its own catalog, upstream client and app) on the shared task store."""
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", TOOLS), expected_current=None)
    results = ResultPager(SqliteResultStore(":memory:"))
    tasks = TaskService(SqliteTaskStore(tasks_db), results=results, poll_interval_ms=100)
    gateway = Gateway(
        store, StaticConfigSource({"default": config(url)}), UpstreamClient(), results=results, tasks=tasks
    )
    app = create_app(gateway)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver", timeout=60) as http:
            yield http, gateway
        await gateway.aclose()


@contextlib.asynccontextmanager
async def client(http: httpx2.AsyncClient, **kw: Any) -> AsyncIterator[Client]:
    async with Client(
        streamable_http_client("http://testserver/mcp/all", http_client=http), cache=None, **kw
    ) as c:
        yield c


# -- 2025-11-25: task-augmented requests (JSON-RPC as the spec writes it: the Python SDK's client
# validates every tools/call answer as a CallToolResult, so it cannot take a CreateTaskResult) ----------

HEADERS_2025 = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


async def rpc(
    http: httpx2.AsyncClient, method: str, params: dict[str, Any], *, token: str | None = None
) -> dict[str, Any]:
    """One JSON-RPC request to /mcp/all; the whole response message."""
    headers = dict(HEADERS_2025)
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    r = await http.post(
        "/mcp/all", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
    )
    assert r.status_code == 200, r.text
    message: dict[str, Any] = r.json()
    return message


async def call_as_task(http: httpx2.AsyncClient, name: str, seconds: float) -> dict[str, Any]:
    params = {"name": name, "arguments": {"seconds": seconds}, "task": {"ttl": 60_000}}
    task: dict[str, Any] = (await rpc(http, "tools/call", params))["result"]["task"]
    return task


async def poll(http: httpx2.AsyncClient, task_id: str, *, until: set[str]) -> dict[str, Any]:
    """tasks/get until the status is one of ``until`` (each answer hints the interval to wait)."""
    while True:
        got: dict[str, Any] = (await rpc(http, "tasks/get", {"taskId": task_id}))["result"]
        if got["status"] in until:
            return got
        await anyio.sleep(got["pollInterval"] / 1000)  # the server's own polling hint


async def test_initialize_at_2025_11_25_advertises_tasks(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    async with instance(url, tmp_path / "tasks.db") as (http, _), client(http, mode="legacy") as c:
        tasks = c.session.server_capabilities.tasks  # type: ignore[union-attr]
        assert tasks is not None
        assert tasks.requests is not None
        assert tasks.requests.tools is not None
        assert tasks.list is not None
        assert tasks.cancel is not None


async def test_a_task_augmented_call_completes_as_a_task(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    slow, url = upstream
    async with instance(url, tmp_path / "tasks.db") as (http, _):
        task = await call_as_task(http, "slow__sleep", 1.5)
        assert task["status"] == "working"
        assert task["pollInterval"] == 100
        assert task["ttl"] == 60_000
        done = await poll(http, task["taskId"], until={"completed", "failed", "cancelled"})
        assert done["status"] == "completed"
        payload = (await rpc(http, "tasks/result", {"taskId": task["taskId"]}))["result"]
        assert payload["content"] == [{"type": "text", "text": "slept 1.5"}]
        assert payload["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        listed = (await rpc(http, "tasks/list", {}))["result"]
        assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]
    assert slow.finished == [1.5]


async def test_tasks_result_waits_for_the_outcome(upstream: tuple[SlowUpstream, str], tmp_path: Path) -> None:
    _, url = upstream
    async with instance(url, tmp_path / "tasks.db") as (http, _):
        task = await call_as_task(http, "slow__sleep", 1.0)
        payload = (await rpc(http, "tasks/result", {"taskId": task["taskId"]}))["result"]
        assert payload["content"] == [{"type": "text", "text": "slept 1.0"}]


async def test_a_task_is_polled_from_a_second_instance(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    async with (
        instance(url, tmp_path / "tasks.db") as (one, _),
        instance(url, tmp_path / "tasks.db") as (two, _),
    ):
        task = await call_as_task(one, "slow__sleep", 1.0)
        done = await poll(two, task["taskId"], until={"completed", "failed"})
        assert done["status"] == "completed"
        payload = (await rpc(two, "tasks/result", {"taskId": task["taskId"]}))["result"]
        assert payload["content"] == [{"type": "text", "text": "slept 1.0"}]


async def test_another_principals_task_answers_as_one_that_does_not_exist(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    async with instance(url, tmp_path / "tasks.db") as (http, gateway):
        task = await call_as_task(http, "slow__sleep", 0.2)
        assert gateway.tasks is not None
        assert gateway.tasks.get(Principal("default"), task["taskId"]).task_id == task["taskId"]
        other = Principal("default", key="tok_other")
        with pytest.raises(NotFoundError) as foreign:
            gateway.tasks.get(other, task["taskId"])
        with pytest.raises(NotFoundError) as missing:
            gateway.tasks.get(other, "no-such-task")
        assert foreign.value.message == missing.value.message
        missing_rpc = await rpc(http, "tasks/get", {"taskId": "no-such-task"})
        assert missing_rpc["error"] == {"code": -32602, "message": "Failed to retrieve task: Task not found"}


async def test_cancel_stops_the_upstream(upstream: tuple[SlowUpstream, str], tmp_path: Path) -> None:
    slow, url = upstream
    async with instance(url, tmp_path / "tasks.db") as (http, _):
        task = await call_as_task(http, "slow__sleep", 60)
        # The upstream call is under way before it is cancelled.
        assert await anyio.to_thread.run_sync(slow.began.wait, 10)
        cancelled = (await rpc(http, "tasks/cancel", {"taskId": task["taskId"]}))["result"]
        assert cancelled["status"] == "cancelled"
        assert await anyio.to_thread.run_sync(slow.cancelled.wait, 10)
        assert (await poll(http, task["taskId"], until={"cancelled", "completed"}))["status"] == "cancelled"
        again = await rpc(http, "tasks/cancel", {"taskId": task["taskId"]})
        assert again["error"]["code"] == -32602
    assert slow.finished == []


async def test_a_cancel_from_another_instance_stops_the_upstream(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    slow, url = upstream
    async with (
        instance(url, tmp_path / "tasks.db") as (one, _),
        instance(url, tmp_path / "tasks.db") as (two, _),
    ):
        task = await call_as_task(one, "slow__sleep", 60)
        # The upstream call is under way before it is cancelled.
        assert await anyio.to_thread.run_sync(slow.began.wait, 10)
        assert (await rpc(two, "tasks/cancel", {"taskId": task["taskId"]}))["result"]["status"] == "cancelled"
        # The instance running the call sees the cancel on its next poll of the store.
        assert await anyio.to_thread.run_sync(slow.cancelled.wait, 10)
    assert slow.finished == []


# -- 2026-07-28: the tasks extension ---------------------------------------------------------------


class TaskHandle(types.Result):
    """The extension's CreateTaskResult, as the claim sees it."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TasksGet(types.Request[types.GetTaskRequestParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: types.GetTaskRequestParams
    name_param = "taskId"


class Tasks(ClientExtension):
    """A minimal client side of io.modelcontextprotocol/tasks: poll tasks/get until the task ends."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.handles: list[TaskHandle] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        self.handles.append(handle)
        while True:
            got = await ctx.session.send_request(
                TasksGet(params=types.GetTaskRequestParams(task_id=handle.task_id)), ANY
            )
            if got["status"] == "completed":
                return types.CallToolResult.model_validate(got["result"])
            assert got["status"] == "working", got
            await anyio.sleep(got["pollIntervalMs"] / 1000)  # the server's own polling hint


async def test_a_pinned_tool_answers_a_task_handle_at_2026(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    tasks = Tasks()
    async with instance(url, tmp_path / "tasks.db") as (http, _), client(http, extensions=[tasks]) as c:
        assert c.protocol_version == "2026-07-28"
        result = await c.call_tool("slow__export", {"seconds": 0.3})
        assert result.content[0].text == "slept 0.3"  # type: ignore[union-attr]
    assert [h.status for h in tasks.handles] == ["working"]


async def test_a_tool_that_declares_task_support_answers_a_task_handle_at_2026(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    tasks = Tasks()
    async with instance(url, tmp_path / "tasks.db") as (http, _), client(http, extensions=[tasks]) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        assert listed["slow__report"].execution is not None
        assert listed["slow__report"].execution.task_support == "optional"
        result = await c.call_tool("slow__report", {"seconds": 0.2})
        assert result.content[0].text == "slept 0.2"  # type: ignore[union-attr]
    assert [h.status for h in tasks.handles] == ["working"]


async def test_a_call_past_its_window_continues_as_a_task_at_2026(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    tasks = Tasks()
    async with instance(url, tmp_path / "tasks.db") as (http, _), client(http, extensions=[tasks]) as c:
        quick = await c.call_tool("slow__sleep", {"seconds": 0.01})
        assert quick.content[0].text == "slept 0.01"  # type: ignore[union-attr]
        assert tasks.handles == []  # inside the window: an ordinary answer
        slow_result = await c.call_tool("slow__sleep", {"seconds": 1.5})
        assert slow_result.content[0].text == "slept 1.5"  # type: ignore[union-attr]
    assert len(tasks.handles) == 1


# -- clients without task support ------------------------------------------------------------------


async def test_a_client_without_tasks_gets_a_key_and_fetches_the_result(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    async with instance(url, tmp_path / "tasks.db") as (http, _), client(http, mode="legacy") as c:
        listed = await c.list_tools()
        assert "task_result" in [t.name for t in listed.tools]
        first = await c.call_tool("slow__sleep", {"seconds": 1.5})
        body = json.loads(first.content[0].text)  # type: ignore[union-attr]
        assert body["status"] == "working"
        assert "task_result" in body["message"]
        while True:
            fetched = await c.call_tool("task_result", {"key": body["key"]})
            text = fetched.content[0].text  # type: ignore[union-attr]
            if text == "slept 1.5":
                break
            waiting = json.loads(text)
            assert waiting["status"] == "working"
            await anyio.sleep(waiting["poll_after_s"])  # the hint the answer carries
        other = await c.call_tool("task_result", {"key": "no-such-key"})
        assert other.is_error


# -- foldgate serve's wiring, with agent tokens ----------------------------------------------------

TOKEN_SECRET = "t" * 32
HEADERS_2026 = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
}


def modern_params(method: str, params: dict[str, Any], *, declares: bool = True) -> dict[str, Any]:
    caps: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}} if declares else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    return {**params, "_meta": meta}


@contextlib.asynccontextmanager
async def served(url: str, tmp_path: Path) -> AsyncIterator[tuple[httpx2.AsyncClient, dict[str, str]]]:
    """`foldgate serve`'s wiring (build_local) with auth on, and two agent tokens of one tenant."""
    settings = Settings(
        sqlite_path=str(tmp_path / "fg.sqlite3"), auth_required=True, token_secret=TOKEN_SECRET
    )
    local = build_local(StaticConfigSource({"default": config(url)}), settings)
    await local.index_all()
    authority = TokenAuthority(SqliteTokenStore(settings.sqlite_path), TokenHasher(TOKEN_SECRET.encode()))
    tokens = {
        who: authority.issue("default", tier="destructive", expires_in=3600)[0] for who in ("mine", "theirs")
    }
    async with local.app.router.lifespan_context(local.app):
        transport = httpx2.ASGITransport(app=local.app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as http:
            yield http, tokens


async def test_another_tokens_tasks_are_answered_as_tasks_that_do_not_exist(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    async with served(url, tmp_path) as (http, tokens):
        params = {"name": "slow__sleep", "arguments": {"seconds": 30}, "task": {"ttl": 60_000}}
        task = (await rpc(http, "tools/call", params, token=tokens["mine"]))["result"]["task"]
        mine = await rpc(http, "tasks/get", {"taskId": task["taskId"]}, token=tokens["mine"])
        assert mine["result"]["status"] == "working"
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            theirs = await rpc(http, method, {"taskId": task["taskId"]}, token=tokens["theirs"])
            missing = await rpc(http, method, {"taskId": "no-such-task"}, token=tokens["theirs"])
            assert theirs == missing, method
            assert theirs["error"]["code"] == -32602, method
        assert (await rpc(http, "tasks/list", {}, token=tokens["theirs"]))["result"] == {"tasks": []}
        listed = (await rpc(http, "tasks/list", {}, token=tokens["mine"]))["result"]["tasks"]
        assert [t["taskId"] for t in listed] == [task["taskId"]]
        # still the owner's to cancel (their cancel above changed nothing)
        assert (await rpc(http, "tasks/cancel", {"taskId": task["taskId"]}, token=tokens["mine"]))["result"][
            "status"
        ] == "cancelled"


async def modern(http: httpx2.AsyncClient, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
    headers = {**HEADERS_2026, "mcp-method": method}
    if "taskId" in params:
        headers["mcp-name"] = params["taskId"]
    if "name" in params:
        headers["mcp-name"] = params["name"]
    msg = {"jsonrpc": "2.0", "id": 7, "method": method, "params": modern_params(method, params, **kw)}
    r = await http.post("/mcp/all", json=msg, headers=headers)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


async def test_the_2026_extension_methods_need_the_declared_capability(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    async with instance(url, tmp_path / "tasks.db") as (http, _):
        discovered = await modern(http, "server/discover", {})
        assert discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"] == {}
        handle = (await modern(http, "tools/call", {"name": "slow__export", "arguments": {"seconds": 0.2}}))[
            "result"
        ]
        assert handle["resultType"] == "task"
        assert handle["status"] == "working"
        assert handle["pollIntervalMs"] == 100
        assert "ttlMs" in handle
        undeclared = await modern(http, "tasks/get", {"taskId": handle["taskId"]}, declares=False)
        assert undeclared["error"]["code"] == -32021
        assert undeclared["error"]["data"] == {
            "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        }
        acked = await modern(http, "tasks/update", {"taskId": handle["taskId"], "inputResponses": {}})
        assert acked["result"] == {"resultType": "complete"}
        assert (await modern(http, "tasks/update", {"taskId": "nope", "inputResponses": {}}))["error"][
            "code"
        ] == -32602
        assert (await modern(http, "tasks/result", {"taskId": handle["taskId"]}))["error"]["code"] == -32601
        while True:
            got = (await modern(http, "tasks/get", {"taskId": handle["taskId"]}))["result"]
            assert got["resultType"] == "complete"
            if got["status"] != "working":
                break
            await anyio.sleep(got["pollIntervalMs"] / 1000)  # the server's own polling hint
        assert got["status"] == "completed"
        assert got["result"]["content"] == [{"type": "text", "text": "slept 0.2"}]
        cancelled = await modern(http, "tasks/cancel", {"taskId": handle["taskId"]})
        assert cancelled["result"] == {"resultType": "complete"}  # an ack, even when it had ended
        # Without the extension declared, never a handle: a pinned call answers in its request.
        plain = (
            await modern(
                http, "tools/call", {"name": "slow__export", "arguments": {"seconds": 0.1}}, declares=False
            )
        )["result"]
        assert plain["content"] == [{"type": "text", "text": "slept 0.1"}]


async def test_a_tasks_get_whose_mcp_name_names_another_task_is_refused_with_32020(
    upstream: tuple[SlowUpstream, str], tmp_path: Path
) -> None:
    """SEP-2243: the Mcp-Name routing header of tasks/get must be the body's taskId."""
    _, url = upstream
    async with instance(url, tmp_path / "tasks.db") as (http, _):
        handle = (await modern(http, "tools/call", {"name": "slow__export", "arguments": {"seconds": 0.2}}))[
            "result"
        ]
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": 9, "method": "tasks/get"}
        msg["params"] = modern_params("tasks/get", {"taskId": handle["taskId"]})
        headers = {**HEADERS_2026, "mcp-method": "tasks/get", "mcp-name": "another-task"}
        r = await http.post("/mcp/all", json=msg, headers=headers)
        assert r.status_code == 400
        assert r.json()["id"] == 9
        assert r.json()["error"]["code"] == -32020
        served = await modern(http, "tasks/get", {"taskId": handle["taskId"]})
        assert served["result"]["taskId"] == handle["taskId"]
