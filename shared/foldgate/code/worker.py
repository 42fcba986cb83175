"""The sandbox worker: runs agent-written JavaScript in QuickJS, one program at a time.

Started by :class:`foldgate.code.sandbox.Sandbox` as ``python -I -S -B -c <bootstrap> <host pid> <paths>``
(or by hand as ``python -m foldgate.code.worker``) with an empty environment, and driven over JSON lines:

    host → worker  {"type": "run", "code": str, "limits": {...}}
    worker → host  {"type": "calls", "calls": [{"id", "server", "tool", "args"}], "console": [str]}
    host → worker  {"type": "results", "results": [{"id", "ok", "json", "message"}]}  |  {"type": "abort"}
    worker → host  {"type": "done", "ok": true, "value": str, "console": [...]}
                   {"type": "done", "ok": false, "error": {...}, "console": [...]}  |  {"type": "aborted"}

Tool arguments and the return value travel as JSON *text* (``args``, ``value``, ``json``): the worker never
decodes them, so nothing the program builds (depth, size, odd numbers) can trip the worker's own JSON
parser, and the host decodes them under its own caps.

Each run gets a fresh QuickJS runtime with a memory and a stack limit. The program never reaches Python:
no ``add_callable`` (which refuses to run under a time limit anyway); the only bridge is a pump. JS
``call_tool`` queues a request and returns a promise; this loop runs the pending jobs, drains the queue to
the host, waits for the results and settles the promises, until the program's promise settles. The
wall-clock deadline is the host's job (it kills this process): QuickJS's own time limit counts CPU
time and native calls such as a big ``sort`` overrun it.

Nothing the agent sees is produced by Python: error messages and stacks come from the JS engine, with
the sandbox's own frames removed and line numbers mapped onto the agent's code.
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from typing import Any, BinaryIO, Final

import _quickjs

from foldgate.code.model import MAX_LINE_BYTES
from foldgate.code.prelude import PRELUDE

__all__ = ["PRELUDE", "locate", "main", "prepare", "run_program"]


class _Limits:
    """The per-run caps the host sends (already validated by the host's RunLimits)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.max_calls = int(raw["max_calls"])
        self.max_args_bytes = int(raw["max_args_bytes"])
        self.max_result_bytes = int(raw["max_result_bytes"])
        self.max_console_bytes = int(raw["max_console_bytes"])
        self.memory = int(raw["memory_mb"]) * 1024 * 1024
        self.stack = int(raw["stack_kb"]) * 1024


# Measured: QuickJS-ng's Array.prototype.sort throws null, not an InternalError, when it cannot allocate.
_NULL_HINT: Final = "QuickJS throws null when a native operation such as sort runs out of memory"
_MEMORY_HINT: Final = "(the sandbox's memory limit was reached)"
_LOCATION = re.compile(r"\bcode:(\d+):(\d+)")
_END_OF_CODE: Final = (
    "SyntaxError: unexpected end of the code (check that brackets, braces, parentheses and strings are "
    "balanced)"
)


def locate(stack: str) -> tuple[int, int] | None:
    """Line and column of the first frame in the agent's code ("code:L:C", see the prelude)."""
    found = _LOCATION.search(stack)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _js_error(info: dict[str, Any], code: str, *, syntax: bool = False) -> dict[str, Any]:
    """An error dict for the host from a JS error's name/message/stack (all produced by the engine)."""
    name, message = str(info.get("name") or ""), str(info.get("message") or "")
    stack = str(info.get("stack") or "")
    text = f"{name}: {message}" if name else f"Uncaught {message}"
    if not name and message == "null":
        text += f" ({_NULL_HINT})"
    where = locate(stack)
    if syntax:
        error: dict[str, Any] = {"type": "syntax", "message": text}
        lines = code.split("\n")
        if where is not None and where[0] > len(lines):
            # The parser reached the closing brace the sandbox adds after the code: the code is unbalanced.
            error["message"] = _END_OF_CODE
            where = (len(lines), len(lines[-1]) + 1)
    elif info.get("limit") is True:
        # The sandbox's own size refusal (arguments over max_args_bytes), uncaught by the program.
        error = {"type": "limit", "message": text}
    elif name == "InternalError" and "out of memory" in message:
        error = {"type": "memory", "message": f"{text} {_MEMORY_HINT}"}
    else:
        error = {"type": "exception", "message": text}
    if where is not None:
        error["line"], error["column"] = where
    if stack and not syntax:
        error["stack"] = stack
    return error


def _escaped_error(exc: Exception, code: str) -> dict[str, Any]:
    """An error that escaped QuickJS into Python (out of memory in the sandbox's own code, ...)."""
    head, _, stack = str(exc).partition("\n")
    name, sep, message = head.partition(": ")
    if not sep:
        name, message = "", head
    if "out of memory" in head:
        return {"type": "memory", "message": f"InternalError: out of memory {_MEMORY_HINT}"}
    return _js_error({"name": name, "message": message, "stack": stack}, code)


class _Channel:
    """JSON lines over binary stdin/stdout: independent of the (empty) environment's locale."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self._in, self._out = stdin, stdout

    def read(self) -> dict[str, Any] | None:
        line = self._in.readline()
        if not line:
            return None
        msg = json.loads(line)
        if not isinstance(msg, dict):
            raise ValueError("expected a JSON object")
        return msg

    def write(self, msg: dict[str, Any] | bytes) -> None:
        """Send a message (or a line already encoded by :func:`_encode`)."""
        self._out.write((msg if isinstance(msg, bytes) else _encode(msg)) + b"\n")
        self._out.flush()


def _encode(msg: dict[str, Any]) -> bytes:
    """One protocol line, without its newline."""
    # ensure_ascii: strings from JS may hold lone surrogates, which UTF-8 cannot encode.
    return json.dumps(msg, separators=(",", ":")).encode("ascii")


class _Aborted(Exception):
    """The host gave up on the run (its deadline passed while the tool calls ran)."""


def _done_error(error: dict[str, Any], console: list[str]) -> dict[str, Any]:
    return {"type": "done", "ok": False, "error": error, "console": console}


def prepare() -> tuple[Any, Any]:
    """A fresh QuickJS runtime with the prelude evaluated: its factory is not called yet.

    Made while the worker is idle (after a run, before the next command), so a run only pays for
    configuring it: creating a runtime and parsing the prelude is most of a trivial run's cost.
    """
    ctx = _quickjs.Context()
    return ctx, ctx.eval(PRELUDE)


def run_program(channel: _Channel, code: str, limits: _Limits, fresh: tuple[Any, Any] | None = None) -> None:
    """Run one program in a fresh QuickJS runtime; write its calls and its outcome to the host."""
    console: list[str] = []
    try:
        code.encode("utf-8")
    except UnicodeEncodeError:
        error = {"type": "syntax", "message": "SyntaxError: the code is not valid Unicode"}
        channel.write(_done_error(error, console))
        return
    ctx, factory = fresh or prepare()
    ctx.set_memory_limit(limits.memory)
    ctx.set_max_stack_size(limits.stack)
    try:
        control = factory(
            limits.max_calls, limits.max_args_bytes, limits.max_console_bytes, limits.max_result_bytes
        )
        failure = control("compile", code)
        if failure:
            channel.write(_done_error(_js_error(json.loads(failure), code, syntax=True), console))
            return
        control("start")
        channel.write(_pump(channel, ctx, control, limits, code))
    except _Aborted:
        channel.write({"type": "aborted"})
    except _quickjs.JSException as exc:  # includes StackOverflow
        channel.write(_done_error(_escaped_error(exc, code), console))
    finally:
        del ctx, factory  # the runtime (and everything the program built) goes with the last reference


def _pump(channel: _Channel, ctx: Any, control: Any, limits: _Limits, code: str) -> dict[str, Any]:
    """Run jobs and ferry tool calls until the program's promise settles; the final message."""
    console: list[str] = []
    while True:
        while ctx.execute_pending_job():
            pass
        snapshot = json.loads(control("drain"))
        console = snapshot["console"]
        calls = snapshot["calls"]
        if snapshot["limit"]:
            return _done_error(
                {
                    "type": "limit",
                    "message": f"too many tool calls: the program tried to make more than {limits.max_calls} "
                    "(none of the last batch was made)",
                },
                console,
            )
        if snapshot["state"] != 0:
            if calls:
                console.append(
                    f"[sandbox] {len(calls)} tool call(s) were not made: the program finished without "
                    "awaiting them"
                )
            return _finish(control, limits, code, console)
        if not calls:
            return _done_error(
                {
                    "type": "exception",
                    "message": "the program never finished: it awaits a promise that nothing can settle "
                    "(there are no timers, and no tool call is pending)",
                },
                console,
            )
        line = _encode({"type": "calls", "calls": calls, "console": console})
        if len(line) > MAX_LINE_BYTES:
            # The host reads lines up to MAX_LINE_BYTES: a bigger batch is the program's limit to hit.
            return _done_error(
                {
                    "type": "limit",
                    "message": f"the {len(calls)} tool calls made at once carry {len(line)} bytes of "
                    f"escaped JSON; at most {MAX_LINE_BYTES} can be in flight together (await some "
                    "before making more; none of this batch was made)",
                },
                console,
            )
        channel.write(line)
        reply = channel.read()
        if reply is None:
            sys.exit(0)
        if reply.get("type") == "abort":
            raise _Aborted
        if reply.get("type") != "results":
            raise ValueError("expected results")
        for result in reply["results"]:
            message = str(result.get("message") or "")
            control("settle", int(result["id"]), bool(result["ok"]), str(result["json"]), message)


def _finish(control: Any, limits: _Limits, code: str, console: list[str]) -> dict[str, Any]:
    outcome = json.loads(control("finish"))
    if "size" in outcome:
        return _done_error(_too_big(int(outcome["size"]), limits), console)
    if not outcome["ok"]:
        return _done_error(_js_error(outcome["error"], code), console)
    value: str = control("value")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limits.max_result_bytes:
        return _done_error(_too_big(size, limits), console)
    return {"type": "done", "ok": True, "value": value, "console": console}


def _too_big(size: int, limits: _Limits) -> dict[str, Any]:
    return {
        "type": "limit",
        "message": f"the return value is at least {size} bytes of JSON; the limit is "
        f"{limits.max_result_bytes} (return less: filter or summarize inside the program)",
    }


def _harden(parent: int) -> None:
    """Best-effort process limits: die with the host, never fork, never write files, no core dumps."""
    try:
        # Loaded inside the worker process only, after its sandbox is set up.
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: a program stuck in JS dies with the host
    except (OSError, AttributeError):
        pass
    if parent and os.getppid() != parent:
        os._exit(0)  # the host died before the death signal was armed
    try:
        # Loaded inside the worker process only, after its sandbox is set up.
        import resource

        for limit, value in (
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_FSIZE, 0),
            (resource.RLIMIT_NPROC, 0),  # no new processes or threads (not enforced for root)
            (resource.RLIMIT_NOFILE, 3),  # stdin, stdout, stderr: every import is done by now
        ):
            resource.setrlimit(limit, (value, value))
    except (ImportError, OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Serve runs until stdin closes. argv[0], when given, is the host's pid (see _harden)."""
    args = sys.argv[1:] if argv is None else argv
    parent = int(args[0]) if args and args[0].isdigit() else 0
    channel = _Channel(sys.stdin.buffer, sys.stdout.buffer)
    fresh = prepare()
    _harden(parent)
    channel.write({"type": "ready"})
    while True:
        try:
            msg = channel.read()
        except ValueError:
            return 2
        if msg is None:
            return 0
        if msg.get("type") != "run":
            return 2
        try:
            run_program(channel, str(msg["code"]), _Limits(msg["limits"]), fresh)
        except (KeyError, TypeError, ValueError, RecursionError, UnicodeError):
            # A bug or a protocol mismatch: details to stderr (the host logs them, never the agent).
            traceback.print_exc()
            channel.write(_done_error({"type": "internal", "message": "internal sandbox error"}, []))
        fresh = prepare()  # the host has its answer: this is off the critical path


if __name__ == "__main__":
    sys.exit(main())
