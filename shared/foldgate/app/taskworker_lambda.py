"""The TaskWorkerFunction's body (issue 28): runs one durable task's upstream call and stores its outcome.

The MCP function starts it with an asynchronous invoke naming the task (``{"task_id": ...}``) before it
answers the task handle. The worker reads the task (the caller's scope, the tool, the arguments), builds
exactly that caller's view, sends the call upstream (or, when the MCP function's call already runs as
a task of the upstream's, follows that task instead of calling again) and, while it runs, polls the
record for a cancel (``tasks/cancel`` answered by any MCP instance): then the upstream request is
abandoned, which cancels it upstream. The outcome is written only while the task is still open, so a
cancel that won stays.

Its timeout (up to 900 s, the template's) bounds the call: the upstream's ``timeout_s`` applies as
usual, and the invocation's own deadline less a margin ends a call still running, failing the task
with the reason. An invocation for a task that is gone or already ended does nothing (an Event invoke
may be delivered twice).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from foldgate.app.wiring import open_configs, open_results, open_store, open_upstream, open_upstream_oauth
from foldgate.app.wiring_tasks import open_task_store
from foldgate.config.settings import Settings
from foldgate.errors import FoldgateError
from foldgate.model.deadline import ANSWER_MARGIN_S, answering_by
from foldgate.serve.catalogs import CatalogCache
from foldgate.serve.gateway import Gateway
from foldgate.serve.task_context import CallFailure, noting_failure, principal_of
from foldgate.serve.task_progress import ProgressNote
from foldgate.serve.tasks import TaskService
from foldgate.serve.upstream_tasks import UpstreamFollow, followed_link, task_link

__all__ = ["build_worker_handler", "run_task"]

log = logging.getLogger(__name__)

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


async def run_task(gateway: Gateway, tasks: TaskService, task_id: str, deadline: float | None) -> str:
    """Run the task's call to its stored outcome; what happened, in a word (for the invocation log)."""
    record = tasks.store.get(task_id)
    if record is None or record.terminal or not record.call:
        return "gone"
    try:
        call = json.loads(record.call)
        principal = principal_of(call)
        view = gateway.view(principal)
    except (ValueError, KeyError, TypeError, FoldgateError) as exc:
        tasks.settle(record, "failed", error={"code": -32603, "message": f"the call cannot run: {exc}"})
        return "failed"
    tool = view.resolve(str(call.get("tool")))
    server = view.config.server(tool.server) if tool is not None else None
    if tool is None or server is None:  # the tool left the caller's view since the task was made
        tasks.settle(record, "failed", error={"code": -32602, "message": f"unknown tool: {call.get('tool')}"})
        return "failed"
    arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
    with answering_by(deadline):
        # The call's progress becomes the task's statusMessage (polled by tasks/get anywhere).
        note = ProgressNote(tasks.store, record.poll_interval_ms / 1000)
        note.attach(record)
        # A protocol error ends the task failed, a tool error completed (serve/tasks.py).
        failure = CallFailure()
        # A call that runs as its upstream's task is followed, not sent again (serve/upstream_tasks.py);
        # any other may start one upstream, which the record then names.
        link, follow = followed_link(record, tasks.store)
        if link is None or follow is None:
            takes_input = call.get("takes_input") is True
            follow = UpstreamFollow(tasks.store, carries_input=takes_input)
            await follow.attach(record)
            link = task_link(tool, prefer=True, refuse_required=False)
        dispatch = noting_failure(
            note.around(follow.around(lambda: gateway.caller.dispatch(view, tool, server, arguments), link)),
            failure,
        )
        work = asyncio.ensure_future(dispatch())
        await tasks.drive(record, work, failure)
    ended = tasks.store.get(task_id)
    return ended.status if ended is not None else "gone"


def build_worker_handler(settings: Settings | None = None) -> LambdaHandler:
    """The handler for the settings (read from the environment when not given)."""
    settings = settings or Settings.from_env()
    catalogs = CatalogCache(open_store(settings), ttl=settings.catalog_cache_seconds)
    results = open_results(settings)
    gateway = Gateway(
        catalogs,
        open_configs(settings, fallback=catalogs.indexed_config),
        open_upstream(settings, open_upstream_oauth(settings)),
        results=results,
    )
    # Polled for cancels at the interval the handles hint; no worker of its own (it is the worker).
    tasks = TaskService(open_task_store(settings), results=results, ttl_s=settings.task_ttl_seconds)
    # One loop per instance, reused by warm invocations (the upstream pool's sessions live on it).
    loop = asyncio.new_event_loop()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        task_id = event.get("task_id") if isinstance(event, dict) else None
        if not isinstance(task_id, str) or not task_id:
            return {"task": "invalid event"}
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        deadline = time.monotonic() + remaining() / 1000 - ANSWER_MARGIN_S if callable(remaining) else None
        outcome = loop.run_until_complete(run_task(gateway, tasks, task_id, deadline))
        log.info("task %s: %s", task_id[:6], outcome)
        return {"task": outcome}

    handler.gateway = gateway  # type: ignore[attr-defined]
    handler.tasks = tasks  # type: ignore[attr-defined]
    return handler
