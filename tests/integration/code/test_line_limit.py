"""The host reads protocol lines of at most MAX_LINE_BYTES (16 MiB, not 512 MiB): the worker keeps every
line within it, turning a too-big batch of calls into the program's ``limit`` error, and a worker that
sends a longer line anyway is a protocol violation."""

from __future__ import annotations

import sys
import textwrap

import pytest

from foldgate.code.model import MAX_LINE_BYTES
from foldgate.code.sandbox import RunLimits, Sandbox
from tests.integration.code.conftest import FakeTools

LONG_LINE_WORKER = textwrap.dedent(
    f"""
    import json, sys
    print(json.dumps({{"type": "ready"}}), flush=True)
    sys.stdin.readline()
    sys.stdout.write('{{"type": "done", "ok": true, "value": "' + "x" * {MAX_LINE_BYTES} + '"}}\\n')
    sys.stdout.flush()
    sys.stdin.readline()
    """
)


async def test_a_line_longer_than_the_cap_is_a_protocol_violation(tools: FakeTools) -> None:
    async with Sandbox(worker_command=[sys.executable, "-c", LONG_LINE_WORKER]) as sandbox:
        result = await sandbox.run("return 1", tools, RunLimits(timeout_ms=10_000))
        assert result.error is not None
        assert result.error["type"] == "internal"
        assert sandbox.respawns == 1


async def test_a_batch_of_calls_too_big_for_one_line_is_a_limit(sandbox: Sandbox, tools: FakeTools) -> None:
    # Seven calls of 500,000 two-byte characters: 1 MB of UTF-8 each (within max_args_bytes), 3 MB each
    # escaped on the line, 21 MB together: more than one line holds.
    call = "call_tool('x', 'echo', {s: '\\u00e9'.repeat(499990)})"
    code = f"return await Promise.all([1, 2, 3, 4, 5, 6, 7].map(i => {call}))"
    result = await sandbox.run(code, tools, RunLimits(timeout_ms=20_000))
    assert result.error is not None
    assert result.error["type"] == "limit", result.error
    assert tools.received == []
    assert sandbox.respawns == 0
    one = "return (await call_tool('x', 'echo', {s: '\\u00e9'.repeat(499990)})).echo.s.length"
    again = await sandbox.run(one, tools, RunLimits(timeout_ms=20_000))
    assert again.ok, again.error  # one such call alone fits
    assert again.value == 499990


def test_limits_that_cannot_fit_one_line_are_refused() -> None:
    with pytest.raises(ValueError, match="max_args_bytes"):
        RunLimits(max_args_bytes=MAX_LINE_BYTES // 2)
    with pytest.raises(ValueError, match="protocol line"):
        RunLimits(max_result_bytes=MAX_LINE_BYTES // 2)
    assert RunLimits(max_result_bytes=5_000_000).max_result_bytes == 5_000_000  # the config's maximum
