"""Tool calls that run as tasks of their upstream (the ``io.modelcontextprotocol/tasks`` extension,
2026-07-28, SEP-2663): calling task-augmented, following the upstream's task, forwarding to it.

A call runs as the upstream's task when the upstream declared the extension (in its ``server/discover``
capabilities) and the call's :class:`TaskLink` says the tool needs or suits one: ``taskSupport``
``required`` (unless the client is a 2026-07-28 one that could have declared tasks itself and did not:
then the upstream's own -32021 tells it so), or ``optional`` when the gateway runs the call as a task of
its own. The call declares the extension in its per-request capabilities; an upstream that answers a
task handle (``resultType: "task"``) is then *followed*: ``tasks/get`` at the interval it hints
(bounded), its status and status message heard by the link's listener, until it ends: ``completed``
returns its inlined result (a tool error included), ``failed`` raises its JSON-RPC error, ``cancelled``
an error. An upstream that answers anything else (a result, an ``input_required`` before any task) is
answered as any call. A 2025-11-25 upstream that declared task-augmented ``tools/call`` (in
``initialize``) is called with ``params.task`` and followed the same way, a finished task's outcome
fetched with ``tasks/result``; it cannot take input inside a task here. The upstream's
``related-task`` ``_meta`` is dropped from results (it names the upstream's task).

``input_required`` inside the upstream's task is heard with its ``inputRequests`` checked and rebuilt
(:func:`checked_requests`: only requests for input a gateway relays, bounded); the gateway's own task
shows them to its client, whose ``tasks/update`` is forwarded (:func:`forward`). Where nothing can carry
them (no listener: a call that is no task of the gateway's), the call ends in a tool error naming what
was asked and the upstream task is cancelled: never a hang. The upstream's task id is the listener's to
keep; it is never shown to the client. Everything the upstream sends is hostile input.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, Protocol

from foldgate.errors import UpstreamError
from foldgate.model.bounded import bounded
from foldgate.model.scoped import scoped
from foldgate.upstream.plain_session import PlainSession, RpcError
from foldgate.upstream.relay import (
    INPUT_METHODS,
    MAX_ASK_BYTES,
    MAX_INPUT_REQUESTS,
    WITHHELD,
    current_relay,
    describe_request,
    refusal,
)

__all__ = [
    "TASKS_EXTENSION",
    "TaskLink",
    "TaskListener",
    "call_tool",
    "checked_requests",
    "current_link",
    "forward",
    "linked",
    "offers_tasks",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
EXTENSIONS: Final[Mapping[str, Any]] = {TASKS_EXTENSION: {}}
RELATED_TASK_META: Final = "io.modelcontextprotocol/related-task"
# A 2025-11-25 upstream takes task-augmented calls (params.task) instead of the extension.
LEGACY_TASKS_VERSION: Final = "2025-11-25"
LEGACY_TTL_MS: Final = 3_600_000
# The upstream's poll interval hint, bounded: never hammered faster, never left longer unread.
MIN_POLL_S: Final = 0.1
MAX_POLL_S: Final = 10.0
DEFAULT_POLL_S: Final = 1.0
MAX_ID_CHARS: Final = 200
_KEY_CHARS: Final = 200
_MESSAGE_CHARS: Final = 500
# How long a best-effort tasks/cancel to an upstream may take.
_CANCEL_S: Final = 5.0


class TaskListener(Protocol):
    """Hears what one call's upstream task does (the gateway's own task keeps it); ``carries_input``:
    its client can answer the upstream task's requests for input (else they end the call)."""

    carries_input: bool

    async def started(self, server: str, task_id: str) -> None:
        """The upstream answered with a task: its id (the listener keeps it; the client never sees it)."""

    async def plain(self) -> None:
        """The call is about to go upstream as a plain call (no task): may wait before it is sent."""

    async def status(self, status: str, message: str | None, requests: dict[str, Any] | None) -> None:
        """The upstream task's status changed (``working`` or ``input_required`` with its requests)."""


@dataclass
class TaskLink:
    """How one tool call may run as a task of its upstream: ``support`` is the tool's
    ``execution.taskSupport``; ``prefer`` that the gateway runs the call as a task of its own (an
    ``optional`` tool then runs as the upstream's too); ``refuse_required`` that the client could have
    declared tasks and did not (a ``required`` tool is then sent plain, and the upstream refuses it with
    -32021); ``follow`` an upstream task already started, followed instead of calling again (a worker
    taking over)."""

    support: str | None
    prefer: bool = False
    refuse_required: bool = False
    follow: str | None = None
    listener: TaskListener | None = None


