"""The host's end of the worker protocol: one worker process, and one run driven through it.

Everything the worker sends is checked here before it is believed: message shapes, call ids and counts,
sizes, error fields. A violation raises :class:`ProtocolError`, which the Sandbox turns into an
``internal`` error and a fresh worker. See :mod:`foldgate.code.worker` for the messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any, Final

from foldgate.code.model import CallRecord, RunLimits, RunResult, ToolCaller

__all__ = [
    "CLOSE_GRACE_S",
    "LIVE_PIDS",
    "HostRun",
    "ProtocolError",
    "WorkerProcess",
    "clean_error",
    "failure_message",
]

log = logging.getLogger(__name__)

_ERROR_TYPES: Final = frozenset({"syntax", "exception", "memory", "limit", "internal"})
CLOSE_GRACE_S: Final = 1.0


class ProtocolError(Exception):
    """The worker broke the protocol or died: nothing it says can be trusted any more."""


# Worker pids still running, killed at interpreter exit. Belt and braces: a worker also exits when its
# stdin closes, and the kernel kills it when the host dies (PR_SET_PDEATHSIG, see the worker).
LIVE_PIDS: set[int] = set()


class WorkerProcess:
    """One worker process and its JSON-lines channel."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.stderr_tail = b""
        self._stderr = asyncio.create_task(self._drain_stderr())
        self._reaper: asyncio.Task[None] | None = None
        LIVE_PIDS.add(proc.pid)

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def _drain_stderr(self) -> None:
        # Read stderr continuously so the worker never blocks on it; keep the tail for the log.
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(4096):
            self.stderr_tail = (self.stderr_tail + chunk)[-4096:]

    async def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode("ascii") + b"\n")
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ProtocolError("the worker's stdin is closed") from exc

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        try:
            line = await self.proc.stdout.readline()
        except ValueError as exc:  # a line longer than MAX_LINE_BYTES
            raise ProtocolError("oversized line from the worker") from exc
        if not line:
            raise ProtocolError("the worker exited")
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise ProtocolError("a line from the worker is not JSON") from exc
        if not isinstance(msg, dict):
            raise ProtocolError("a message from the worker is not an object")
        return msg

    def kill(self) -> asyncio.Task[None]:
        """SIGKILL now; returns the task that reaps the process (the Sandbox awaits it on close)."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())
        return self._reaper

    async def _reap(self) -> None:
        with contextlib.suppress(Exception):
            await self.proc.wait()
        LIVE_PIDS.discard(self.proc.pid)
        if self.proc.stdin is not None:  # the transport finishes once every pipe is closed
            self.proc.stdin.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._stderr, CLOSE_GRACE_S)

    async def close(self) -> None:
        """Close stdin (the worker exits on EOF); kill it if it does not exit promptly."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), CLOSE_GRACE_S)
        await self.kill()


