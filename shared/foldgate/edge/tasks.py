"""Durable MCP tasks on the wire (issue 28): both protocol generations, answered from the store.

* **2025-11-25** (task-augmented requests): the server advertises ``capabilities.tasks`` in
  ``initialize``; a ``tools/call`` with ``params.task`` is answered ``{"task": Task}``; ``tasks/get``,
  ``tasks/result`` (waits for the outcome), ``tasks/list`` and ``tasks/cancel`` follow.
* **2026-07-28** (the ``io.modelcontextprotocol/tasks`` extension): advertised under
  ``capabilities.extensions`` in ``server/discover``; a ``tools/call`` whose per-request capabilities
  name the extension may be answered ``resultType: "task"``; ``tasks/get`` (the result inlined),
  ``tasks/update`` and ``tasks/cancel`` follow, each refused with -32021 for a request that does not
  declare the extension.

A task whose call runs as its upstream's own (``foldgate.serve.upstream_tasks``) shows the upstream's
``input_required`` with its requests on ``tasks/get``; ``tasks/update`` forwards the answers to pending
requests there, and a ``tasks/cancel`` that wins is forwarded too.

Every answer comes from the task store, so any instance answers for any task. A task is visible only to
the credential that created it: any other caller gets exactly the "not found" a missing task gets.

``tools/call`` itself still runs on the usual path (plain or SDK); this module only tells the call path
how the client takes task handles (:data:`foldgate.serve.tasks.task_request`) and, when the call became
a task, answers the handle in place of the placeholder result (:func:`answer_handles`). ``initialize``
and ``server/discover`` answers are extended the same way with the task capabilities.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import math
import time
from collections.abc import Callable
from contextvars import Token
from datetime import UTC, datetime
from typing import Any, Final

from starlette.requests import Request
from starlette.types import Message, Send

from foldgate.edge.jsonrpc import CLIENT_CAPABILITIES_META
from foldgate.edge.protocol import MODERN_PROTOCOL_VERSIONS
from foldgate.errors import FoldgateError, InvalidRequestError, NotFoundError, UpstreamError
from foldgate.model.deadline import time_left
from foldgate.model.jsonutil import wire
from foldgate.model.principal import Principal
from foldgate.model.rpc_body import RpcBody
from foldgate.serve.gateway import Gateway
from foldgate.serve.recording import current
from foldgate.serve.task_context import TaskRequest, task_request
from foldgate.serve.tasks import TaskService
from foldgate.store.tasks.base import TaskRecord

__all__ = [
    "TASKS_EXTENSION",
    "TASK_METHODS",
    "answer_handles",
    "answer_task_method",
    "parse",
    "task_request_of",
    "task_scope",
]

log = logging.getLogger(__name__)

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
RELATED_TASK_META: Final = "io.modelcontextprotocol/related-task"
TASK_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update"})
_MODERN_ONLY: Final = frozenset({"tasks/update"})
_HANDSHAKE_ONLY: Final = frozenset({"tasks/result", "tasks/list"})
_CAPABILITIES_2025: Final[dict[str, Any]] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
_NOT_FOUND: Final = "Failed to retrieve task: Task not found"
_MISSING_CAPABILITY: Final = -32021
# SEP-2243: a routing header (Mcp-Method, Mcp-Name) that disagrees with the body is refused.
_HEADER_MISMATCH: Final = -32020
# tasks/result waits at most this long where the request has no deadline of its own (local serve).
_RESULT_WAIT_S: Final = 900.0
_LIST_PAGE: Final = 50
# The methods this module looks at, as they appear in a body (a JSON string may escape them, which
# only sends such a request down the usual path, where tasks/* is then unknown: never a wrong answer).
_MENTIONS: Final = (b'"tasks/', b'"tools/call"', b'"initialize"', b'"server/discover"')


class Parsed:
    """One JSON-RPC request this module looks at: id, method, params, protocol version."""

    __slots__ = ("method", "params", "rid", "version")

    def __init__(self, rid: Any, method: str, params: dict[str, Any], version: str) -> None:
        self.rid = rid
        self.method = method
        self.params = params
        self.version = version

    @property
    def modern(self) -> bool:
        """True at 2026-07-28."""
        return self.version in MODERN_PROTOCOL_VERSIONS

    def declares_extension(self) -> bool:
        """Whether this request's own capabilities (2026-07-28 ``_meta``) name the tasks extension."""
        meta = self.params.get("_meta")
        caps = meta.get(CLIENT_CAPABILITIES_META) if isinstance(meta, dict) else None
        extensions = caps.get("extensions") if isinstance(caps, dict) else None
        return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def parse(body: RpcBody, request: Request) -> Parsed | None:
    """The request when it is one JSON-RPC request object (anything else is not this module's)."""
    msg = body.message
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        return None
    params = msg.get("params", {})
    rid = msg.get("id")
    if not isinstance(params, dict) or isinstance(rid, bool) or not isinstance(rid, int | str):
        return None
    version = request.headers.get("mcp-protocol-version") or "2025-11-25"
    return Parsed(rid, msg["method"], params, version)


