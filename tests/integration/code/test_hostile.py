"""Hostile programs against a real sandbox worker: each attack is one test.

Every test runs in its own worker (see conftest) with short limits, so the suite stays fast; a test
that kills the worker also checks that the next run works in a fresh one.
"""

from __future__ import annotations

import json
import time

import _quickjs
import pytest

from foldgate.code.sandbox import RunLimits, Sandbox
from tests.integration.code.conftest import FakeTools

SHORT = RunLimits(timeout_ms=400)


async def assert_next_run_works(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("return await call_tool('x', 'echo', {n: 1})", tools)
    assert result.ok, result.error
    assert result.value == {"echo": {"n": 1}}


async def test_the_briefs_example_program_runs(sandbox: Sandbox, tools: FakeTools) -> None:
    code = (
        'const list = await call_tool("github", "list_issues", {repo: "x"});\n'
        "const full = await Promise.all(list.issues.map(i => "
        'call_tool("github", "get_issue", {number: i.number})));\n'
        'return full.filter(i => i.state === "open").map(i => i.number);'
    )
    result = await sandbox.run(code, tools)
    assert result.ok, result.error
    assert result.value == [1, 2, 4, 5]
    assert [c.tool for c in result.calls] == ["github__list_issues"] + ["github__get_issue"] * 6
    assert all(c.ok for c in result.calls)
    assert tools.received[0] == ("github", "list_issues", {"repo": "x"})
    assert sorted(args["number"] for _, _, args in tools.received[1:]) == [1, 2, 3, 4, 5, 6]


async def test_infinite_loop_times_out_and_the_next_run_works(sandbox: Sandbox, tools: FakeTools) -> None:
    started = time.perf_counter()
    result = await sandbox.run("while (true) {}", tools, SHORT)
    elapsed = time.perf_counter() - started
    assert not result.ok
    assert result.error is not None
    assert result.error["type"] == "timeout"
    assert "400 ms" in result.error["message"]
    # Killed at its deadline: never before it, and long before anything but the kill would end it
    # (the upper bound is loose so a loaded machine's scheduling cannot fail the test).
    assert 0.35 < elapsed < 10
    assert sandbox.respawns == 1
    await assert_next_run_works(sandbox, tools)


async def test_native_sort_loop_is_killed_on_the_wall_clock(sandbox: Sandbox, tools: FakeTools) -> None:
    # Long native calls are where an in-process CPU-time limit falls short; the host's kill does not.
    code = (
        "const a = [];\nfor (let i = 0; i < 300000; i++) a.push(Math.random());\n"
        "for (;;) { a.sort(); a.reverse(); }"
    )
    started = time.perf_counter()
    result = await sandbox.run(code, tools, SHORT)
    assert result.error is not None
    assert result.error["type"] == "timeout"
    assert time.perf_counter() - started < 10  # the sort loop never ends by itself: the kill ended it
    await assert_next_run_works(sandbox, tools)


async def test_huge_allocation_is_a_memory_error(sandbox: Sandbox, tools: FakeTools) -> None:
    code = "const keep = [];\nwhile (true) keep.push(new Array(100000).fill(1));"
    result = await sandbox.run(code, tools, RunLimits(memory_mb=32, timeout_ms=5000))
    assert result.error is not None
    assert result.error["type"] == "memory", result.error
    assert "out of memory" in result.error["message"]
    assert sandbox.respawns == 0  # the runtime is dropped; the worker process lives on
    await assert_next_run_works(sandbox, tools)


async def test_huge_string_is_a_memory_error(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("return 'x'.repeat(2 ** 28).length", tools, RunLimits(memory_mb=16))
    assert result.error is not None
    assert result.error["type"] in ("memory", "exception")
    assert "memory" in result.error["message"] or "RangeError" in result.error["message"]


async def test_deep_recursion_is_a_stack_error_not_a_crash(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("function down(n) { return down(n + 1) + 1 }\nreturn down(0)", tools)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert "RangeError" in result.error["message"]
    assert "stack" in result.error["message"]
    assert sandbox.respawns == 0
    await assert_next_run_works(sandbox, tools)


async def test_deep_nesting_in_native_code_is_a_stack_error(sandbox: Sandbox, tools: FakeTools) -> None:
    code = "let a = [];\nfor (let i = 0; i < 200000; i++) a = [a];\nreturn JSON.stringify(a).length"
    result = await sandbox.run(code, tools)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert "stack" in result.error["message"]
    assert sandbox.respawns == 0


async def test_catastrophic_regex_times_out(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("return /^(a+)+$/.test('a'.repeat(40) + 'b')", tools, SHORT)
    assert result.error is not None
    assert result.error["type"] == "timeout"
    await assert_next_run_works(sandbox, tools)


@pytest.mark.parametrize("name", ["require", "fetch", "process", "setTimeout", "XMLHttpRequest", "std", "os"])
async def test_host_facilities_are_absent(sandbox: Sandbox, tools: FakeTools, name: str) -> None:
    result = await sandbox.run(f"return typeof {name}", tools)
    assert result.ok
    assert result.value == "undefined"


async def test_process_env_is_a_reference_error(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("return process.env", tools)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert result.error["message"] == "ReferenceError: process is not defined"


async def test_require_is_a_reference_error(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("const fs = require('fs');\nreturn fs.readFileSync('/etc/passwd')", tools)
    assert result.error is not None
    assert result.error["message"] == "ReferenceError: require is not defined"
    assert (result.error["line"], result.error["column"]) == (1, 12)


async def test_dynamic_import_fails_cleanly(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("return await import('os')", tools)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert "could not load module" in result.error["message"]
    caught = await sandbox.run("try { await import('./x.js') } catch (e) { return e.name }", tools)
    assert caught.ok
    assert caught.value == "ReferenceError"
    static = await sandbox.run("import fs from 'fs';\nreturn 1", tools)
    assert static.error is not None
    assert static.error["type"] == "syntax"


async def test_function_constructor_reaches_only_the_sandbox_global(
    sandbox: Sandbox, tools: FakeTools
) -> None:
    code = (
        "const g = globalThis.constructor.constructor('return this')();\n"
        "return {same: g === globalThis, names: Object.getOwnPropertyNames(g)}"
    )
    result = await sandbox.run(code, tools)
    assert result.ok, result.error
    assert result.value["same"] is True
    bare = set(_quickjs.Context().eval("Object.getOwnPropertyNames(globalThis).join(',')").split(","))
    assert set(result.value["names"]) - bare == {"call_tool", "console"}


async def test_bridge_cannot_be_replaced(sandbox: Sandbox, tools: FakeTools) -> None:
    code = """
const tries = [];
for (const attack of [
  () => { "use strict"; globalThis.call_tool = () => 1; },
  () => { "use strict"; delete globalThis.call_tool; },
  () => Object.defineProperty(globalThis, "call_tool", {value: () => 1}),
  () => { "use strict"; console.log = () => 1; },
  () => { "use strict"; call_tool.apply = null; },
]) { try { attack(); tries.push("allowed"); } catch (e) { tries.push(e.name); } }
console.log("still captured");
const echoed = await call_tool("x", "echo", {ok: 1});
return {tries, echoed};
"""
    result = await sandbox.run(code, tools)
    assert result.ok, result.error
    assert result.value["tries"] == ["TypeError"] * 5
    assert result.value["echoed"] == {"echo": {"ok": 1}}
    assert result.console == ["still captured"]


async def test_tampering_with_builtins_does_not_reach_the_host(sandbox: Sandbox, tools: FakeTools) -> None:
    code = """
JSON.stringify = () => '{"forged": true}';
JSON.parse = () => ({forged: true});
String.prototype.slice = () => "forged";
Array.prototype.push = () => 0;
Reflect.apply = () => "forged";
Error.captureStackTrace = () => { throw new Error("forged") };
for (const key of ["id", "server", "tool", "args", "calls", "console", "state"]) {
  Object.defineProperty(Object.prototype, key, {get() { return "forged" }, set() {}, configurable: true});
}
Promise.prototype.then = function () { return "forged" };
const r = await call_tool("github", "get_issue", {number: 2});
return r.state + " " + r.number;
"""
    result = await sandbox.run(code, tools)
    assert result.ok, result.error
    assert result.value == "closed 2" or result.value == "open 2"
    assert tools.received == [("github", "get_issue", {"number": 2})]


async def test_host_still_counts_calls_after_tampering(sandbox: Sandbox, tools: FakeTools) -> None:
    code = """
Object.defineProperty(Object.prototype, "limit", {get() { return false }, configurable: true});
Object.prototype.toJSON = undefined;
for (let i = 0; i < 10; i++) await call_tool("x", "echo", {i});
return "unreachable";
"""
    result = await sandbox.run(code, tools, RunLimits(max_calls=3))
    assert result.error is not None
    assert result.error["type"] == "limit"
    assert len(tools.received) == 3


async def test_to_json_on_the_prototype_cannot_forge_arguments(sandbox: Sandbox, tools: FakeTools) -> None:
    code = (
        'Object.prototype.toJSON = function () { return "forged" };\n'
        'return await call_tool("x", "echo", {a: 1})'
    )
    result = await sandbox.run(code, tools)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert "must be an object" in result.error["message"]
    assert tools.received == []


@pytest.mark.parametrize(
    ("args", "reason"),
    [("(() => { const a = {}; a.self = a; return a; })()", "circular"), ("{n: 10n}", "BigInt")],
)
async def test_unserializable_arguments_are_a_clear_error(
    sandbox: Sandbox, tools: FakeTools, args: str, reason: str
) -> None:
    result = await sandbox.run(f"return await call_tool('x', 'echo', {args})", tools)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert result.error["message"].startswith('TypeError: call_tool("x", "echo"): the arguments are not JSON')
    assert reason in result.error["message"]
    assert tools.received == []
    caught = await sandbox.run(
        f"try {{ await call_tool('x', 'echo', {args}) }} catch (e) {{ return e.name }}", tools
    )
    assert caught.ok
    assert caught.value == "TypeError"


async def test_huge_return_value_is_a_limit_error(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("return 'x'.repeat(200000)", tools, RunLimits(max_result_bytes=100_000))
    assert result.error is not None
    assert result.error["type"] == "limit"
    assert "100000" in result.error["message"]
    wide = await sandbox.run("return 'é'.repeat(60000)", tools, RunLimits(max_result_bytes=100_000))
    assert wide.error is not None
    assert wide.error["type"] == "limit"


async def test_unserializable_return_value_is_a_clear_error(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("const a = {};\na.a = a;\nreturn a", tools)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert "return value is not JSON-serializable" in result.error["message"]


async def test_thousands_of_parallel_calls_hit_the_limit(sandbox: Sandbox, tools: FakeTools) -> None:
    code = (
        "const all = [];\nfor (let i = 0; i < 5000; i++) all.push(call_tool('x', 'echo', {i}));\n"
        "await Promise.all(all)"
    )
    result = await sandbox.run(code, tools, RunLimits(max_calls=50))
    assert result.error is not None
    assert result.error["type"] == "limit"
    assert "more than 50" in result.error["message"]
    assert tools.received == []  # the whole batch is refused


async def test_thousands_of_sequential_calls_hit_the_limit(sandbox: Sandbox, tools: FakeTools) -> None:
    code = "for (let i = 0; i < 5000; i++) await call_tool('x', 'echo', {i});"
    result = await sandbox.run(code, tools, RunLimits(max_calls=20))
    assert result.error is not None
    assert result.error["type"] == "limit"
    assert len(tools.received) == len(result.calls) == 20


async def test_syntax_error_has_line_and_column(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("const a = 1;\nconst b = ;\nreturn a", tools)
    assert result.error is not None
    assert result.error["type"] == "syntax"
    assert result.error["message"].startswith("SyntaxError: ")
    assert (result.error["line"], result.error["column"]) == (2, 11)
    unbalanced = await sandbox.run("if (true) {\n  return [1, 2", tools)
    assert unbalanced.error is not None
    assert unbalanced.error["type"] == "syntax"
    assert "unexpected end of the code" in unbalanced.error["message"]
    assert unbalanced.error["line"] == 2


async def test_uncaught_exception_has_the_js_stack_and_nothing_of_python(
    sandbox: Sandbox, tools: FakeTools
) -> None:
    code = (
        "function inner(x) {\n  return x.missing.field;\n}\n"
        "function outer() { return inner({}); }\nreturn outer();"
    )
    result = await sandbox.run(code, tools)
    error = result.error
    assert error is not None
    assert error["type"] == "exception"
    assert error["message"] == "TypeError: cannot read property 'field' of undefined"
    assert (error["line"], error["column"]) == (2, 10)
    assert error["stack"].splitlines() == [
        "    at inner (code:2:10)",
        "    at outer (code:4:27)",
        "    at anonymous (code:5:8)",
    ]
    text = json.dumps(result.to_dict())
    for leak in ("Traceback", ".py", "/work", "<input>", "foldgate", "quickjs"):
        assert leak not in text


async def test_errors_thrown_as_values_are_reported(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("throw {code: 42}", tools)
    assert result.error == {"type": "exception", "message": 'Uncaught {"code":42}'}
    getter = await sandbox.run("throw {get message() { throw new Error('nested') }, name: 'X'}", tools)
    assert getter.error is not None
    assert getter.error["type"] == "exception"


async def test_never_settling_promise_is_reported_not_hung(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("await new Promise(() => {});", tools)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert "never finished" in result.error["message"]


async def test_console_is_captured_and_capped(sandbox: Sandbox, tools: FakeTools) -> None:
    code = (
        "console.log('a', 1, {b: [2]}, null);\nconsole.warn('careful');\nconsole.error(new TypeError('bad'));"
    )
    result = await sandbox.run(code + "\nreturn 0", tools)
    assert result.console == ['a 1 {"b":[2]} null', "[warn] careful", "[error] TypeError: bad"]
    flood = await sandbox.run(
        "for (;;) console.log('')", tools, RunLimits(max_console_bytes=1000, timeout_ms=300)
    )
    assert flood.error is not None
    assert flood.error["type"] == "timeout"
    spam = await sandbox.run(
        "for (let i = 0; i < 10000; i++) console.log('line ' + i); return 1",
        tools,
        RunLimits(max_console_bytes=1000),
    )
    assert spam.ok
    assert sum(len(line) + 1 for line in spam.console) <= 1100
    assert spam.console[-1].startswith("[console truncated")


async def test_tool_failures_reject_with_a_tool_error(sandbox: Sandbox, tools: FakeTools) -> None:
    code = (
        "try { await call_tool('nowhere', 'nothing', {}) } catch (e) { return [e.name, e.message, e.error] }"
    )
    result = await sandbox.run(code, tools)
    assert result.ok, result.error
    name, message, detail = result.value
    assert name == "ToolError"
    assert message == 'call_tool("nowhere", "nothing") failed: unknown tool: nowhere.nothing'
    assert detail["error_type"] == "not_found"
    assert [(c.tool, c.ok) for c in result.calls] == [("nowhere__nothing", False)]


async def test_a_raising_tool_caller_leaks_nothing(sandbox: Sandbox) -> None:
    async def broken(server: str, tool: str, args: object) -> tuple[bool, object]:
        raise RuntimeError("secret at /var/task/foldgate/gateway.py")

    result = await sandbox.run("return await call_tool('x', 'y', {})", broken)
    assert result.error is not None
    assert result.error["type"] == "exception"
    assert "secret" not in json.dumps(result.to_dict())
    assert "failed inside the gateway" in result.error["message"]


async def test_bad_call_shapes_are_rejected_in_js(sandbox: Sandbox, tools: FakeTools) -> None:
    code = """
const out = [];
const shapes = [[1, "t", {}], ["", "t", {}], ["s", "t", [1, 2]], ["s", "t", "text"], ["s", "t", () => 1]];
for (const args of shapes) {
  try { await call_tool(...args); out.push("made"); } catch (e) { out.push(e.name); }
}
out.push((await call_tool("s", "echo")).echo);
return out;
"""
    result = await sandbox.run(code, tools)
    assert result.ok, result.error
    assert result.value == ["TypeError"] * 5 + [{}]


async def test_oversized_arguments_are_refused(sandbox: Sandbox, tools: FakeTools) -> None:
    code = "return await call_tool('x', 'echo', {blob: 'x'.repeat(5000)})"
    result = await sandbox.run(code, tools, RunLimits(max_args_bytes=1000))
    assert result.error is not None
    assert "RangeError" in result.error["message"]
    assert tools.received == []


async def test_delivered_results_are_capped(sandbox: Sandbox) -> None:
    async def big(server: str, tool: str, args: object) -> tuple[bool, object]:
        return True, {"blob": "x" * 40_000}

    code = """
const got = [];
for (let i = 0; i < 4; i++) {
  try { got.push((await call_tool("x", "big", {})).blob.length); } catch (e) { got.push(e.message); }
}
return got;
"""
    result = await sandbox.run(code, big, RunLimits(max_delivered_bytes=100_000))
    assert result.ok, result.error
    assert result.value[:2] == [40_000, 40_000]
    assert "may receive only" in result.value[2]
    assert "may receive only" in result.value[3]


async def test_calls_run_concurrently_within_the_bound(sandbox: Sandbox, tools: FakeTools) -> None:
    tools.delay_s = 0.05
    code = "await Promise.all(Array.from({length: 16}, (_, i) => call_tool('x', 'sleep', {i})));\nreturn 1"
    result = await sandbox.run(code, tools, RunLimits(concurrency=4))
    assert result.ok, result.error
    # Four at a time, never more: the bound and the concurrency both show in the peak, not in a timing.
    assert tools.max_in_flight == 4
    assert len(tools.received) == 16


async def test_unawaited_calls_are_not_made_and_say_so(sandbox: Sandbox, tools: FakeTools) -> None:
    result = await sandbox.run("call_tool('x', 'echo', {});\nreturn 7", tools)
    assert result.ok
    assert result.value == 7
    assert tools.received == []
    assert result.console == [
        "[sandbox] 1 tool call(s) were not made: the program finished without awaiting them"
    ]


async def test_odd_strings_cross_both_ways(sandbox: Sandbox) -> None:
    async def odd(server: str, tool: str, args: object) -> tuple[bool, object]:
        return True, {"s": "\ud800\x00é\u2028", "echo": args}

    code = (
        "const r = await call_tool('x', 'odd', {s: '\\udfff\\u0000'});\n"
        "return [r.s.length, r.s, r.echo.s, 'a\\u0000b']"
    )
    result = await sandbox.run(code, odd)
    assert result.ok, result.error
    assert result.value == [4, "\ud800\x00é\u2028", "\udfff\x00", "a\x00b"]
    nul = await sandbox.run("return 'x\x00y'.length", odd)
    assert nul.ok
    assert nul.value == 3


async def test_deeply_nested_return_value_is_an_error_not_a_crash(sandbox: Sandbox, tools: FakeTools) -> None:
    code = "let a = [];\nfor (let i = 0; i < 5000; i++) a = [a];\nreturn a"
    result = await sandbox.run(code, tools)
    assert result.error is not None
    assert result.error["type"] in ("limit", "exception")
    assert sandbox.respawns == 0
    await assert_next_run_works(sandbox, tools)