class HostRun:
    """The host's half of one run: validates what the worker sends, runs the calls, keeps the record."""

    def __init__(self, worker: WorkerProcess, call_tool: ToolCaller, limits: RunLimits) -> None:
        self.worker, self.call_tool, self.limits = worker, call_tool, limits
        self.console: list[str] = []
        self.calls: list[CallRecord] = []
        self.phase = "js"  # "tools" while the worker waits for results (it can then be aborted cleanly)
        self._console_bytes = 0
        self._console_full = False
        self._ids: set[int] = set()
        self._delivered = 0
        self._slots = asyncio.Semaphore(limits.concurrency)

    async def drive(self, code: str) -> RunResult:
        await self.worker.send({"type": "run", "code": code, "limits": self.limits.wire()})
        while True:
            msg = await self.worker.recv()
            self._take_console(msg.get("console"))
            kind = msg.get("type")
            if kind == "done":
                return self._done(msg)
            if kind != "calls":
                raise ProtocolError(f"unexpected message type {kind!r}")
            batch = self._validate_calls(msg.get("calls"))
            self.phase = "tools"
            outcomes = await asyncio.gather(*(self._call(*call) for call in batch))
            self.phase = "js"
            results = [self._deliver(call, *outcome) for call, outcome in zip(batch, outcomes, strict=True)]
            await self.worker.send({"type": "results", "results": results})

    def result(self, error: dict[str, Any]) -> RunResult:
        return RunResult(False, None, self.console, self.calls, error)

    def _take_console(self, lines: Any) -> None:
        if lines is None:
            return
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise ProtocolError("console is not a list of strings")
        for line in lines:
            if self._console_full:
                return
            size = _size(line) + 1
            if self._console_bytes + size > self.limits.max_console_bytes:
                self._console_full = True
                cap = self.limits.max_console_bytes
                self.console.append(f"[console truncated: the limit is {cap} bytes]")
                return
            self._console_bytes += size
            self.console.append(line)

    def _validate_calls(self, calls: Any) -> list[tuple[int, str, str, str]]:
        if not isinstance(calls, list) or not calls:
            raise ProtocolError("calls is not a non-empty list")
        batch: list[tuple[int, str, str, str]] = []
        for call in calls:
            if not isinstance(call, dict):
                raise ProtocolError("a call is not an object")
            cid, server, tool, args = call.get("id"), call.get("server"), call.get("tool"), call.get("args")
            if type(cid) is not int or cid in self._ids:
                raise ProtocolError("a call id is not a fresh integer")
            if not isinstance(server, str) or not isinstance(tool, str) or not server or not tool:
                raise ProtocolError("a call names no server or tool")
            if not isinstance(args, str) or _size(args) > self.limits.max_args_bytes:
                raise ProtocolError("call arguments are not JSON text within the cap")
            self._ids.add(cid)
            batch.append((cid, server, tool, args))
        if len(self._ids) > self.limits.max_calls:
            raise ProtocolError("the worker let more calls through than max_calls")
        return batch

    async def _call(self, cid: int, server: str, tool: str, args_text: str) -> tuple[bool, Any]:
        record = CallRecord(f"{server}__{tool}", False, 0.0)
        self.calls.append(record)
        try:
            args = json.loads(args_text)
        except (ValueError, RecursionError):
            return False, {"error": "the arguments could not be decoded (nested too deeply?)"}
        if not isinstance(args, dict):
            return False, {"error": "the arguments must be an object"}
        async with self._slots:
            started = time.perf_counter()
            try:
                ok, payload = await self.call_tool(server, tool, args)
            except Exception:
                # The gateway's caller should return (False, error) itself; never show its internals.
                log.exception("sandbox tool call %s raised", record.tool)
                return False, {"error": f"{record.tool} failed inside the gateway"}
            finally:
                record.ms = (time.perf_counter() - started) * 1000
        record.ok = ok is True
        return ok is True, payload

    def _deliver(self, call: tuple[int, str, str, str], ok: bool, payload: Any) -> dict[str, Any]:
        """The result message for one call, within the run's budget of delivered bytes."""
        cid = call[0]
        try:
            # ASCII: every Python string, even with lone surrogates, crosses into QuickJS intact.
            text = json.dumps(payload, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            ok, payload = False, {"error": "the tool result is not JSON"}
            text = json.dumps(payload)
        left = self.limits.max_delivered_bytes - self._delivered
        if len(text) > left:
            message = (
                f"the result is {len(text)} bytes of JSON and this run may receive only {left} more "
                f"(max {self.limits.max_delivered_bytes} in total); ask for less"
            )
            ok, payload = False, {"error": message}
            text = json.dumps(payload)
        self._delivered += len(text)
        return {"id": cid, "ok": ok, "json": text, "message": "" if ok else failure_message(payload)}

    def _done(self, msg: dict[str, Any]) -> RunResult:
        ok = msg.get("ok")
        if ok is False:
            return self.result(clean_error(msg.get("error")))
        value_text = msg.get("value")
        if ok is not True or not isinstance(value_text, str):
            raise ProtocolError("malformed done message")
        size = _size(value_text)
        if size > self.limits.max_result_bytes:
            cap = self.limits.max_result_bytes
            message = f"the return value is {size} bytes of JSON; the limit is {cap}"
            return self.result({"type": "limit", "message": message})
        try:
            value = json.loads(value_text)
        except RecursionError:
            return self.result({"type": "limit", "message": "the return value is nested too deeply"})
        except ValueError as exc:
            raise ProtocolError("the return value is not JSON") from exc
        return RunResult(True, value, self.console, self.calls, None)


def failure_message(payload: Any) -> str:
    """A one-line reason for a failed call: the payload's error text, or its JSON."""
    if isinstance(payload, dict):
        for key in ("error", "message"):
            reason = payload.get(key)
            if isinstance(reason, str):
                return reason[:1000]
        content = payload.get("content")
        if isinstance(content, list):
            texts = [str(c["text"]) for c in content if isinstance(c, dict) and "text" in c]
            if texts:
                return " ".join(texts)[:1000]
    text = json.dumps(payload, default=str)
    return text if len(text) <= 1000 else text[:1000] + "..."


def _size(text: str) -> int:
    """Bytes of UTF-8 (lone surrogates, which JS strings may hold, count as three)."""
    return len(text.encode("utf-8", "surrogatepass"))


def clean_error(error: Any) -> dict[str, Any]:
    """The worker's error, rebuilt from known fields only."""
    if not isinstance(error, dict) or error.get("type") not in _ERROR_TYPES:
        raise ProtocolError("malformed error")
    message = error.get("message")
    clean: dict[str, Any] = {"type": error["type"], "message": str(message)[:4000] if message else ""}
    for key in ("line", "column"):
        if type(error.get(key)) is int and error[key] > 0:
            clean[key] = error[key]
    if isinstance(error.get("stack"), str) and error["stack"]:
        clean["stack"] = error["stack"][:8000]
    return clean
