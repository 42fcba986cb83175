"""The sandbox's pure parts: limits, the host's reading of worker errors, failure messages."""

from __future__ import annotations

import json

import pytest

from foldgate.code import RunLimits as ReExported
from foldgate.code.protocol import ProtocolError, clean_error, failure_message
from foldgate.code.sandbox import CallRecord, RunLimits, RunResult


def test_limits_defaults_match_the_brief() -> None:
    limits = RunLimits()
    assert (limits.timeout_ms, limits.max_calls, limits.concurrency) == (5000, 50, 8)
    assert (limits.max_result_bytes, limits.max_console_bytes) == (100_000, 10_000)
    assert (limits.memory_mb, limits.stack_kb) == (64, 256)
    assert ReExported is RunLimits


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "5"])
def test_limits_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="timeout_ms must be a positive integer"):
        RunLimits(timeout_ms=bad)  # type: ignore[arg-type]


def test_the_worker_gets_only_the_limits_it_enforces() -> None:
    assert RunLimits(max_calls=3).wire() == {
        "max_calls": 3,
        "max_args_bytes": 1_000_000,
        "max_result_bytes": 100_000,
        "max_console_bytes": 10_000,
        "memory_mb": 64,
        "stack_kb": 256,
    }


def test_a_result_is_json_ready() -> None:
    result = RunResult(True, [1], ["hi"], [CallRecord("gh__get_issue", True, 1.5)], None, 2.0)
    assert json.loads(json.dumps(result.to_dict())) == {
        "ok": True,
        "value": [1],
        "console": ["hi"],
        "calls": [{"tool": "gh__get_issue", "ok": True, "ms": 1.5}],
        "error": None,
        "ms": 2.0,
    }


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"error": "invalid arguments for x", "input_schema": {}}, "invalid arguments for x"),
        ({"message": "rate limited"}, "rate limited"),
        ({"content": [{"type": "text", "text": "boom"}, {"type": "text", "text": "again"}]}, "boom again"),
        ({"weird": 1}, '{"weird": 1}'),
        ("plain", '"plain"'),
    ],
)
def testfailure_messages_name_the_reason(payload: object, message: str) -> None:
    assert failure_message(payload) == message


def testfailure_messages_are_capped() -> None:
    assert len(failure_message({"error": "x" * 5000})) == 1000
    assert len(failure_message(["y" * 5000])) == 1003


def test_worker_errors_keep_known_fields_only() -> None:
    raw = {"type": "syntax", "message": "SyntaxError: x", "line": 2, "column": 0, "stack": "", "path": "/x"}
    assert clean_error(raw) == {"type": "syntax", "message": "SyntaxError: x", "line": 2}
    assert clean_error({"type": "limit", "message": "m" * 9000})["message"] == "m" * 4000


@pytest.mark.parametrize("raw", [None, [], {"type": "timeout"}, {"type": "internal-ish"}, {"message": "x"}])
def test_worker_errors_of_unknown_shape_are_violations(raw: object) -> None:
    with pytest.raises(ProtocolError):
        clean_error(raw)
