"""Calling a tool as its upstream's task (foldgate.upstream.tasks) on a plain session, against the
scripted 2026-07-28 task upstream in process: when the extension is declared, how the task is followed,
what of its input requests is passed on, and that input nobody can answer never leaves a call hanging."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from foldgate.errors import UpstreamError, UpstreamInputError
from foldgate.guard.result import guard_value
from foldgate.model.param_headers import HeaderParam
from foldgate.upstream.client import _send_call
from foldgate.upstream.plain_session import PlainSession, RpcError
from foldgate.upstream.relay import MAX_INPUT_REQUESTS, WITHHELD, Relay, relaying
from foldgate.upstream.tasks import (
    MAX_POLL_S,
    MIN_POLL_S,
    TaskLink,
    _interval,
    checked_requests,
    linked,
)
from tests.task_upstream import EXTENSION, ID_PREFIX, RpcFault, TaskUpstream

RELATED = "io.modelcontextprotocol/related-task"


class Heard:
    """A listener that notes what it hears."""

    def __init__(self, *, carries_input: bool = True) -> None:
        self.carries_input = carries_input
        self.events: list[tuple[Any, ...]] = []

    async def started(self, server: str, task_id: str) -> None:
        self.events.append(("started", server, task_id))

    async def plain(self) -> None:
        self.events.append(("plain",))

    async def status(self, status: str, message: str | None, requests: dict[str, Any] | None) -> None:
        self.events.append(("status", status, requests))


class NoExtension(TaskUpstream):
    """The same upstream, declaring no tasks extension."""

    def answer(self, method: str, params: dict[str, Any], declared: bool) -> dict[str, Any]:
        answered = super().answer(method, params, declared)
        if method == "server/discover":
            answered["capabilities"] = {"tools": {}}
        return answered


async def session(up: TaskUpstream) -> PlainSession:
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=up.app()))
    opened = PlainSession("up", "http://up.test/mcp", http, era=None)
    await opened.open()
    return opened


async def test_a_required_tool_is_called_with_the_extension_and_its_task_followed_to_the_result() -> None:
    up = TaskUpstream()
    s = await session(up)
    heard = Heard()
    with linked(TaskLink(support="required", listener=heard)):
        result = await _send_call(s, "job", {"seconds": 0.2})
    assert result == {"content": [{"type": "text", "text": "job done"}]}
    call = next(p for m, p, _ in up.seen if m == "tools/call")
    assert call["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] == {EXTENSION: {}}
    assert heard.events[0] == ("started", "up", f"{ID_PREFIX}1")
    assert ("status", "working", None) in heard.events
    await s.aclose()


async def test_a_task_augmented_call_carries_the_arguments_mcp_param_headers() -> None:
    """SEP-2243 headers go with the tools/call that starts the upstream's task, as with a plain call."""
    up = TaskUpstream()
    s = await session(up)
    region = HeaderParam(path=("region",), name="Region", type="string")
    with linked(TaskLink(support="required", listener=Heard())):
        await _send_call(s, "job", {"seconds": 0.1, "region": "eu-west-1"}, (region,))
    headers = next(h for m, _, h in up.seen if m == "tools/call")
    assert headers.get("mcp-param-region") == "eu-west-1"
    await s.aclose()


async def test_an_optional_tool_runs_as_a_task_only_when_the_gateway_runs_the_call_as_one() -> None:
    up = TaskUpstream()
    s = await session(up)
    with linked(TaskLink(support="optional", prefer=False)):
        plain = await _send_call(s, "confirm", {})
    assert plain["content"] == [{"type": "text", "text": "confirmed without a task"}]
    assert "tasks/get" not in up.methods()
    await s.aclose()


async def test_a_required_tool_is_sent_plain_for_a_client_that_could_have_declared_tasks() -> None:
    up = TaskUpstream()
    s = await session(up)
    heard = Heard()
    with (
        linked(TaskLink(support="required", refuse_required=True, listener=heard)),
        pytest.raises(RpcError) as refused,
    ):
        await _send_call(s, "job", {})
    assert refused.value.code == -32021
    assert heard.events == [("plain",)]
    await s.aclose()


