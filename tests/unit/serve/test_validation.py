"""Argument validation against upstream schemas: deep arguments are rejected, never waved through,
and upstream regular expressions are evaluated within a time budget, never stalling the event loop."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from foldgate.serve.validation import TOO_DEEP, ValidatorCache, unsafe_patterns

SHARED = str(Path(__file__).resolve().parents[2] / "shared")

TREE = {
    "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
    "$ref": "#/$defs/node",
}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"child": value}
    return value


def test_a_self_referencing_schema_rejects_arguments_nested_too_deeply() -> None:
    cache = ValidatorCache()
    assert cache.errors("tree", TREE, nested(5000)) == [TOO_DEEP]
    assert cache.skipped == 0  # rejected, not skipped: the call never reaches the upstream
    assert cache.errors("tree", TREE, nested(20)) == []


def test_deep_arguments_under_an_open_schema_stay_valid() -> None:
    assert ValidatorCache().errors("open", {"type": "object"}, nested(5000)) == []


def _run_isolated(code: str) -> Any:
    # In a child process: on an engine that cannot be interrupted the test fails by timeout, not by
    # hanging the suite.
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {SHARED!r}); {code}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(proc.stdout)


def test_a_catastrophic_pattern_does_not_stall_validation() -> None:
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        "schema = {'type': 'object', 'properties': {'s': {'type': 'string', 'pattern': '^(a+)+$'}}}; "
        "t = time.monotonic(); errors = ValidatorCache().errors('k', schema, {'s': 'a' * 40 + '!'}); "
        "print(json.dumps([errors, time.monotonic() - t]))"
    )
    errors, seconds = _run_isolated(code)
    assert len(errors) == 1
    assert errors[0].startswith("at 's': ")
    assert seconds < 5


def test_a_pattern_that_exhausts_the_budget_rejects_the_value() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(a|aa)+$"}}}
    started = time.monotonic()
    errors = ValidatorCache().errors("k", schema, {"s": "a" * 5000 + "!"})
    assert time.monotonic() - started < 5
    assert errors is not None
    assert len(errors) == 1
    assert "in time" in errors[0]


def test_the_budget_covers_the_whole_call_not_each_value() -> None:
    item = {"type": "string", "pattern": "(a|aa)+$"}
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": item}}}
    started = time.monotonic()
    errors = ValidatorCache().errors("k", schema, {"xs": ["a" * 5000 + "!"] * 200})
    assert time.monotonic() - started < 10  # 200 values x 50 ms would be 10 s: the call budget is 0.25 s
    assert errors is not None
    assert errors


def test_pattern_properties_and_additional_properties_use_the_bounded_engine() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    cache = ValidatorCache()
    assert cache.errors("k", schema, {"aaa": 1}) == []
    assert cache.errors("k", schema, {"aaa": "x"}) == ["at 'aaa': 'x' is not of type 'integer'"]
    (extra,) = cache.errors("k", schema, {"a" * 40 + "!": 1}) or []
    assert "do not match any of the regexes" in extra
    assert cache.errors("k2", {"type": "object", "additionalProperties": False}, {"x": 1}) == [
        "Additional properties are not allowed ('x' unexpected)"
    ]


def test_ordinary_patterns_validate_as_before() -> None:
    schema = {"type": "object", "properties": {"zip": {"type": "string", "pattern": r"^\d{5}$"}}}
    cache = ValidatorCache()
    assert cache.errors("k", schema, {"zip": "12345"}) == []
    assert cache.errors("k", schema, {"zip": "12a45"}) == ["at 'zip': '12a45' does not match '^\\\\d{5}$'"]


def test_unsafe_patterns_lists_the_catastrophic_ones_anywhere_in_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "string", "pattern": r"^[a-z0-9]+(-[a-z0-9]+)*$"},
            "email": {"type": "string", "pattern": r"^([a-zA-Z0-9]+[._-]?)*@example\.com$"},
            "deep": {"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}},
        },
        "patternProperties": {r"^(\w+\s?)*$": {}},
    }
    found = unsafe_patterns(schema)
    assert sorted(found) == sorted([r"^([a-zA-Z0-9]+[._-]?)*@example\.com$", "^(a+)+$", r"^(\w+\s?)*$"])
    assert unsafe_patterns({"type": "object", "properties": {"p": {"pattern": "^[a-z]+$"}}}) == []
    assert unsafe_patterns("not a schema") == []