def _header_name(value: str) -> str | None:
    """An ``Mcp-Name`` value as the name it carries: verbatim, or ``=?base64?...?=`` decoded (None:
    undecodable, which matches no name)."""
    if not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def routing_mismatch(parsed: Parsed, request: Request) -> str | None:
    """Why a 2026-07-28 tasks/* request's routing headers disagree with its body (SEP-2243), or None.

    A load balancer may route on these headers, so one that names another method or task than the body
    is refused rather than answered for the body (as the SDK refuses it for tools/call)."""
    if not parsed.modern:
        return None  # routing headers belong to the stateless era
    methods = request.headers.getlist("mcp-method")
    if methods and methods != [parsed.method]:
        return "Mcp-Method header does not match the request body"
    names = request.headers.getlist("mcp-name")
    task_id = parsed.params.get("taskId")
    if names and (len(names) > 1 or not isinstance(task_id, str) or _header_name(names[0]) != task_id):
        return "Mcp-Name header does not match the request body's taskId"
    return None


def task_request_of(parsed: Parsed) -> TaskRequest:
    """How this tools/call's client takes task handles (an empty request: it takes none)."""
    if parsed.modern:
        if parsed.declares_extension():
            return TaskRequest(era="2026-07-28", modern=True)
        return TaskRequest(modern=True)
    task = parsed.params.get("task")
    if not isinstance(task, dict):
        return TaskRequest()
    ttl = task.get("ttl")
    ttl_ms = ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0 else None
    return TaskRequest(era="2025-11-25", requested=True, ttl_ms=ttl_ms)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_json(record: TaskRecord, *, modern: bool) -> dict[str, Any]:
    """The Task object of either generation (2026-07-28 renames ttl and pollInterval)."""
    # Whole seconds: expiry is rounded up to a second, so this is the retention the task was given.
    ttl_ms = max(0, math.floor(record.expires_at - record.created_at)) * 1000
    task: dict[str, Any] = {"taskId": record.task_id, "status": record.status}
    if record.status_message is not None:
        task["statusMessage"] = record.status_message
    task |= {"createdAt": _iso(record.created_at), "lastUpdatedAt": _iso(record.updated_at)}
    if modern:
        task |= {"ttlMs": ttl_ms, "pollIntervalMs": record.poll_interval_ms}
    else:
        task |= {"ttl": ttl_ms, "pollInterval": record.poll_interval_ms}
    return task


def handle_json(record: TaskRecord, *, modern: bool) -> dict[str, Any]:
    """The answer to a tools/call that became a task."""
    if modern:
        return {"resultType": "task", **task_json(record, modern=True)}
    return {"task": task_json(record, modern=False)}


async def answer_task_method(
    parsed: Parsed, tasks: TaskService, principal: Principal, send: Send, gateway: Gateway | None = None
) -> None:
    """Answer one tasks/* request (errors as JSON-RPC errors, never an HTTP error); ``gateway`` reaches
    the upstream of a task that runs as the upstream's own (update and cancel are forwarded there)."""
    try:
        outcome = await _task_method(parsed, tasks, principal, gateway)
    except NotFoundError:
        outcome = _error(-32602, _NOT_FOUND)
    except InvalidRequestError as exc:
        outcome = _error(-32602, f"Invalid params: {exc.message}")
    except UpstreamError as exc:
        log.warning("%s failed upstream: %s", parsed.method, exc.message)
        outcome = _error(-32603, "Internal error: the task's upstream did not take the update; retry shortly")
    except FoldgateError as exc:
        log.warning("%s failed: %s", parsed.method, exc.message)
        outcome = _error(-32603, "Internal error: the task store is unavailable; retry shortly")
    body = {"jsonrpc": "2.0", "id": parsed.rid, **outcome}
    if parsed.modern and "result" in body:
        body["result"] = {"resultType": "complete", **body["result"]}
    await _send_json(send, body)


def _error(code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"error": error}


