"""Calls that run as a task of their upstream (issue 28, items 1 and 4), through `foldgate serve`'s
wiring with auth on, in front of a 2026-07-28 upstream with the tasks extension (tests/task_upstream.py).

Two gateway instances share one SQLite file (catalog, tokens, tasks), as Lambda instances share the
DynamoDB table: a task started through one is polled, updated and cancelled through the other. The
upstream's own task id stays in foldgate's record: no answer to the client ever carries it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from foldgate.app.local import build_local
from foldgate.auth.authority import TokenAuthority
from foldgate.config.settings import Settings
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.model.agent_token import TokenHasher
from foldgate.store.tasks.sqlite import SqliteTaskStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.integration.telemetry.conftest import serving
from tests.task_upstream import EXTENSION, ID_PREFIX, TaskUpstream

TOKEN_SECRET = "u" * 32
HEADERS_2026 = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
}


@pytest.fixture
def upstream() -> Iterator[tuple[TaskUpstream, str]]:
    up = TaskUpstream()
    with serving(up.app()) as url:
        yield up, url


@contextlib.asynccontextmanager
async def one_instance(url: str, settings: Settings) -> AsyncIterator[httpx2.AsyncClient]:
    config = parse_tenant_config(
        {"routing_mode": "direct", "servers": [{"name": "up", "url": f"{url}/mcp", "timeout_s": 60}]}
    )
    local = build_local(StaticConfigSource({"default": config}), settings)
    await local.index_all()
    async with local.app.router.lifespan_context(local.app):
        transport = httpx2.ASGITransport(app=local.app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as http:
            yield http


@contextlib.asynccontextmanager
async def two_instances(
    url: str, tmp_path: Path
) -> AsyncIterator[tuple[httpx2.AsyncClient, httpx2.AsyncClient, dict[str, str], SqliteTaskStore]]:
    """Two instances on one file, two agent tokens of one tenant, and the shared task store."""
    settings = Settings(
        sqlite_path=str(tmp_path / "fg.sqlite3"), auth_required=True, token_secret=TOKEN_SECRET
    )
    async with one_instance(url, settings) as first, one_instance(url, settings) as second:
        authority = TokenAuthority(SqliteTokenStore(settings.sqlite_path), TokenHasher(TOKEN_SECRET.encode()))
        tokens = {
            w: authority.issue("default", tier="destructive", expires_in=3600)[0] for w in ("mine", "theirs")
        }
        yield first, second, tokens, SqliteTaskStore(settings.sqlite_path)


async def rpc(
    http: httpx2.AsyncClient,
    token: str,
    method: str,
    params: dict[str, Any],
    *,
    extension: bool = True,
    version: str = "2026-07-28",
    status: int = 200,
) -> dict[str, Any]:
    """One JSON-RPC request to /mcp/all; the whole answer. At 2026-07-28 the client declares elicitation
    (and the tasks extension, unless ``extension`` is False) in ``_meta``."""
    headers = {**HEADERS_2026, "mcp-protocol-version": version, "authorization": f"Bearer {token}"}
    if version == "2026-07-28":
        caps: dict[str, Any] = {"elicitation": {"form": {}}}
        if extension:
            caps["extensions"] = {EXTENSION: {}}
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": caps,
            },
        }
        headers["mcp-method"] = method
        named = params.get("taskId", params.get("name"))
        if isinstance(named, str):
            headers["mcp-name"] = named
    msg = {"jsonrpc": "2.0", "id": 3, "method": method, "params": params}
    r = await http.post("/mcp/all", json=msg, headers=headers)
    assert r.status_code == status, r.text
    assert ID_PREFIX not in r.text, f"the upstream's task id reached the client: {r.text}"
    answer: dict[str, Any] = r.json()
    return answer


async def poll(http: httpx2.AsyncClient, token: str, task_id: str, *, until: set[str]) -> dict[str, Any]:
    for _ in range(200):
        got = (await rpc(http, token, "tasks/get", {"taskId": task_id}))["result"]
        if got["status"] in until:
            return got
        await anyio.sleep(0.05)  # polling the task as a client does: no event reaches a client
    raise AssertionError(f"task {task_id} never reached {until}: {got}")


def sent(up: TaskUpstream, method: str) -> list[dict[str, Any]]:
    return [params for m, params, _ in up.seen if m == method]


async def test_a_tool_that_requires_tasks_runs_as_the_upstreams_task_named_only_in_the_record(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    up, url = upstream
    async with two_instances(url, tmp_path) as (first, second, tokens, store):
        handle = (
            await rpc(first, tokens["mine"], "tools/call", {"name": "up__job", "arguments": {"seconds": 0.3}})
        )["result"]
        assert handle["resultType"] == "task"
        call = sent(up, "tools/call")[-1]
        assert call["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] == {EXTENSION: {}}
        record = store.get(handle["taskId"])
        assert record is not None
        assert (record.upstream_server, record.upstream_task_id) == ("up", f"{ID_PREFIX}1")
        done = await poll(second, tokens["mine"], handle["taskId"], until={"completed", "failed"})
        assert done["status"] == "completed"
        assert done["result"]["content"] == [{"type": "text", "text": "job done"}]
        # Followed with the upstream's own id, routing headers included.
        followed = [(p["taskId"], h["mcp-name"]) for m, p, h in up.seen if m == "tasks/get"]
        assert followed
        assert set(followed) == {(f"{ID_PREFIX}1", f"{ID_PREFIX}1")}


async def test_an_upstream_tasks_tool_error_completes_and_its_protocol_error_fails(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    _, url = upstream
    async with two_instances(url, tmp_path) as (first, _, tokens, _store):
        for fail, status in (("tool", "completed"), ("protocol", "failed")):
            args = {"seconds": 0.1, "fail": fail}
            handle = (await rpc(first, tokens["mine"], "tools/call", {"name": "up__job", "arguments": args}))[
                "result"
            ]
            done = await poll(first, tokens["mine"], handle["taskId"], until={"completed", "failed"})
            assert done["status"] == status
            if fail == "tool":
                assert done["result"]["isError"] is True
            else:
                assert "result" not in done
                assert done["error"]["code"] == -32603


async def test_a_cancel_through_another_instance_is_forwarded_to_the_upstreams_task(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    up, url = upstream
    async with two_instances(url, tmp_path) as (first, second, tokens, _store):
        args = {"seconds": 60}
        handle = (await rpc(first, tokens["mine"], "tools/call", {"name": "up__job", "arguments": args}))[
            "result"
        ]
        acked = await rpc(second, tokens["mine"], "tasks/cancel", {"taskId": handle["taskId"]})
        assert acked["result"] == {"resultType": "complete"}
        cancels = [(p["taskId"], h["mcp-name"]) for m, p, h in up.seen if m == "tasks/cancel"]
        assert cancels == [(f"{ID_PREFIX}1", f"{ID_PREFIX}1")]
        assert up.tasks[f"{ID_PREFIX}1"].cancelled
        got = (await rpc(first, tokens["mine"], "tasks/get", {"taskId": handle["taskId"]}))["result"]
        assert got["status"] == "cancelled"


async def test_input_required_inside_the_upstreams_task_reaches_the_client_and_its_answer_goes_back(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    up, url = upstream
    async with two_instances(url, tmp_path) as (first, second, tokens, _store):
        handle = (await rpc(first, tokens["mine"], "tools/call", {"name": "up__confirm", "arguments": {}}))[
            "result"
        ]
        waiting = await poll(second, tokens["mine"], handle["taskId"], until={"input_required", "failed"})
        assert waiting["status"] == "input_required"
        # The upstream's request, rebuilt: its own _meta is not passed on.
        assert waiting["inputRequests"] == {
            "ok": {
                "method": "elicitation/create",
                "params": {
                    "message": "Proceed?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                },
            }
        }
        for bad in ({"ok": "yes"}, ["ok"]):
            refused = await rpc(
                second, tokens["mine"], "tasks/update", {"taskId": handle["taskId"], "inputResponses": bad}
            )
            assert refused["error"]["code"] == -32602
        assert sent(up, "tasks/update") == []  # nothing malformed goes upstream
        answers = {"ok": {"action": "accept", "content": {"ok": True}}, "stray": {"action": "decline"}}
        acked = await rpc(
            second, tokens["mine"], "tasks/update", {"taskId": handle["taskId"], "inputResponses": answers}
        )
        assert acked["result"] == {"resultType": "complete"}
        updates = sent(up, "tasks/update")
        assert [(u["taskId"], u["inputResponses"]) for u in updates] == [
            (f"{ID_PREFIX}1", {"ok": {"action": "accept", "content": {"ok": True}}})
        ]
        # Answered: no longer pending, at once, on either instance.
        got = (await rpc(first, tokens["mine"], "tasks/get", {"taskId": handle["taskId"]}))["result"]
        assert got["status"] == "working"
        assert "inputRequests" not in got
        done = await poll(first, tokens["mine"], handle["taskId"], until={"completed", "failed"})
        assert done["result"]["content"] == [{"type": "text", "text": "confirmed: {'ok': True}"}]


async def test_another_principals_update_and_cancel_answer_as_a_missing_task_and_reach_nothing_upstream(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    up, url = upstream
    async with two_instances(url, tmp_path) as (first, second, tokens, _store):
        handle = (await rpc(first, tokens["mine"], "tools/call", {"name": "up__confirm", "arguments": {}}))[
            "result"
        ]
        await poll(first, tokens["mine"], handle["taskId"], until={"input_required"})
        answers = {"ok": {"action": "accept", "content": {"ok": False}}}
        for method, params in (
            ("tasks/get", {}),
            ("tasks/update", {"inputResponses": answers}),
            ("tasks/cancel", {}),
        ):
            theirs = await rpc(second, tokens["theirs"], method, {"taskId": handle["taskId"], **params})
            missing = await rpc(second, tokens["theirs"], method, {"taskId": "no-such-task", **params})
            assert theirs == missing, method
            assert theirs["error"]["code"] == -32602, method
        assert sent(up, "tasks/update") == []
        assert sent(up, "tasks/cancel") == []
        mine = (await rpc(first, tokens["mine"], "tasks/get", {"taskId": handle["taskId"]}))["result"]
        assert mine["status"] == "input_required"


async def test_an_upstreams_input_required_before_its_task_is_relayed_then_the_retry_becomes_the_task(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    up, url = upstream
    async with two_instances(url, tmp_path) as (first, second, tokens, _store):
        asked = (await rpc(first, tokens["mine"], "tools/call", {"name": "up__ask_first", "arguments": {}}))[
            "result"
        ]
        assert asked["resultType"] == "input_required"
        assert "taskId" not in asked
        assert list(asked["inputRequests"]) == ["user_name"]
        assert asked["requestState"] != "up-state"  # the gateway's sealed state, never the upstream's
        retry = {
            "name": "up__ask_first",
            "arguments": {},
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
            "requestState": asked["requestState"],
        }
        handle = (await rpc(second, tokens["mine"], "tools/call", retry))["result"]
        assert handle["resultType"] == "task"
        assert "requestState" not in handle
        last = sent(up, "tools/call")[-1]
        assert last["requestState"] == "up-state"
        assert last["inputResponses"] == {"user_name": {"action": "accept", "content": {"name": "Alice"}}}
        done = await poll(first, tokens["mine"], handle["taskId"], until={"completed", "failed"})
        assert done["result"]["content"] == [{"type": "text", "text": "Hello, Alice!"}]


async def test_a_client_that_takes_no_tasks_still_gets_the_result_of_a_tool_that_requires_them(
    upstream: tuple[TaskUpstream, str], tmp_path: Path
) -> None:
    up, url = upstream
    async with two_instances(url, tmp_path) as (first, _, tokens, _store):
        # A handshake-era client cannot take a task here: the gateway waits on the upstream's within the call.
        answer = await rpc(
            first,
            tokens["mine"],
            "tools/call",
            {"name": "up__job", "arguments": {"seconds": 0.2}},
            version="2025-11-25",
        )
        assert answer["result"]["content"] == [{"type": "text", "text": "job done"}]
        assert "tasks/get" in up.methods()
        # A 2026-07-28 client that could declare tasks and did not is told so by the upstream (-32021).
        refused = await rpc(
            first,
            tokens["mine"],
            "tools/call",
            {"name": "up__job", "arguments": {}},
            extension=False,
            status=400,
        )
        assert refused["error"]["code"] == -32021
        assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
