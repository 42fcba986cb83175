"""Durable MCP tasks (issue 28): when a tool call becomes a task, and running it to a stored outcome.

Protocol-free: the edge (:mod:`foldgate.edge.tasks`) tells, per request, whether and how the client
takes task handles (:class:`TaskRequest`, a context variable) and renders records on the wire.

A call becomes a task when the client takes tasks and the tool declares task support
(``execution.taskSupport`` optional or required) or the operator pinned ``task: always`` for the server
or tool (or, on 2025-11-25, the client asked with ``params.task``): then it starts as a task.
Otherwise it runs in the request for at most the sync window (``sync_window_s``: tool's server, else
tenant, else the deployment's default); a call still running then continues as a task, and a client
that takes no tasks gets a tool result naming the key ``task_result`` fetches the outcome with.

A call may also run as a task of its upstream (the upstream declared the tasks extension; the tool
requires tasks, or supports them and the call is a task here): foldgate's task then names the
upstream's and mirrors it, ``input_required`` included (:mod:`foldgate.serve.upstream_tasks`). A
2026-07-28 client's call of a task-supporting tool waits for the upstream's first answer before it
becomes a task: a result or an ``input_required`` (relayed as for any call) is answered as it is.

Where the call runs:

* **In this process** (``foldgate serve``): an asyncio task that writes the outcome to the store. It
  polls the record while it runs, so a ``tasks/cancel`` answered by any instance stops it; the upstream
  request is then abandoned with ``notifications/cancelled``.
* **In a worker** (Lambda: ``worker`` is set): a function cannot keep working after it answers, so a
  call that starts as a task is handed to the TaskWorkerFunction (an asynchronous invoke) before the
  handle is answered. A call whose window passes in the MCP function is handed off only when the tool
  is read-only or idempotent: the in-process call is abandoned (``notifications/cancelled``) and the
  worker sends it again, so a side effect may happen twice only for a tool that declared it harmless.
  Any other tool keeps its request (up to the function's deadline, as without tasks); pin
  ``task: always`` on it so its calls start in the worker.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import secrets
import time
from collections.abc import Callable
from typing import Any, Final

from foldgate.config.tenant import ServerConfig, TenantConfig
from foldgate.errors import FoldgateError, NotFoundError, StoreError, TaskCancelledError, UpstreamError
from foldgate.model.catalog import IndexedTool
from foldgate.model.jsonutil import compact
from foldgate.model.principal import Principal
from foldgate.serve.paging import ResultPager
from foldgate.serve.results import error_result, json_result
from foldgate.serve.task_context import (
    Call,
    CallFailure,
    noting_failure,
    principal_json,
    task_mode,
    task_request,
)
from foldgate.serve.task_progress import ProgressNote
from foldgate.serve.upstream_tasks import UpstreamFollow, answered_first, task_link
from foldgate.store.tasks.base import TaskRecord, TaskStatus, TaskStore
from foldgate.upstream.tasks import linked

__all__ = [
    "TASK_RESULT_FRAGMENT",
    "TASK_RESULT_NAME",
    "TASK_RESULT_TOOL",
    "TaskService",
]

log = logging.getLogger(__name__)

TASK_RESULT_NAME: Final = "task_result"
TASK_RESULT_TOOL: Final[dict[str, Any]] = {
    "name": TASK_RESULT_NAME,
    "description": (
        "The outcome of a call that continued in the background: pass the key its first answer named. "
        "While it runs, says so and when to ask again."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {"key": {"type": "string", "minLength": 1, "maxLength": 200}},
        "required": ["key"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}
TASK_RESULT_FRAGMENT: Final = compact(TASK_RESULT_TOOL)
# A stored result is at most this many characters of JSON (a DynamoDB item holds 400 KB; results are
# cut to tool_response_limit first, so only a huge structuredContent or binary content gets here).
MAX_RESULT_CHARS: Final = 350_000
# A call payload (arguments) a worker could not be handed is never made a task.
MAX_CALL_CHARS: Final = 200_000
_NOT_FOUND: Final = "no task for this key (it may have expired)"


class TaskService:
    """Creates task records, runs their calls to a stored outcome, and reads them for their owner."""

    def __init__(
        self,
        store: TaskStore,
        *,
        results: ResultPager | None = None,
        default_window_s: float | None = None,
        worker: Callable[[str], None] | None = None,
        ttl_s: int = 3600,
        poll_interval_ms: int = 2000,
    ) -> None:
        self.store = store
        self.results = results
        self.default_window_s = default_window_s
        # Starts a task's call elsewhere (the TaskWorkerFunction, by task id); None: in this process.
        self.worker = worker
        self.ttl_s = ttl_s
        self.poll_interval_ms = poll_interval_ms
        # This process's running calls by task id (a cancel answered here stops them at once).
        self._running: dict[str, asyncio.Task[dict[str, Any]]] = {}
        self._supervisors: set[asyncio.Task[None]] = set()

    # -- the call path -------------------------------------------------------------------------

    async def run(
        self,
        principal: Principal,
        config: TenantConfig,
        server: ServerConfig,
        tool: IndexedTool,
        arguments: dict[str, Any],
        call: Call,
    ) -> dict[str, Any]:
        """The call's result, or, when it became a task, the answer for that (see the module doc)."""
        req = task_request.get()
        mode = task_mode(config, server, tool.tool.name)
        if req is None or mode == "never":
            # No task of the gateway's: an upstream that requires one runs it, followed within the call.
            with linked(task_link(tool, prefer=False, refuse_required=False)):
                return await call()
        takes = req.era is not None
        window = server.sync_window_s or config.sync_window_s or self.default_window_s
        asked = takes and (req.requested or mode == "always")
        if window is None and not asked and not tool.tool.declares_tasks:
            # It can become no task, the gateway's or its upstream's (none asked for, none declared, no
            # window to outlast): it pays for none of a task's machinery (no payload, no progress
            # listener asking the upstream for progress nobody reads).
            with linked(task_link(tool, prefer=takes, refuse_required=req.modern and not takes)):
                return await call()
        payload = self._payload(principal, config, tool, arguments, takes_input=req.era == "2026-07-28")
        # Its progress becomes the task's statusMessage once (if ever) it is a task.
        note = ProgressNote(self.store, self.poll_interval_ms / 1000)
        failure = CallFailure()
        declared = mode == "auto" and tool.tool.declares_tasks
        starts = takes and payload is not None and (req.requested or mode == "always" or declared)
        # A 2026-07-28 client's call of a task-supporting tool: the upstream answers first
        # (it may run the call as a task of its own, see serve/upstream_tasks.py).
        upstream_first = starts and req.era == "2026-07-28" and tool.tool.declares_tasks
        follow = UpstreamFollow(self.store, gated=upstream_first, carries_input=req.era == "2026-07-28")
        link = task_link(tool, prefer=takes, refuse_required=req.modern and not takes)
        call = noting_failure(note.around(follow.around(call, link)), failure)
        if upstream_first:
            assert payload is not None
            first = await answered_first(
                call,
                follow,
                lambda: self._try_create(principal, tool, payload, req.ttl_ms, follow),
                lambda record, work: self._become_task(record, work, follow, failure),
                note.attach,
            )
            if not isinstance(first, TaskRecord):
                return first
            req.created = first
            return _handle_result(first)
        if starts:
            assert payload is not None
            record = self._try_create(principal, tool, payload, req.ttl_ms)
            if record is not None:
                note.attach(record)
                await follow.attach(record)
                if self.worker is not None:
                    self._hand_off(record)
                else:
                    self._supervise(record, asyncio.ensure_future(call()), failure)
                req.created = record
                return _handle_result(record)
        if window is None or payload is None:
            return await call()
        work = asyncio.ensure_future(call())
        try:
            done, _ = await asyncio.wait({work}, timeout=window)
        except asyncio.CancelledError:
            work.cancel()  # the request itself was abandoned: so is its call
            raise
        if done:
            return work.result()
        if self.worker is not None and follow.task_id is None and not _rerunnable(tool):
            # Sent again by a worker it could act twice: it keeps its request (module doc). A call that
            # runs as its upstream's task is not sent again: the worker follows that task.
            return await work
        record = self._try_create(principal, tool, payload, req.ttl_ms, follow)
        if record is None:
            return await work  # no task could be kept: the call keeps its request
        note.attach(record)
        await follow.attach(record)
        if self.worker is not None:
            work.cancel()  # the upstream request is abandoned (cancelled upstream, see the module doc)
            # Let the abandonment reach the upstream before this instance answers and is frozen.
            await asyncio.wait({work}, timeout=_ABANDON_S)
            self._hand_off(record)
        else:
            self._supervise(record, work, failure)
        if takes:
            req.created = record
            return _handle_result(record)
        return self._continues(record, window)

    async def _become_task(
        self,
        record: TaskRecord,
        work: asyncio.Task[dict[str, Any]],
        follow: UpstreamFollow,
        failure: CallFailure,
    ) -> None:
        """Run ``work`` (a call whose upstream answered first) as ``record``: in this process, or in a
        worker, which sends the call or follows the upstream's task itself (a plain call still waits
        in ``follow``, unsent; see serve/upstream_tasks.py)."""
        if self.worker is not None:
            work.cancel()
            await asyncio.wait({work}, timeout=_ABANDON_S)
            self._hand_off(record)
        else:
            follow.proceed()
            self._supervise(record, work, failure)

    def _try_create(
        self,
        principal: Principal,
        tool: IndexedTool,
        payload: str,
        ttl_ms: int | None,
        follow: UpstreamFollow | None = None,
    ) -> TaskRecord | None:
        """A new task (naming the upstream's, when the call runs as one), or None when the store
        cannot keep one (the call then answers in its request)."""
        try:
            return self._create(principal, tool, payload, ttl_ms, follow)
        except StoreError as exc:
            log.warning("cannot create a task for %s: %s", tool.published, exc.message)
            return None

    def windowed(self, config: TenantConfig) -> bool:
        """Whether any call of this tenant has a sync window (so may continue past it)."""
        return bool(
            self.default_window_s or config.sync_window_s or any(s.sync_window_s for s in config.servers)
        )

    def _payload(
        self,
        principal: Principal,
        config: TenantConfig,
        tool: IndexedTool,
        arguments: dict[str, Any],
        *,
        takes_input: bool = False,
    ) -> str | None:
        """What a worker needs to run the call, the result limit it ends under, and whether its client
        answers input requests (tasks/update); None: too big."""
        body = {
            "principal": principal_json(principal),
            "tool": tool.published,
            "arguments": arguments,
            "limit": config.tool_response_limit,
            "takes_input": takes_input,
        }
        text = json.dumps(body, ensure_ascii=False)
        return text if len(text) <= MAX_CALL_CHARS else None

    def _create(
        self,
        principal: Principal,
        tool: IndexedTool,
        payload: str,
        ttl_ms: int | None,
        follow: UpstreamFollow | None = None,
    ) -> TaskRecord:
        now = time.time()
        ttl = self.ttl_s if ttl_ms is None else max(60, min(self.ttl_s, ttl_ms // 1000))
        record = TaskRecord(
            task_id=secrets.token_urlsafe(18),
            owner=principal.stamp,
            tenant=principal.tenant,
            tool=tool.published,
            status="working",
            created_at=now,
            updated_at=now,
            expires_at=float(math.ceil(now + ttl)),  # whole seconds (DynamoDB TTL), never early
            poll_interval_ms=self.poll_interval_ms,
            status_message="The call is running.",
            call=payload,
        )
        if follow is not None:
            record = follow.linked_record(record)
        self.store.create(record)
        return record

    def _hand_off(self, record: TaskRecord) -> None:
        assert self.worker is not None
        try:
            self.worker(record.task_id)
        except Exception as exc:  # the worker never started: the task fails now, not at its TTL
            log.error("task %s: cannot start the worker: %s", record.task_id[:6], exc)
            self.settle(
                record, "failed", error={"code": -32603, "message": "the gateway could not start the call"}
            )

    def _continues(self, record: TaskRecord, window: float) -> dict[str, Any]:
        """The answer for a client that takes no task handles: the call continues, fetch it by key."""
        return json_result(
            {
                "status": "working",
                "key": record.task_id,
                "message": (
                    f"{record.tool} is still running after {window:g} s and continues in the background. "
                    f'Call {TASK_RESULT_NAME} with key "{record.task_id}" for its result.'
                ),
                "poll_after_s": record.poll_interval_ms / 1000,
            }
        )

    # -- running ---------------------------------------------------------------------------------

    def _supervise(
        self, record: TaskRecord, work: asyncio.Task[dict[str, Any]], failure: CallFailure
    ) -> None:
        """Run ``work`` to a stored outcome in this process (the supervisor is kept referenced)."""
        self._running[record.task_id] = work
        # Its own context: the request's observation and deadline end with the request.
        supervisor = asyncio.get_running_loop().create_task(
            self.drive(record, work, failure), context=contextvars.Context()
        )
        self._supervisors.add(supervisor)
        supervisor.add_done_callback(self._supervisors.discard)

    async def drive(
        self, record: TaskRecord, work: asyncio.Future[dict[str, Any]], failure: CallFailure | None = None
    ) -> None:
        """Wait for ``work`` while polling the record for a cancel (any instance may have answered
        ``tasks/cancel``); store the outcome unless a cancel won: ``failed`` with the protocol error
        ``failure`` noted (its error result is not kept), else ``completed`` with the result."""
        try:
            while not work.done():
                done, _ = await asyncio.wait({work}, timeout=record.poll_interval_ms / 1000)
                if done:
                    break
                try:
                    stored = await asyncio.to_thread(self.store.get, record.task_id)
                except StoreError as exc:
                    log.warning("task %s: cannot poll for a cancel: %s", record.task_id[:6], exc.message)
                    continue
                if stored is None or stored.terminal:
                    # Cancelled (or expired): the upstream request is abandoned, and unwound here, so
                    # its cancellation is sent before a worker's invocation ends and freezes it.
                    work.cancel()
                    await asyncio.wait({work}, timeout=_ABANDON_S)
                    return
            if work.cancelled():
                return
            try:
                result = work.result()
            except asyncio.CancelledError:
                return
            except Exception as exc:
                self.settle(record, "failed", error=_rpc_error(exc))
                return
            if failure is not None and failure.error is not None:
                self.settle(record, "failed", error=failure.error)
                return
            self.settle(record, "completed", result=result)
        finally:
            self._running.pop(record.task_id, None)

    def settle(
        self,
        record: TaskRecord,
        status: TaskStatus,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> bool:
        """Write the outcome (a result cut by the read_cache rules); False when a cancel won first."""
        text = None
        message = {"completed": "The call completed.", "failed": "The call failed."}.get(status)
        if result is not None:
            text = json.dumps(self._kept(record, result), ensure_ascii=False)
            if len(text) > MAX_RESULT_CHARS:
                too_big = StoreError(
                    f"{record.tool}: the result is too large to keep ({len(text):,} characters)"
                )
                text = json.dumps(error_result(too_big))
        if error is not None:
            message = f"The call failed: {error.get('message')}"
        settled = record.settled(
            status,
            time.time(),
            message=message,
            result=text,
            error=None if error is None else json.dumps(error),
        )
        try:
            return self.store.transition(settled)
        except StoreError as exc:
            log.error("task %s: cannot store its outcome: %s", record.task_id[:6], exc.message)
            return False

    def _kept(self, record: TaskRecord, result: dict[str, Any]) -> dict[str, Any]:
        if self.results is None:
            return result
        limit = json.loads(record.call).get("limit") if record.call else None
        return self.results.truncate(result, limit=int(limit or _DEFAULT_LIMIT), stamp=record.owner)

    # -- reading, for the owner only ---------------------------------------------------------------

    def get(self, principal: Principal, task_id: str) -> TaskRecord:
        """The caller's task; NotFoundError for missing, expired and other callers' tasks alike."""
        record = self.store.get(task_id) if 0 < len(task_id) <= 200 else None
        if record is None or not secrets.compare_digest(record.owner.encode(), principal.stamp.encode()):
            raise NotFoundError(_NOT_FOUND)
        return record

    def list(
        self, principal: Principal, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[TaskRecord], str | None]:
        """The caller's tasks, newest first."""
        return self.store.list(principal.stamp, limit=limit, after=cursor)

    def cancel(self, principal: Principal, task_id: str) -> tuple[TaskRecord, bool]:
        """Mark the caller's task cancelled (and stop its call if it runs here): the record as it is
        now and whether this cancel won (False: it had already ended)."""
        record = self.get(principal, task_id)
        if record.terminal:
            return record, False
        cancelled = record.settled("cancelled", time.time(), message="Cancelled by the client.")
        if not self.store.transition(cancelled):
            return self.get(principal, task_id), False
        work = self._running.get(task_id)
        if work is not None:
            work.cancel()
        return cancelled, True

    def result_of(self, principal: Principal, arguments: Any) -> dict[str, Any]:
        """``task_result``: the stored outcome as the original call would have answered it, or a
        still-running note; an error result for missing and foreign keys alike."""
        key = arguments.get("key") if isinstance(arguments, dict) else None
        if not isinstance(key, str):
            raise NotFoundError(f"{TASK_RESULT_NAME}: key must be the key its first answer named")
        record = self.get(principal, key)
        if record.status == "completed" and record.result is not None:
            stored: dict[str, Any] = json.loads(record.result)
            return stored
        if record.status in ("working", "input_required"):
            return json_result(
                {
                    "status": record.status,
                    "key": record.task_id,
                    "message": f"{record.tool} is still running; ask again in a while.",
                    "poll_after_s": record.poll_interval_ms / 1000,
                }
            )
        why = f"{record.tool}: {record.status_message or record.status}"
        failure = TaskCancelledError(why) if record.status == "cancelled" else UpstreamError(why)
        return error_result(failure, key=key)

    async def aclose(self) -> None:
        """Cancel the calls still running in this process (their tasks stay working until their TTL)."""
        for work in list(self._running.values()):
            work.cancel()
        if self._supervisors:
            await asyncio.gather(*self._supervisors, return_exceptions=True)


_DEFAULT_LIMIT: Final = 50_000
# How long an abandoned in-process call may take to unwind (its cancellation sent) before the handle.
_ABANDON_S: Final = 2.0


def _rpc_error(exc: Exception) -> dict[str, Any]:
    """The JSON-RPC error a failed task carries: an upstream's own protocol error as it came (an error
    with ``rpc_code``, e.g. -32021 with its data), anything else an internal error naming its kind."""
    code = getattr(exc, "rpc_code", None)
    if isinstance(exc, FoldgateError) and isinstance(code, int) and not isinstance(code, bool):
        error: dict[str, Any] = {"code": code, "message": exc.message}
        data = getattr(exc, "rpc_data", None)
        if data is not None:
            error["data"] = data
        return error
    log.error("a task's call failed: %s", type(exc).__name__, exc_info=exc)
    return {"code": -32603, "message": f"the call failed: {type(exc).__name__}"}


def _rerunnable(tool: IndexedTool) -> bool:
    """Whether sending the call again cannot act twice: the tool says it is read-only or idempotent."""
    annotations = tool.tool.annotations or {}
    return annotations.get("readOnlyHint") is True or annotations.get("idempotentHint") is True


def _handle_result(record: TaskRecord) -> dict[str, Any]:
    """What the call path answers when the call became a task (the edge answers the handle instead)."""
    return json_result({"status": "working", "key": record.task_id})
