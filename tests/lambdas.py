"""Driving the Lambda handlers in tests: a LambdaContext, the recorded events in events/, and loading a
function's app.py under a given environment (handlers read their settings at import, as on Lambda)."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

from foldgate.dev.bench.moto import patched_environ
from tests.procs import REPO

__all__ = ["LambdaContext", "event", "load_function"]

EVENTS = REPO / "events"


class LambdaContext:
    """The parts of the Lambda context object Powertools and Mangum read."""

    function_name = "foldgate-test"
    aws_request_id = "0f3c2b1a-test"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:foldgate-test"
    memory_limit_in_mb = 1024

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 60_000


def event(name: str, **changes: Any) -> dict[str, Any]:
    """A recorded event from events/, with top-level fields replaced."""
    data: dict[str, Any] = json.loads((EVENTS / name).read_text())
    data.update(changes)
    return data


def load_function(function: str, module_name: str, env: dict[str, str | None] | None = None) -> Any:
    """Import functions/<function>/app.py afresh (a cold start) under ``env``; returns the module."""
    spec = importlib.util.spec_from_file_location(module_name, REPO / "functions" / function / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with patched_environ(env or {}):
        spec.loader.exec_module(module)
    return module
