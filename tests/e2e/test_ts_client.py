"""End to end: the TypeScript SDK client (inside most agent apps and IDEs) against `foldgate serve`.

That client caches each tool's outputSchema from tools/list and validates every later result's
structuredContent against it, error results included: a gateway-made error that carries its JSON body as
structuredContent would make it throw -32602, so gateway errors carry their JSON as text only.
All calls go through one client process; each case is its own test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.node_clients import call_with_ts_client

pytestmark = pytest.mark.e2e

CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"}
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "convert-valid": ("time__convert_time", CONVERT),
    "structured-valid": ("everything__get-structured-content", {"location": "New York"}),
    "convert-upstream-error": ("time__convert_time", {**CONVERT, "source_timezone": "Mars/Olympus"}),
    "unknown-tool": ("nope__missing", {}),
    "convert-wrong-type": ("time__convert_time", {**CONVERT, "time": 1200}),
    "convert-missing-required": ("time__convert_time", {"time": "12:00"}),
    "structured-wrong-type": ("everything__get-structured-content", {"location": 42}),
    "structured-missing-required": ("everything__get-structured-content", {}),
}


@pytest.fixture(scope="module")
def answers(node22: Path, demo_gateway: str) -> dict[str, dict[str, Any]]:
    """Every case's outcome from one TS client session, by case name (plus the tool names listed)."""
    out = call_with_ts_client(node22, demo_gateway, list(CASES.values()))
    assert len(out["calls"]) == len(CASES), out
    return {"_tools": {"names": out["tools"]}, **dict(zip(CASES, out["calls"], strict=True))}


def ok_result(answer: dict[str, Any]) -> dict[str, Any]:
    """The call's result; fails with the client's error when the SDK threw."""
    if not answer["ok"]:
        pytest.fail(f"the TS client threw on {answer['tool']}: {answer['error']}", pytrace=False)
    result: dict[str, Any] = answer["result"]
    return result


def test_the_client_lists_the_tools_under_test(answers: dict[str, dict[str, Any]]) -> None:
    names = answers["_tools"]["names"]
    assert {"time__convert_time", "everything__get-structured-content", "describe_tool"} <= set(names)


@pytest.mark.parametrize("case", ["convert-valid", "structured-valid"])
def test_valid_calls_to_tools_with_an_output_schema_succeed(
    answers: dict[str, dict[str, Any]], case: str
) -> None:
    result = ok_result(answers[case])
    assert not result.get("isError")
    structured = result["structuredContent"]
    assert ("source" in structured) if case == "convert-valid" else ("temperature" in structured)


def test_an_upstream_error_result_passes_through_unchanged(answers: dict[str, dict[str, Any]]) -> None:
    result = ok_result(answers["convert-upstream-error"])
    assert result["isError"] is True
    assert "Invalid timezone" in result["content"][0]["text"]
    assert "structuredContent" not in result


def test_an_unknown_tool_is_an_error_result_the_client_can_read(answers: dict[str, dict[str, Any]]) -> None:
    result = ok_result(answers["unknown-tool"])
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["error_type"] == "not_found"


@pytest.mark.parametrize(
    "case",
    [
        "convert-wrong-type",
        "convert-missing-required",
        "structured-wrong-type",
        "structured-missing-required",
    ],
)
def test_invalid_arguments_reach_the_agent_as_a_readable_error(
    answers: dict[str, dict[str, Any]], case: str
) -> None:
    result = ok_result(answers[case])
    assert result["isError"] is True
    # The agent gets the schema and the hint in the text; nothing that contradicts the outputSchema.
    assert "structuredContent" not in result
    body = json.loads(result["content"][0]["text"])
    assert body["error_type"] == "invalid_params"
    assert body["input_schema"]["type"] == "object"
