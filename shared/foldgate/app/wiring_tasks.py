"""Durable tasks' wiring (issue 28): the task store on the deployment's backend, and on Lambda the
asynchronous invoke that starts a task's call in the TaskWorkerFunction."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from foldgate.config.settings import Settings
from foldgate.serve.paging import ResultPager
from foldgate.serve.tasks import TaskService
from foldgate.store.tasks.base import TaskStore

__all__ = ["open_task_store", "open_tasks", "worker_invoker"]


def open_task_store(settings: Settings) -> TaskStore:
    """Tasks on the same backend as the catalog store."""
    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.tasks.dynamodb import DynamoTaskStore

        return DynamoTaskStore(settings.table_name)
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.store.tasks.sqlite import SqliteTaskStore

    return SqliteTaskStore(settings.sqlite_path)


def worker_invoker(function_name: str, *, client: Any | None = None) -> Callable[[str], None]:
    """Start a task's call in the worker function: an Event (asynchronous) invoke naming the task. It
    returns once Lambda has queued the invoke, before the handle is answered (a Lambda instance is
    frozen once it answered, so nothing may be left to send later)."""
    holder: list[Any] = [client] if client is not None else []

    def invoke(task_id: str) -> None:
        if not holder:
            # boto3 loads with the first task this instance starts, never on cold start.
            import boto3

            holder.append(boto3.client("lambda"))
        payload = json.dumps({"task_id": task_id}).encode()
        holder[0].invoke(FunctionName=function_name, InvocationType="Event", Payload=payload)

    return invoke


def open_tasks(settings: Settings, results: ResultPager | None) -> TaskService:
    """The task service: its store, the worker where one is configured, the default sync window."""
    worker = worker_invoker(settings.task_worker_function) if settings.task_worker_function else None
    return TaskService(
        open_task_store(settings),
        results=results,
        default_window_s=settings.task_sync_window_s,
        worker=worker,
        ttl_s=settings.task_ttl_seconds,
    )
