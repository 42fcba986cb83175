"""What a sandbox run takes and gives: its limits, the tool caller, the record of calls, the result."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["MAX_LINE_BYTES", "CallRecord", "RunLimits", "RunResult", "ToolCaller"]

MAX_LINE_BYTES: Final = 16 * 1024 * 1024
"""The longest protocol line between host and worker. Lines are ASCII JSON, so a UTF-8 byte of a
payload takes up to 3 bytes on the line (``\\u00e9`` for the 2 bytes of "é") and a control character 6.
The worker ends a run with a ``limit`` error rather than send a longer ``calls`` line; every other line
fits by :class:`RunLimits`' own check. 16 MiB holds the largest return value a tenant may configure
(5 MB, so 15 MB escaped)."""
_LINE_SLACK: Final = 64 * 1024  # message framing, error messages and stacks (cut to 6,100 characters)

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
        # One call's arguments and the final message must each fit one line, escaped at worst.
        if 3 * self.max_args_bytes + _LINE_SLACK > MAX_LINE_BYTES:
            most = (MAX_LINE_BYTES - _LINE_SLACK) // 3
            raise ValueError(f"RunLimits.max_args_bytes must be at most {most}")
        if 3 * self.max_result_bytes + 6 * self.max_console_bytes + _LINE_SLACK > MAX_LINE_BYTES:
            raise ValueError("RunLimits.max_result_bytes and max_console_bytes do not fit one protocol line")

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