def _task_id(params: dict[str, Any]) -> str:
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise NotFoundError(_NOT_FOUND)
    return task_id


async def _task_method(
    parsed: Parsed, tasks: TaskService, principal: Principal, gateway: Gateway | None
) -> dict[str, Any]:
    method, params, modern = parsed.method, parsed.params, parsed.modern
    if (modern and method in _HANDSHAKE_ONLY) or (not modern and method in _MODERN_ONLY):
        return _error(-32601, f"Method not found: {method} is not served at {parsed.version}")
    if modern and not parsed.declares_extension():
        required: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        return _error(_MISSING_CAPABILITY, "Missing required client capability", required)
    if method == "tasks/list":
        cursor = params.get("cursor")
        records, after = tasks.list(
            principal, limit=_LIST_PAGE, cursor=cursor if isinstance(cursor, str) else None
        )
        listed: dict[str, Any] = {"tasks": [task_json(r, modern=False) for r in records]}
        if after is not None:
            listed["nextCursor"] = after
        return {"result": listed}
    task_id = _task_id(params)
    if method == "tasks/get":
        record = tasks.get(principal, task_id)
        got = task_json(record, modern=modern)
        if modern:
            got |= _inlined(record)
        return {"result": got}
    if method == "tasks/cancel":
        record, won = tasks.cancel(principal, task_id)
        if won and gateway is not None and record.upstream_task_id is not None:
            # Only here has the cancel a caller: the upstream's task is cancelled as this caller.
            from foldgate.serve.upstream_tasks import forward_cancel  # only tasks of upstream tasks

            await forward_cancel(gateway, principal, record)
        if modern:
            return {"result": {}}
        if not won:
            return _error(-32602, f"Cannot cancel task: already {record.status}")
        return {"result": task_json(record, modern=False)}
    if method == "tasks/update":
        record = tasks.get(principal, task_id)  # a foreign or missing task is refused
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            return _error(-32602, "Invalid params: inputResponses must be an object")
        if gateway is not None and record.upstream_task_id is not None:
            # Loaded for tasks whose call runs as the upstream's own only (answers go there).
            from foldgate.serve.upstream_tasks import update_task

            await update_task(gateway, tasks.store, principal, record, responses)
        return {"result": {}}  # nothing pending (or answered already): the same ack
    return await _task_result(tasks, principal, task_id)


def _inlined(record: TaskRecord) -> dict[str, Any]:
    """What a 2026-07-28 tasks/get carries beyond the Task: the result or the error."""
    if record.status == "completed" and record.result is not None:
        return {"result": json.loads(record.result)}
    if record.status == "failed":
        return {"error": json.loads(record.error) if record.error else {"code": -32603, "message": "failed"}}
    if record.status == "input_required" and record.input_requests is not None:
        return {"inputRequests": json.loads(record.input_requests)}  # checked when the upstream sent them
    return {}


async def _task_result(tasks: TaskService, principal: Principal, task_id: str) -> dict[str, Any]:
    """2025-11-25 tasks/result: wait for the outcome (polling the store at the task's interval), for as
    long as this request may run; then the call's result, or its error."""
    left = time_left()
    until = time.monotonic() + (_RESULT_WAIT_S if left is None else max(0.0, left - 1.0))
    record = tasks.get(principal, task_id)
    while not record.terminal:
        pause = min(record.poll_interval_ms / 1000, until - time.monotonic())
        if pause <= 0:
            return _error(-32603, "The task is still working: poll tasks/get, then call tasks/result again")
        await asyncio.sleep(pause)  # polling a store another instance writes: no event to wait on
        record = tasks.get(principal, task_id)
    if record.status == "completed" and record.result is not None:
        result: dict[str, Any] = json.loads(record.result)
        meta = result.get("_meta")
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), RELATED_TASK_META: {"taskId": task_id}}
        return {"result": result}
    if record.status == "failed" and record.error:
        error = json.loads(record.error)
        return {"error": error}
    return _error(-32603, f"The task was {record.status}: {record.status_message or 'no result'}")


Rewrite = Callable[[dict[str, Any]], dict[str, Any] | None]


