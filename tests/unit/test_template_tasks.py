"""template.yaml runs durable tasks' calls in TaskWorkerFunction (issue 28): up to Lambda's 15 minutes,
started only by McpFunction (the one function told its name and allowed to invoke it), and able to
update task items but never create or delete one; McpFunction writes task items only in the task
store's partitions, and answers calls in its request for the 20 s sync window."""

from __future__ import annotations

from typing import Any

from foldgate.dev.bench.moto import template_resource

FUNCTIONS = ("McpFunction", "CodeFunction", "IndexerFunction", "AdminFunction", "TaskWorkerFunction")


def _statements(function: str) -> dict[str, dict[str, Any]]:
    statements: list[dict[str, Any]] = template_resource(function)["Properties"]["Policies"][0]["Statement"]
    return {s["Sid"]: s for s in statements}


def _leading_keys(statement: dict[str, Any]) -> list[str]:
    keys: list[str] = (
        statement.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys", [])
    )
    return keys


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def _invokes(function: str) -> list[str]:
    policies = template_resource(function)["Properties"]["Policies"]
    return [
        p["LambdaInvokePolicy"]["FunctionName"]
        for p in policies
        if isinstance(p, dict) and "LambdaInvokePolicy" in p
    ]


def test_the_worker_runs_up_to_fifteen_minutes_and_is_not_retried() -> None:
    props = template_resource("TaskWorkerFunction")["Properties"]
    assert props["Timeout"] == 900
    assert props["Handler"] == "app.handler"
    assert props["CodeUri"] == "functions/taskworker/"
    assert props["EventInvokeConfig"]["MaximumRetryAttempts"] == 0


def test_only_the_mcp_function_may_start_the_worker() -> None:
    for function in FUNCTIONS:
        variables = template_resource(function)["Properties"]["Environment"]["Variables"]
        starts = function == "McpFunction"
        assert ("TaskWorkerFunction" in _invokes(function)) is starts, function
        assert ("FOLDGATE_TASK_WORKER_FUNCTION" in variables) is starts, function
    variables = template_resource("McpFunction")["Properties"]["Environment"]["Variables"]
    assert variables["FOLDGATE_TASK_WORKER_FUNCTION"] == "TaskWorkerFunction"  # !Ref: its name
    assert variables["FOLDGATE_TASK_SYNC_WINDOW_S"] == "20"


def test_the_worker_updates_task_items_only_and_never_creates_or_deletes_one() -> None:
    statements = _statements("TaskWorkerFunction")
    task = statements["TaskUpdate"]
    assert _actions(task) == {"dynamodb:UpdateItem"}
    assert _leading_keys(task) == ["TASK#*"]
    for sid, statement in statements.items():
        actions = {a for a in _actions(statement) if a.startswith("dynamodb:")}
        if actions & {
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:BatchWriteItem",
        }:
            keys = _leading_keys(statement)
            assert keys, sid  # every write is confined to partitions
            assert sid == "TaskUpdate" or not any(k.startswith("TASK") for k in keys), sid
            assert "dynamodb:DeleteItem" not in actions, sid


def test_the_mcp_function_writes_tasks_in_the_task_partitions_only() -> None:
    statements = _statements("McpFunction")
    assert _leading_keys(statements["TaskWrite"]) == ["TASK#*", "TASKS#*"]
    assert _actions(statements["TaskWrite"]) == {"dynamodb:PutItem", "dynamodb:UpdateItem"}
    for function in ("CodeFunction", "IndexerFunction"):
        for sid, statement in _statements(function).items():
            assert not any(k.startswith("TASK") for k in _leading_keys(statement)), (function, sid)
