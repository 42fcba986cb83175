"""Where durable MCP tasks live, so that any instance answers ``tasks/get`` for them: the interface.

A task record is the state machine of one long tool call: ``working`` (or ``input_required``, while
an upstream's own task waits for the client's input) until exactly one terminal write wins --
``completed`` / ``failed`` by whoever ran the call, ``cancelled`` by ``tasks/cancel``. Every write is
conditional on the task not being terminal yet, so a cancel and a completion never both win. The
cancel flag is the ``cancelled`` status itself: the runner polls the record and stops the upstream call
when it sees it.

Owners are principal stamps (tenant + credential): the gateway compares them, and a record of another
owner answers exactly as a missing one. Records expire (``expires_at``; DynamoDB TTL in the cloud).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Final, Literal, get_args

__all__ = ["TERMINAL", "TaskRecord", "TaskStatus", "TaskStore"]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
STATUSES: Final = frozenset(get_args(TaskStatus))
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True)
class TaskRecord:
    """One task. ``result`` is the final CallToolResult as JSON text (already cut to the tenant's
    ``tool_response_limit`` by the read_cache rules), ``error`` a JSON-RPC error object as JSON text;
    ``call`` is what a worker needs to run the call (JSON text: the caller's scope, the tool and its
    arguments), empty once settled.

    When the call runs as a task of its upstream (the tasks extension), ``upstream_server`` and
    ``upstream_task_id`` name that task, so any instance can follow it, forward ``tasks/update`` and
    ``tasks/cancel`` to it (never shown to the client); ``input_requests`` is the JSON text of what it
    waits for while ``input_required`` (checked and rebuilt, see ``foldgate.upstream.tasks``)."""

    task_id: str
    owner: str
    tenant: str
    tool: str
    status: TaskStatus
    created_at: float
    updated_at: float
    expires_at: float
    poll_interval_ms: int
    status_message: str | None = None
    result: str | None = None
    error: str | None = None
    call: str = ""
    upstream_server: str | None = None
    upstream_task_id: str | None = None
    input_requests: str | None = None

    @property
    def terminal(self) -> bool:
        """True once completed, failed or cancelled."""
        return self.status in TERMINAL

    def settled(
        self,
        status: TaskStatus,
        now: float,
        *,
        message: str | None = None,
        result: str | None = None,
        error: str | None = None,
    ) -> TaskRecord:
        """This record moved to ``status`` at ``now`` (the call payload dropped once terminal, pending
        input requests dropped with any move: :meth:`waiting` sets them)."""
        call = "" if status in TERMINAL else self.call
        return replace(
            self, status=status, updated_at=now, status_message=message, result=result, error=error,
            call=call, input_requests=None,
        )  # fmt: skip

    def waiting(self, now: float, input_requests: str, message: str | None) -> TaskRecord:
        """This record ``input_required`` at ``now``, waiting for ``input_requests`` (JSON text)."""
        return replace(
            self,
            status="input_required",
            updated_at=now,
            status_message=message,
            input_requests=input_requests,
        )


class TaskStore(ABC):
    """Tasks by id, listed per owner."""

    @abstractmethod
    def create(self, record: TaskRecord) -> None:
        """Store a new task (durably: a ``get`` anywhere finds it once this returns)."""

    @abstractmethod
    def get(self, task_id: str) -> TaskRecord | None:
        """The task, None when absent or expired."""

    @abstractmethod
    def transition(self, record: TaskRecord) -> bool:
        """Write ``record`` (a new status, message, result, error, upstream task or input requests) only
        if the stored task is still not terminal; False when another write settled it first (or it is
        gone)."""

    @abstractmethod
    def list(
        self, owner: str, *, limit: int, after: str | None = None
    ) -> tuple[list[TaskRecord], str | None]:
        """The owner's unexpired tasks, newest first, a page of at most ``limit``, and the cursor of the
        next page (None: this was the last)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