def answer_handles(send: Send, rewrite: Rewrite, wanted: Callable[[], bool] = lambda: True) -> Send:
    """A ``send`` whose JSON answer ``rewrite`` may replace (it returns the new message, or None to
    keep it): the call path's placeholder becomes the task handle, and ``initialize`` / ``server/discover``
    gain the task capabilities, whichever path (plain or SDK) answered. The answer is parsed only when
    ``wanted()`` says a rewrite may apply (an ordinary tools/call answer passes unread)."""
    start: Message | None = None
    chunks: list[bytes] = []

    async def wrapped(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            if not wanted():
                await send(message)
                return
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        body = b"".join(chunks)
        replaced = _rewritten(start, body, rewrite)
        if replaced is None:
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(replaced)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": replaced})

    return wrapped


def _rewritten(start: Message, body: bytes, rewrite: Rewrite) -> bytes | None:
    kind = dict(start.get("headers", [])).get(b"content-type", b"")
    if start.get("status") != 200 or not kind.startswith(b"application/json"):
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # an answer nested too deep to rewrite goes out as it is
        return None
    if not isinstance(message, dict) or not isinstance(message.get("result"), dict):
        return None
    new = rewrite(message)
    return None if new is None else wire(new)


def handle_rewrite(req: TaskRequest, modern: bool) -> Rewrite:
    """Replace a tools/call answer by the task handle when the call became a task."""

    def rewrite(message: dict[str, Any]) -> dict[str, Any] | None:
        if req.created is None:
            return None
        result = handle_json(req.created, modern=modern)
        meta = message["result"].get("_meta")
        if modern and isinstance(meta, dict):
            result["_meta"] = meta  # the serverInfo stamp every 2026-07-28 result carries
        return {**message, "result": result}

    return rewrite


def capabilities_rewrite(method: str) -> Rewrite:
    """Add the task capabilities to an initialize (2025-11-25) or server/discover answer."""

    def rewrite(message: dict[str, Any]) -> dict[str, Any] | None:
        result = message["result"]
        caps = result.get("capabilities")
        if not isinstance(caps, dict):
            return None
        if method == "initialize":
            if result.get("protocolVersion") != "2025-11-25":
                return None  # tasks exist from 2025-11-25 on; older clients never see them
            caps = {**caps, "tasks": _CAPABILITIES_2025}
        else:
            extensions = caps.get("extensions")
            caps = {
                **caps,
                "extensions": {**(extensions if isinstance(extensions, dict) else {}), TASKS_EXTENSION: {}},
            }
        return {**message, "result": {**result, "capabilities": caps}}

    return rewrite


class task_scope:
    """Around one request on a gateway with tasks: answers tasks/* itself (yields None), else yields
    the ``send`` the usual path answers on, with this call's :class:`TaskRequest` set for the call path.

    A class rather than an async generator: every request on such a gateway enters one."""

    __slots__ = ("_body", "_gateway", "_principal", "_request", "_send", "_surface", "_token")

    def __init__(
        self,
        request: Request,
        body: RpcBody,
        gateway: Gateway,
        principal: Principal,
        surface: str,
        send: Send,
    ) -> None:
        self._request, self._body, self._gateway = request, body, gateway
        self._principal, self._surface, self._send = principal, surface, send
        self._token: Token[TaskRequest | None] | None = None

    async def __aenter__(self) -> Send | None:
        request, body, gateway, principal, send = (
            self._request, self._body, self._gateway, self._principal, self._send,
        )  # fmt: skip
        assert gateway.tasks is not None
        # Most requests are none of these: a substring test spares them a second parse of the body.
        parsed = parse(body, request) if any(m in body.raw for m in _MENTIONS) else None
        if parsed is None:
            return send
        if parsed.method in TASK_METHODS:
            traced = current()
            if traced is not None:
                task_id = parsed.params.get("taskId")
                traced.work(parsed.method, task_id if isinstance(task_id, str) else "")
            mismatch = routing_mismatch(parsed, request)
            if mismatch is not None:
                body_out = {"jsonrpc": "2.0", "id": parsed.rid, **_error(_HEADER_MISMATCH, mismatch)}
                await _send_json(send, body_out, status=400)
            else:
                await answer_task_method(parsed, gateway.tasks, principal, send, gateway)
            return None
        if parsed.method in ("initialize", "server/discover"):
            return answer_handles(send, capabilities_rewrite(parsed.method))
        if parsed.method != "tools/call" or gateway.surface_of(principal, self._surface) == "code":
            return send  # agent code's own tool calls never become tasks: the run is the unit
        req = task_request_of(parsed)
        self._token = task_request.set(req)
        return answer_handles(send, handle_rewrite(req, parsed.modern), lambda: req.created is not None)

    async def __aexit__(self, *exc: object) -> None:
        if self._token is not None:
            task_request.reset(self._token)
            self._token = None


async def _send_json(send: Send, message: dict[str, Any], status: int = 200) -> None:
    payload = wire(message)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