_LINK: ContextVar[TaskLink | None] = ContextVar("foldgate_task_link", default=None)


def linked(link: TaskLink | None) -> scoped[TaskLink | None]:
    """Within the block, tool calls follow ``link`` (None: plain calls only)."""
    return scoped(_LINK, link)


def current_link() -> TaskLink | None:
    """The running call's link, if any."""
    return _LINK.get()


def offers_tasks(session: PlainSession) -> bool:
    """Whether the upstream runs tool calls as tasks: it declared the tasks extension (2026-07-28), or
    task-augmented ``tools/call`` (``capabilities.tasks.requests.tools.call``, 2025-11-25)."""
    caps = session.server_capabilities
    if not isinstance(caps, dict):
        return False
    if session.modern:
        extensions = caps.get("extensions")
        return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)
    if session.version != LEGACY_TASKS_VERSION:
        return False
    tasks = caps.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    return isinstance(tools, dict) and isinstance(tools.get("call"), dict)


def _as_task(link: TaskLink | None, session: Any) -> bool:
    if link is None or not isinstance(session, PlainSession) or not offers_tasks(session):
        return False
    if link.follow is not None:
        return True
    if link.support == "required":
        return not link.refuse_required
    return link.support == "optional" and link.prefer


async def call_tool(
    session: Any, name: str, arguments: dict[str, Any], *, headers: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The call's result when it runs as the upstream's task (see the module doc); None when it is a
    plain call, which the caller then sends (the listener was told first). ``headers`` are the call's
    ``Mcp-Param-*`` headers, sent with the task-augmented ``tools/call`` as with a plain one."""
    link = current_link()
    if not _as_task(link, session):
        if link is not None and link.listener is not None:
            await link.listener.plain()
        return None
    assert link is not None
    assert isinstance(session, PlainSession)
    task_id = link.follow
    handle: Mapping[str, Any] = {}
    if task_id is None:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if not session.modern:
            params["task"] = {"ttl": LEGACY_TTL_MS}  # 2025-11-25: the request itself asks for a task
        raw = await session.request("tools/call", params, headers=headers, extensions=EXTENSIONS)
        # A 2026-07-28 handle is the result itself; a 2025-11-25 one is under "task".
        found = raw if raw.get("resultType") == "task" else None
        if not session.modern:
            found = raw.get("task") if isinstance(raw.get("task"), Mapping) else None
        if found is None:
            return raw  # answered at once (or input_required before any task): as any call
        handle = found
        task_id = _task_id(handle, session.name)
        if link.listener is not None:
            await link.listener.started(session.name, task_id)
    return await _follow(session, name, task_id, link.listener, _interval(handle))


async def _follow(
    session: PlainSession, tool: str, task_id: str, listener: TaskListener | None, pause: float
) -> dict[str, Any]:
    """Poll the upstream's task until it ends (see the module doc)."""
    last: tuple[str, str | None, str] | None = None
    while True:
        await asyncio.sleep(pause)  # the upstream's hinted interval: a remote state, no event to wait on
        got = await session.request("tasks/get", {"taskId": task_id}, extensions=EXTENSIONS)
        status = got.get("status")
        if status in ("completed", "failed") and not session.modern:
            # 2025-11-25: the outcome is fetched (the call's result, or its JSON-RPC error raised).
            return _unrelated(await session.request("tasks/result", {"taskId": task_id}))
        if status == "completed":
            result = got.get("result")
            if not isinstance(result, dict):
                raise UpstreamError(f"{session.name}: {tool}: the upstream's task completed without a result")
            return _unrelated(result)
        if status == "failed":
            error = got.get("error")
            error = error if isinstance(error, dict) else {}
            code = error.get("code")
            text = error.get("message")
            raise RpcError(
                code if isinstance(code, int) and not isinstance(code, bool) else -32603,
                bounded(text, _MESSAGE_CHARS) if isinstance(text, str) else "the upstream's task failed",
            )
        if status == "cancelled":
            raise RpcError(-32603, "the upstream cancelled its task")
        if status not in ("working", "input_required"):
            raise UpstreamError(f"{session.name}: {tool}: the upstream's task has an unknown status")
        requests = None
        if status == "input_required":
            requests = checked_requests(got.get("inputRequests"))
            if requests is None or listener is None or not listener.carries_input:
                asked = _described(got.get("inputRequests"))
                await _cancel_quietly(session, task_id)
                raise refusal(session.name, tool, asked)
        message = _message(got.get("statusMessage"))
        message, requests = _screened(session.name, message, requests)
        if requests is WITHHELD:
            # The guard withheld what the upstream asks: nothing of it reaches the client or the task.
            await _cancel_quietly(session, task_id)
            raise refusal(session.name, tool, [f"{status}, withheld by the gateway's guard"])
        seen = (str(status), message, json.dumps(requests, sort_keys=True))
        if seen != last and listener is not None:
            await listener.status(str(status), message, requests)
        last = seen
        pause = _interval(got)


def _screened(server: str, message: str | None, requests: dict[str, Any] | None) -> tuple[str | None, Any]:
    """The status message and input requests as the result guard of the running call lets them through
    (the message dropped, the requests WITHHELD, when a block policy fires): they become the task's
    ``statusMessage`` and what ``tasks/get`` shows."""
    relay = current_relay()
    if relay is None or relay.screen is None:
        return message, requests
    if message is not None:
        said = relay.screen(server, message)
        message = said if isinstance(said, str) else None
    if requests is not None:
        requests = relay.screen(server, requests)
    return message, requests


def _unrelated(result: dict[str, Any]) -> dict[str, Any]:
    """A task's result as a tool result: no ``resultType`` (the envelope's, not the call's), and no
    related-task ``_meta`` of the upstream's (it names the upstream's task)."""
    result = {k: v for k, v in result.items() if k != "resultType"}
    meta = result.get("_meta")
    if isinstance(meta, dict) and RELATED_TASK_META in meta:
        kept = {k: v for k, v in meta.items() if k != RELATED_TASK_META}
        result = {k: v for k, v in result.items() if k != "_meta"}
        if kept:
            result["_meta"] = kept
    return result


def checked_requests(raw: Any) -> dict[str, Any] | None:
    """An upstream task's ``inputRequests`` rebuilt for the client: each a request for input a gateway
    relays (``method`` and its ``params`` without ``_meta``), under a bounded key, at most
    ``MAX_INPUT_REQUESTS``; None when any is not (nothing of it is then shown)."""
    if not isinstance(raw, Mapping) or not raw or len(raw) > MAX_INPUT_REQUESTS:
        return None
    requests: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key or len(key) > _KEY_CHARS or not isinstance(value, Mapping):
            return None
        method = value.get("method")
        params = value.get("params")
        if method not in INPUT_METHODS or not isinstance(params, Mapping | None):
            return None
        kept = {k: v for k, v in (params or {}).items() if k != "_meta"}
        if _size(kept) > MAX_ASK_BYTES:
            return None
        requests[key] = {"method": method, "params": kept}
    return requests


def _described(raw: Any) -> list[str]:
    if not isinstance(raw, Mapping):
        return ["input the upstream did not describe"]
    asked = []
    for value in list(raw.values())[:3]:
        method = value.get("method") if isinstance(value, Mapping) else None
        params = value.get("params") if isinstance(value, Mapping) else None
        asked.append(describe_request(str(method), params if isinstance(params, Mapping) else {}))
    return asked


async def forward(session: PlainSession, method: str, task_id: str, params: Mapping[str, Any]) -> None:
    """Send ``tasks/update`` or ``tasks/cancel`` for the upstream's task (its JSON-RPC error raised)."""
    await session.request(method, {**params, "taskId": task_id}, extensions=EXTENSIONS)


async def _cancel_quietly(session: PlainSession, task_id: str) -> None:
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_CANCEL_S):
            await forward(session, "tasks/cancel", task_id, {})


def _task_id(raw: Mapping[str, Any], server: str) -> str:
    task_id = raw.get("taskId")
    if (
        not isinstance(task_id, str)
        or not task_id
        or len(task_id) > MAX_ID_CHARS
        or not task_id.isascii()
        or not task_id.isprintable()
    ):
        raise UpstreamError(f"{server}: the upstream answered a task without a usable taskId")
    return task_id


def _interval(raw: Mapping[str, Any]) -> float:
    hint = raw.get("pollIntervalMs", raw.get("pollInterval"))  # 2026-07-28, else 2025-11-25
    if isinstance(hint, bool) or not isinstance(hint, int | float) or hint != hint:
        return DEFAULT_POLL_S
    return min(MAX_POLL_S, max(MIN_POLL_S, hint / 1000))


def _message(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    # Printable only: it becomes the gateway's statusMessage, read by agents and operators.
    return "".join(c if c.isprintable() else " " for c in bounded(value, _MESSAGE_CHARS))


def _size(value: Any) -> int:
    try:
        return len(json.dumps(value, separators=(",", ":")))
    except (TypeError, ValueError, RecursionError):
        return MAX_ASK_BYTES + 1
