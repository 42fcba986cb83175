"""What a sandbox run takes and gives: its limits, the tool caller, the record of calls, the result."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CallRecord", "RunLimits", "RunResult", "ToolCaller"]

ToolCaller = Callable[[str, str, Any], Awaitable[tuple[bool, Any]]]
"""``(server, tool, args) -> (ok, payload)``: the JSON result, or an error object when not ok."""


@dataclass(frozen=True, slots=True)
class RunLimits:
    """Caps for one run. Sizes are bytes of UTF-8 JSON unless named otherwise."""

    timeout_ms: int = 5000  # wall clock, tool calls included
    max_calls: int = 50
    concurrency: int = 8  # tool calls in flight at once
    max_result_bytes: int = 100_000  # the program's return value
    max_console_bytes: int = 10_000
    memory_mb: int = 64  # the QuickJS heap
    stack_kb: int = 256
    max_args_bytes: int = 1_000_000  # one tool call's arguments
    max_delivered_bytes: int = 4_000_000  # all tool results of the run, delivered into the sandbox

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if type(value) is not int or value < 1:
                raise ValueError(f"RunLimits.{f.name} must be a positive integer, got {value!r}")

    def wire(self) -> dict[str, int]:
        """What the worker needs (the deadline, concurrency and delivery caps stay on the host)."""
        keys = ("max_calls", "max_args_bytes", "max_result_bytes", "max_console_bytes", "memory_mb")
        return {k: getattr(self, k) for k in (*keys, "stack_kb")}


@dataclass(slots=True)
class CallRecord:
    """One tool call the program made: ``server__tool``, whether the tool succeeded, its duration."""

    tool: str
    ok: bool
    ms: float


@dataclass(slots=True)
class RunResult:
    """The outcome of one run. ``error`` is None when ``ok``; else ``{"type", "message", ...}``."""

    ok: bool
    value: Any
    console: list[str]
    calls: list[CallRecord]
    error: dict[str, Any] | None
    ms: float = 0.0  # wall time of the run, excluding any wait for a worker to start

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what a tool result can carry back to the agent)."""
        return dataclasses.asdict(self)
