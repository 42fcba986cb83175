"""The worker's run loop in this process (QuickJS in-process, a scripted channel instead of pipes)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from foldgate.code.worker import PRELUDE, _js_error, _Limits, locate, run_program

LIMITS = {
    "max_calls": 5,
    "max_args_bytes": 1000,
    "max_result_bytes": 1000,
    "max_console_bytes": 200,
    "memory_mb": 32,
    "stack_kb": 256,
}

Reply = Callable[[dict[str, Any]], dict[str, Any] | None]


class ScriptedChannel:
    """Answers each ``calls`` message with ``reply(message)``; records everything the worker wrote."""

    def __init__(self, reply: Reply | None = None) -> None:
        self.written: list[dict[str, Any]] = []
        self._reply = reply

    def write(self, msg: dict[str, Any] | bytes) -> None:
        if isinstance(msg, bytes):  # a line the worker encoded itself (to measure it)
            msg = json.loads(msg)
        json.dumps(msg)  # what the worker writes must be JSON
        self.written.append(msg)

    def read(self) -> dict[str, Any] | None:
        assert self._reply is not None, "the worker asked for results"
        return self._reply(self.written[-1])


def run(code: str, reply: Reply | None = None, **limits: int) -> list[dict[str, Any]]:
    channel = ScriptedChannel(reply)
    run_program(channel, code, _Limits({**LIMITS, **limits}))  # type: ignore[arg-type]
    return channel.written


def echo(msg: dict[str, Any]) -> dict[str, Any]:
    results = [{"id": c["id"], "ok": True, "json": c["args"], "message": ""} for c in msg["calls"]]
    return {"type": "results", "results": results}


def test_the_prelude_is_one_line() -> None:
    # Frames at line 1 are the sandbox's; the program starts at line 3 (see the worker's docstring).
    assert "\n" not in PRELUDE
    assert "//" not in PRELUDE.replace("://", "")


def test_a_value_is_returned_as_json_text() -> None:
    assert run("return {a: [1, 'two', null]}") == [
        {"type": "done", "ok": True, "value": '{"a":[1,"two",null]}', "console": []}
    ]


def test_undefined_and_functions_return_null() -> None:
    assert run("return undefined")[-1]["value"] == "null"
    assert run("return () => 1")[-1]["value"] == "null"


def test_calls_travel_as_json_text_and_results_settle_them() -> None:
    written = run("const a = await call_tool('s', 't', {x: [1]});\nreturn a.x", echo)
    assert written[0] == {
        "type": "calls",
        "calls": [{"id": 1, "server": "s", "tool": "t", "args": '{"x":[1]}'}],
        "console": [],
    }
    assert written[-1]["value"] == "[1]"


def test_a_batch_holds_every_call_made_before_the_program_waits() -> None:
    written = run("return (await Promise.all([1, 2, 3].map(i => call_tool('s', 't', {i})))).length", echo)
    assert [c["id"] for c in written[0]["calls"]] == [1, 2, 3]
    assert written[-1]["value"] == "3"


def test_abort_drops_the_run() -> None:
    written = run("await call_tool('s', 't', {});\nreturn 1", lambda msg: {"type": "abort"})
    assert written[-1] == {"type": "aborted"}


def test_results_for_unknown_ids_are_ignored() -> None:
    def reply(msg: dict[str, Any]) -> dict[str, Any]:
        answer = echo(msg)
        answer["results"].append({"id": 99, "ok": True, "json": "{}", "message": ""})
        return answer

    assert run("return (await call_tool('s', 't', {v: 2})).v", reply)[-1]["value"] == "2"


def test_a_failed_call_rejects_with_the_hosts_message() -> None:
    def fail(msg: dict[str, Any]) -> dict[str, Any]:
        results = [
            {"id": c["id"], "ok": False, "json": '{"error":"no"}', "message": "no"} for c in msg["calls"]
        ]
        return {"type": "results", "results": results}

    code = "try { await call_tool('s', 't', {}) } catch (e) { return [e.name, e.message, e.error] }"
    assert json.loads(run(code, fail)[-1]["value"]) == [
        "ToolError",
        'call_tool("s", "t") failed: no',
        {"error": "no"},
    ]


def test_the_call_limit_ends_the_run() -> None:
    written = run("for (let i = 0; i < 10; i++) await call_tool('s', 't', {i});", echo, max_calls=2)
    assert [len(m["calls"]) for m in written if m["type"] == "calls"] == [1, 1]
    assert written[-1]["error"]["type"] == "limit"


def test_console_lines_arrive_with_the_next_message() -> None:
    written = run("console.log('a');\nawait call_tool('s', 't', {});\nconsole.info('b');\nreturn 0", echo)
    assert written[0]["console"] == ["a"]
    assert written[-1]["console"] == ["b"]


def test_a_syntax_error_never_starts_the_program() -> None:
    written = run("console.log('x');\nreturn )")
    assert written == [
        {
            "type": "done",
            "ok": False,
            "error": {
                "type": "syntax",
                "message": "SyntaxError: unexpected token in expression: ')'",
                "line": 2,
                "column": 8,
            },
            "console": [],
        }
    ]


def test_code_that_is_not_unicode_is_a_syntax_error() -> None:
    assert run("return '\ud800'")[-1]["error"]["type"] == "syntax"


def test_the_body_cannot_escape_its_function_to_harm_the_run() -> None:
    # The AsyncFunction constructor does not stop "})" from closing the body early; whatever runs then
    # runs in the same sandbox, and the run still ends with an answer.
    written = run("return 1 }); globalThis.escaped = true; (function () {")
    assert written[-1]["type"] == "done"


@pytest.mark.parametrize(
    ("stack", "where"),
    [
        ("    at f (code:3:9)\n    at anonymous (code:7:1)", (3, 9)),
        ("    at eval (native)", None),
        ("", None),
    ],
)
def test_locate_reads_the_first_frame_in_the_code(stack: str, where: tuple[int, int] | None) -> None:
    assert locate(stack) == where


def test_an_error_past_the_last_line_is_the_end_of_the_code() -> None:
    error = _js_error(
        {"name": "SyntaxError", "message": "unexpected token: '}'", "stack": "at code:3:1"},
        "if (x) {\n  y(",
        syntax=True,
    )
    assert error == {
        "type": "syntax",
        "message": "SyntaxError: unexpected end of the code (check that brackets, braces, parentheses and "
        "strings are balanced)",
        "line": 2,
        "column": 5,
    }


def test_thrown_null_gets_a_hint() -> None:
    error = _js_error({"name": "", "message": "null", "stack": ""}, "x")
    assert error["message"].startswith("Uncaught null (QuickJS throws null")


def test_a_long_console_line_is_cut_to_what_fits() -> None:
    console = run("console.log('x'.repeat(1000));\nconsole.log('after');\nreturn 0", max_console_bytes=300)[
        -1
    ]["console"]
    assert console == ["x" * 200 + "...", "[console truncated: the limit is 300 bytes]"]


def test_a_batch_too_big_for_one_protocol_line_is_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("foldgate.code.worker.MAX_LINE_BYTES", 2000)
    code = "return await Promise.all([1, 2, 3].map(i => call_tool('s', 't', {s: '\\u00e9'.repeat(150)})))"
    # Each call is 300 bytes of UTF-8 (within max_args_bytes) but 900 escaped on the line: 3 do not fit.
    (done,) = run(code, echo)
    assert done["type"] == "done"
    assert done["error"]["type"] == "limit"
    assert "none of this batch was made" in done["error"]["message"]
    assert len(run("return await call_tool('s', 't', {s: '\\u00e9'.repeat(150)})", echo)) == 2
