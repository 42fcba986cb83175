"""The context one task-capable call runs in: how the client takes handles, where a protocol error is
noted, the operator's pin, and the caller a stored call names (split from :mod:`foldgate.serve.tasks`
so the edge, the worker and the task service share it without the service's weight).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from foldgate.config.tenant import ServerConfig, TaskMode, TenantConfig
from foldgate.errors import FoldgateError
from foldgate.model.principal import Principal
from foldgate.store.tasks.base import TaskRecord

__all__ = [
    "Call",
    "CallFailure",
    "TaskRequest",
    "note_protocol_error",
    "noting_failure",
    "principal_json",
    "principal_of",
    "task_mode",
    "task_request",
]


@dataclass
class TaskRequest:
    """What the edge learned of one tools/call: ``era`` is how a task handle can be answered
    ("2025-11-25": ``CreateTaskResult``, "2026-07-28": the tasks extension; None: the client takes no
    handle), ``requested`` that the client asked for one (2025-11-25 ``params.task``), ``ttl_ms`` the
    retention it asked for. ``created`` is set when the call became a task."""

    era: Literal["2025-11-25", "2026-07-28"] | None = None
    requested: bool = False
    ttl_ms: int | None = None
    created: TaskRecord | None = None
    # A 2026-07-28 client (which could declare the tasks extension per request, whether it did or not).
    modern: bool = False


task_request: contextvars.ContextVar[TaskRequest | None] = contextvars.ContextVar(
    "foldgate_task_request", default=None
)


class CallFailure:
    """Where a task's call notes the protocol error it ended in (its result is then not the outcome)."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: dict[str, Any] | None = None


_failure: contextvars.ContextVar[CallFailure | None] = contextvars.ContextVar(
    "foldgate_task_failure", default=None
)


def note_protocol_error(exc: FoldgateError) -> None:
    """Note that the call running in this context ended in a protocol error, not a tool error: the
    upstream answered a JSON-RPC error, or foldgate could not get an answer. The call path still
    answers a request with its error result; a task's call ends ``failed`` with this error inlined
    (the tasks extension keeps ``completed`` for calls that ran, their tool errors included)."""
    failure = _failure.get()
    if failure is None:
        return
    code = exc.details.get("rpc_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else -32603
    failure.error = {"code": code, "message": exc.message}


def task_mode(config: TenantConfig, server: ServerConfig, tool_name: str) -> TaskMode:
    """The operator's pin for this tool: the tool's own, else its server's."""
    override = server.tools.get(tool_name)
    if override is not None and override.task is not None:
        return override.task
    return server.task


def principal_json(principal: Principal) -> dict[str, Any]:
    """The caller as stored in a call payload (:func:`principal_of` reads it back)."""
    return {
        "tenant": principal.tenant,
        "servers": None if principal.servers is None else sorted(principal.servers),
        "tier": principal.tier,
        "key": principal.key,
        "subject": principal.subject,
        "label": principal.label,
    }


def principal_of(call: dict[str, Any]) -> Principal:
    """The caller a stored call payload names (a worker rebuilds exactly that caller's view)."""
    p = call["principal"]
    servers = p.get("servers")
    return Principal(
        tenant=str(p["tenant"]),
        servers=None if servers is None else frozenset(str(s) for s in servers),
        tier=p["tier"],
        key=str(p["key"]),
        subject=p.get("subject"),
        label=str(p.get("label") or ""),
    )


Call = Callable[[], Awaitable[dict[str, Any]]]


def noting_failure(call: Call, failure: CallFailure) -> Call:
    """``call`` noting its protocol error in ``failure`` (:func:`note_protocol_error`)."""

    async def noted() -> dict[str, Any]:
        _failure.set(failure)  # this call's own context: it runs as its own asyncio task
        return await call()

    return noted
