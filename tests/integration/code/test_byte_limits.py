"""Sizes are counted in one unit on both sides of the sandbox: bytes of UTF-8.

JavaScript strings count UTF-16 code units, the host counts UTF-8 bytes: arguments of multi-byte
characters that fit the cap in characters but not in bytes once made the host see a protocol violation
and answer ``internal``. The agent gets the size limit instead, in bytes, and the worker lives on.
"""

from __future__ import annotations

import pytest

from foldgate.code.sandbox import RunLimits, Sandbox
from tests.integration.code.conftest import FakeTools


async def test_multibyte_arguments_over_the_cap_are_a_limit_error(sandbox: Sandbox, tools: FakeTools) -> None:
    # 600 characters of JSON text, 1,208 bytes of UTF-8: within 1,000 characters, over 1,000 bytes.
    code = "return await call_tool('x', 'echo', {s: '\\u00e9'.repeat(596)})"
    result = await sandbox.run(code, tools, RunLimits(max_args_bytes=1000))
    assert result.error is not None
    assert result.error["type"] == "limit", result.error
    assert "bytes" in result.error["message"]
    assert tools.received == []
    assert sandbox.respawns == 0  # no protocol violation, the same worker runs the next program
    again = await sandbox.run("return await call_tool('x', 'echo', {s: '\\u00e9'})", tools)
    assert again.ok, again.error
    assert again.value == {"echo": {"s": "\u00e9"}}


async def test_the_program_can_catch_the_size_refusal(sandbox: Sandbox, tools: FakeTools) -> None:
    code = """
try { await call_tool('x', 'echo', {s: '\\u4e2d'.repeat(400)}); return 'made'; }
catch (e) { return [e.name, e.message]; }
"""
    result = await sandbox.run(code, tools, RunLimits(max_args_bytes=1000))
    assert result.ok, result.error
    name, message = result.value
    assert name == "RangeError"
    assert "1208 bytes" in message  # 400 three-byte characters and {"s":""} count as bytes


@pytest.mark.parametrize(("extra", "made"), [(0, True), (1, False)])
async def test_astral_characters_count_four_bytes_up_to_the_exact_cap(
    sandbox: Sandbox, tools: FakeTools, extra: int, made: bool
) -> None:
    # {"s":"<n emoji>"} is 8 + 4n bytes of UTF-8 (each emoji is two UTF-16 units in JS).
    n = 100
    code = f"return await call_tool('x', 'echo', {{s: '\\u{{1F600}}'.repeat({n}), t: 'a'.repeat({extra})}})"
    cap = len('{"s":"","t":""}') + 4 * n
    result = await sandbox.run(code, tools, RunLimits(max_args_bytes=cap))
    if made:
        assert result.ok, result.error
        assert len(tools.received) == 1
    else:
        assert result.error is not None
        assert result.error["type"] == "limit"
        assert tools.received == []


async def test_a_multibyte_return_value_is_measured_in_bytes(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("return '\\u00e9'.repeat(600)", tools, RunLimits(max_result_bytes=1000))
    assert result.error is not None
    assert result.error["type"] == "limit"
    assert sandbox.respawns == 0


async def test_console_bytes_are_capped_once_by_the_same_count(sandbox: Sandbox, tools: FakeTools) -> None:
    code = "console.log('\\u00e9'.repeat(150)); console.log('after'); return 1"
    result = await sandbox.run(code, tools, RunLimits(max_console_bytes=200))
    assert result.ok, result.error
    # 300 bytes do not fit in 200: what fits (less room for the marker) is kept, then one marker, and the
    # host (counting the same bytes) adds no second marker of its own.
    assert result.console[-1] == "[console truncated: the limit is 200 bytes]"
    assert len(result.console) == 2
    assert result.console[0].startswith("\u00e9" * 10)
    assert len(result.console[0].encode()) + len(result.console[1].encode()) + 2 <= 200