async def test_an_upstream_without_the_extension_gets_a_plain_call_and_the_listener_hears_it_first() -> None:
    up = NoExtension()
    s = await session(up)
    heard = Heard()
    with linked(TaskLink(support="optional", prefer=True, listener=heard)):
        result = await _send_call(s, "confirm", {})
    assert result["content"] == [{"type": "text", "text": "confirmed without a task"}]
    call = next(p for m, p, _ in up.seen if m == "tools/call")
    assert "extensions" not in call["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert heard.events == [("plain",)]
    await s.aclose()


@pytest.mark.parametrize("listener", [None, Heard(carries_input=False)], ids=["no-listener", "no-input"])
async def test_input_nobody_can_answer_ends_the_call_naming_it_and_cancels_the_upstream_task(
    listener: Heard | None,
) -> None:
    up = TaskUpstream()
    s = await session(up)
    with (
        linked(TaskLink(support="optional", prefer=True, listener=listener)),
        pytest.raises(UpstreamInputError) as ended,
    ):
        await _send_call(s, "confirm", {})
    assert "Proceed?" in ended.value.message
    assert up.tasks[f"{ID_PREFIX}1"].cancelled
    await s.aclose()


async def test_input_required_is_heard_with_its_requests_rebuilt() -> None:
    up = TaskUpstream()
    s = await session(up)
    heard = Heard()

    async def answered_once_heard(status: str, message: str | None, requests: dict[str, Any] | None) -> None:
        heard.events.append(("status", status, requests))
        if status == "input_required":
            up.tasks[f"{ID_PREFIX}1"].answers = {"ok": {"action": "accept", "content": {"ok": True}}}

    heard.status = answered_once_heard  # type: ignore[method-assign]
    with linked(TaskLink(support="optional", prefer=True, listener=heard)):
        result = await _send_call(s, "confirm", {})
    assert result["content"] == [{"type": "text", "text": "confirmed: {'ok': True}"}]
    waiting = [e for e in heard.events if e[:2] == ("status", "input_required")]
    assert waiting[0][2] == {
        "ok": {
            "method": "elicitation/create",
            "params": {
                "message": "Proceed?",
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            },
        }
    }
    await s.aclose()


def ask(method: str = "elicitation/create", **params: Any) -> dict[str, Any]:
    return {"method": method, "params": params}


@pytest.mark.parametrize(
    "raw",
    [
        None,
        {},
        [ask()],
        {"k": ask("tools/call")},
        {"k": ask("ping")},
        {"k": {"method": "elicitation/create", "params": "text"}},
        {"k" * 201: ask()},
        {"": ask()},
        {f"k{i}": ask() for i in range(MAX_INPUT_REQUESTS + 1)},
        {"k": ask(message="x" * 300_000)},
    ],
    ids=[
        "none",
        "empty",
        "list",
        "not-input",
        "ping",
        "params-text",
        "long-key",
        "empty-key",
        "too-many",
        "huge",
    ],
)
def test_input_requests_that_are_not_all_relayable_are_not_passed_on(raw: Any) -> None:
    assert checked_requests(raw) is None


def test_input_requests_are_rebuilt_without_the_upstreams_meta() -> None:
    raw = {"a": ask(message="Hi", _meta={"secret": 1}), "b": {"method": "sampling/createMessage", "extra": 1}}
    assert checked_requests(raw) == {
        "a": {"method": "elicitation/create", "params": {"message": "Hi"}},
        "b": {"method": "sampling/createMessage", "params": {}},
    }


@pytest.mark.parametrize(
    ("hint", "pause"),
    [(1, MIN_POLL_S), (10**9, MAX_POLL_S), (250, 0.25), ("fast", 1.0), (True, 1.0), (None, 1.0)],
)
def test_the_upstreams_poll_interval_hint_is_bounded(hint: Any, pause: float) -> None:
    assert _interval({"pollIntervalMs": hint}) == pause


async def test_a_task_handle_without_a_usable_id_is_an_upstream_error() -> None:
    class BadId(TaskUpstream):
        def answer(self, method: str, params: dict[str, Any], declared: bool) -> dict[str, Any]:
            answered = super().answer(method, params, declared)
            if method == "tools/call":
                answered["taskId"] = "bad\nid"
            return answered

    up = BadId()
    s = await session(up)
    with linked(TaskLink(support="required")), pytest.raises(UpstreamError, match="usable taskId"):
        await _send_call(s, "job", {})
    await s.aclose()


class LegacyTaskUpstream(TaskUpstream):
    """A 2025-11-25 upstream with task-augmented tools/call: ``params.task`` asks for a task, its
    outcome is fetched with ``tasks/result`` (which carries the related-task ``_meta``)."""

    def answer(self, method: str, params: dict[str, Any], declared: bool) -> dict[str, Any]:
        if method == "server/discover":
            raise RpcFault(-32601, "Method not found")
        if method == "initialize":
            caps = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
            return {
                "protocolVersion": "2025-11-25",
                "capabilities": caps,
                "serverInfo": {"name": "x", "version": "1"},
            }
        if method == "tools/call":
            if not isinstance(params.get("task"), dict):
                raise RpcFault(-32601, "job must be called as a task")
            created = super().answer(method, params, declared=True)
            return {
                "task": {k: created[k] for k in ("taskId", "status")} | {"ttl": 60_000, "pollInterval": 100}
            }
        if method == "tasks/result":
            task = self.tasks[params["taskId"]]
            done = self.status(task)
            if done["status"] == "failed":
                raise RpcFault(-32603, "the job crashed")
            return {**done["result"], "_meta": {RELATED: {"taskId": task.task_id}, "kept": 1}}
        if method == "tasks/get":
            got = super().answer(method, params, declared=True)
            return {k: v for k, v in got.items() if k not in ("result", "error", "inputRequests")}
        return super().answer(method, params, declared)


async def test_a_2025_upstream_runs_a_required_tool_as_a_task_augmented_call_fetched_with_tasks_result() -> (
    None
):
    up = LegacyTaskUpstream()
    s = await session(up)
    assert s.version == "2025-11-25"
    heard = Heard()
    with linked(TaskLink(support="required", listener=heard)):
        result = await _send_call(s, "job", {"seconds": 0.2})
    # The upstream's related-task _meta (its own task id) is dropped; the rest of _meta stays.
    assert result == {"content": [{"type": "text", "text": "job done"}], "_meta": {"kept": 1}}
    assert next(p for m, p, _ in up.seen if m == "tools/call")["task"] == {"ttl": 3_600_000}
    assert up.methods()[-1] == "tasks/result"
    assert heard.events[0] == ("started", "up", f"{ID_PREFIX}1")
    with linked(TaskLink(support="required")), pytest.raises(RpcError, match="crashed"):
        await _send_call(s, "job", {"seconds": 0, "fail": "protocol"})
    await s.aclose()


async def test_an_upstream_tasks_status_and_input_requests_pass_the_calls_guard_first() -> None:
    """W3-01: what an upstream task says while it waits (its statusMessage and inputRequests, kept on
    the gateway's task and shown on tasks/get) passes the running call's result guard; a request the
    guard withholds ends the call and cancels the upstream's task."""

    def rewrite(server: str, value: Any) -> Any:
        return guard_value(value, lambda text: text.replace("Proceed", "[screened]"))

    up = TaskUpstream()
    s = await session(up)
    heard = Heard()

    async def answered_once_heard(status: str, message: str | None, requests: dict[str, Any] | None) -> None:
        heard.events.append(("status", status, requests))
        if status == "input_required":
            up.tasks[f"{ID_PREFIX}1"].answers = {"ok": {"action": "accept", "content": {"ok": True}}}

    heard.status = answered_once_heard  # type: ignore[method-assign]
    with relaying(Relay(screen=rewrite)), linked(TaskLink(support="optional", prefer=True, listener=heard)):
        await _send_call(s, "confirm", {})
    waiting = [e for e in heard.events if e[:2] == ("status", "input_required")]
    assert waiting[0][2]["ok"]["params"]["message"] == "[screened]?"

    withheld = Heard()
    with (
        relaying(Relay(screen=lambda server, value: WITHHELD if isinstance(value, dict) else value)),
        linked(TaskLink(support="optional", prefer=True, listener=withheld)),
        pytest.raises(UpstreamInputError, match="withheld by the gateway's guard"),
    ):
        await _send_call(s, "confirm", {})
    assert not [e for e in withheld.events if e[:2] == ("status", "input_required")]
    await s.aclose()
