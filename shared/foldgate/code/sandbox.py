"""Host side of the code-execution sandbox: one pre-started worker process, driven one run at a time.

Agent-written JavaScript runs in :mod:`foldgate.code.worker`, a separate Python process started with an
empty environment (no credentials to read), in an empty directory deleted once it has started, with no
inherited file descriptors, in its own session; it then drops its own rights (see ``worker._harden``).
This module owns that process and everything that must not be trusted to it:

- the wall-clock deadline: past ``timeout_ms`` the worker is killed (QuickJS's own time limit counts CPU
  time and long native calls overrun it) and a fresh one is started at once, so the next run rarely waits;
- the tool calls: requests arrive as JSON text, are validated and counted here, and run concurrently
  (``asyncio.gather``, at most ``concurrency`` at a time); only JSON text goes back in;
- every cap, again: calls, argument size, result bytes delivered into the sandbox, return value size,
  console bytes; and any protocol violation or crash is an ``internal`` error (details logged, never
  returned) followed by a respawn.

Error taxonomy (``RunResult.error["type"]``): ``syntax`` (with ``line``/``column``), ``exception`` (an
uncaught JS error: ``message``, ``stack``, ``line``/``column`` when known; includes stack overflow, a
RangeError), ``timeout``, ``memory`` (the QuickJS heap limit), ``limit`` (too many tool calls: the
``max_calls + 1``-th call ends the run, none of its batch is made; return value too big or too deep), and
``internal``. A tool that fails does not end the run: its promise rejects with a ``ToolError`` the
program may catch (``e.error`` holds the failure payload). Calls never awaited are not made.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import logging
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from foldgate.code.model import MAX_LINE_BYTES, CallRecord, RunLimits, RunResult, ToolCaller
from foldgate.code.protocol import CLOSE_GRACE_S, LIVE_PIDS, HostRun, ProtocolError, WorkerProcess

__all__ = ["CallRecord", "RunLimits", "RunResult", "Sandbox", "ToolCaller", "default_worker_command"]

log = logging.getLogger(__name__)

_ABORT_GRACE_S: Final = 0.5
_INTERNAL: Final = "internal sandbox error; the sandbox was restarted and the program can be run again"
# -I: no environment variables, user site or script directory on sys.path; -S: no site-packages (the
# host passes the exact import roots); -B: never write bytecode from the sandbox.
_BOOT: Final = (
    "import sys; sys.path[:0] = sys.argv[2:]; from foldgate.code.worker import main; sys.exit(main())"
)


def _is_our_child(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Field 4 is the parent pid; the command name (field 2) is parenthesised and may hold spaces.
    return stat.rsplit(")", 1)[-1].split()[1] == str(os.getpid())


@atexit.register
def _kill_leftovers() -> None:
    for pid in list(LIVE_PIDS):
        if _is_our_child(pid):  # never a recycled pid that is no longer ours
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    LIVE_PIDS.clear()


def _import_roots() -> list[str]:
    """The sys.path entries the worker needs: where foldgate and the QuickJS extension live."""
    roots: list[str] = []
    for name, up in (("foldgate", 2), ("_quickjs", 1)):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"cannot locate the {name} module for the sandbox worker")
        root = str(Path(spec.origin).resolve().parents[up - 1])
        if root not in roots:
            roots.append(root)
    return roots


def default_worker_command() -> list[str]:
    """The command line of a worker: this interpreter, isolated, importing only what it needs."""
    return [sys.executable, "-I", "-S", "-B", "-c", _BOOT, str(os.getpid()), *_import_roots()]


class Sandbox:
    """Runs agent programs in one pre-started worker process, one run at a time.

    Use ``async with Sandbox() as sandbox:`` (starts the worker) or call :meth:`start` early; else the
    first run starts it. A Sandbox belongs to the event loop that first uses it. ``respawns`` counts
    workers replaced after a kill, a crash or a protocol violation.
    """

    def __init__(self, *, worker_command: Sequence[str] | None = None, start_timeout_s: float = 10.0) -> None:
        self.respawns = 0
        self.spawn_ms: list[float] = []  # start-to-ready time of each worker, for the bench
        self._command = list(worker_command) if worker_command is not None else None
        self._start_timeout_s = start_timeout_s
        self._worker: WorkerProcess | None = None
        self._spawning: asyncio.Task[WorkerProcess] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._closed = False
        self._dying: set[asyncio.Task[None]] = set()  # reaps of killed workers, awaited by aclose

    async def __aenter__(self) -> Sandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start the worker now (runs otherwise start it on first use)."""
        self._bind()
        await self._ready_worker()

    async def run(self, code: str, call_tool: ToolCaller, limits: RunLimits | None = None) -> RunResult:
        """Run one program: the body of an async function; ``return`` gives the value."""
        if self._closed:
            raise RuntimeError("the sandbox is closed")
        limits = limits or RunLimits()
        lock = self._bind()
        async with lock:
            try:
                worker = await self._ready_worker()
            except Exception:
                log.exception("the sandbox worker could not start")
                return RunResult(False, None, [], [], {"type": "internal", "message": _INTERNAL})
            started = time.perf_counter()
            run = HostRun(worker, call_tool, limits)
            try:
                async with asyncio.timeout(limits.timeout_ms / 1000):
                    result = await run.drive(code)
            except TimeoutError:
                await self._after_timeout(worker, run)
                message = (
                    f"the program ran longer than {limits.timeout_ms} ms (wall clock, tool calls included) "
                    "and was stopped"
                )
                result = run.result({"type": "timeout", "message": message})
            except ProtocolError as exc:
                self._log_failure(worker, str(exc))
                self._replace(worker)
                result = run.result({"type": "internal", "message": _INTERNAL})
            except Exception:
                log.exception("sandbox run failed on the host side")
                self._replace(worker)
                result = run.result({"type": "internal", "message": _INTERNAL})
            except BaseException:
                self._replace(worker)  # cancelled mid-run: the worker's state is unknown
                raise
            if result.error is not None and result.error["type"] == "internal" and worker is self._worker:
                self._log_failure(worker, "the worker reported an internal error")
                self._replace(worker)
                result.error["message"] = _INTERNAL
            result.ms = (time.perf_counter() - started) * 1000
            return result

    async def aclose(self) -> None:
        """Stop the worker (and one being started); runs are refused from now on."""
        self._closed = True
        if self._spawning is not None:
            spawning, self._spawning = self._spawning, None
            spawning.cancel()
            with contextlib.suppress(BaseException):
                self._bury(await spawning)
        if self._worker is not None:
            worker, self._worker = self._worker, None
            await worker.close()
        if self._dying:
            await asyncio.wait(self._dying, timeout=CLOSE_GRACE_S)

    def _bind(self) -> asyncio.Lock:
        # The worker's pipes, the lock and the respawn task all live on one loop (Mangum and uvicorn
        # keep one for the process): another loop cannot use them safely.
        loop = asyncio.get_running_loop()
        if self._loop is None or self._lock is None:
            self._loop, self._lock = loop, asyncio.Lock()
        elif self._loop is not loop:
            raise RuntimeError("this Sandbox belongs to another event loop: use one Sandbox per event loop")
        return self._lock

    async def _ready_worker(self) -> WorkerProcess:
        if self._worker is not None and self._worker.alive:
            return self._worker
        if self._worker is not None:  # died between runs
            self._replace(self._worker)
        if self._spawning is None:
            self._spawning = asyncio.create_task(self._spawn())
        task = self._spawning
        try:
            # Shielded: a run cancelled while waiting must not cancel the start of the next worker.
            self._worker = await asyncio.shield(task)
        finally:
            if task.done():
                self._spawning = None
        return self._worker

    def _bury(self, worker: WorkerProcess) -> None:
        task = worker.kill()
        self._dying.add(task)
        task.add_done_callback(self._dying.discard)

    def _replace(self, worker: WorkerProcess) -> None:
        """Kill a worker and start the next one right away, so the next run does not wait for it."""
        self._bury(worker)
        if self._worker is worker:
            self._worker = None
        self.respawns += 1
        if not self._closed and self._spawning is None:
            self._spawning = asyncio.create_task(self._spawn())

    async def _after_timeout(self, worker: WorkerProcess, run: HostRun) -> None:
        if run.phase == "tools" and worker.alive:
            # The worker is only waiting for results: tell it to drop the run and keep the process.
            try:
                async with asyncio.timeout(_ABORT_GRACE_S):
                    await worker.send({"type": "abort"})
                    if (await worker.recv()).get("type") == "aborted":
                        return
            except (TimeoutError, ProtocolError):
                pass
        self._replace(worker)

    async def _spawn(self) -> WorkerProcess:
        started = time.perf_counter()
        # The worker starts in an empty private directory, removed as soon as the process exists: its
        # working directory is then gone (nothing can be created there, nothing is left behind).
        workdir = tempfile.mkdtemp(prefix="foldgate-sandbox-")
        try:
            proc = await asyncio.create_subprocess_exec(
                *(self._command or default_worker_command()),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={},  # nothing of the host's environment (credentials live there in Lambda)
                cwd=workdir,
                close_fds=True,
                start_new_session=True,  # no terminal signals from the host's process group
                limit=MAX_LINE_BYTES,  # a longer line is a protocol violation (see the worker)
            )
        finally:
            os.rmdir(workdir)
        worker = WorkerProcess(proc)
        try:
            async with asyncio.timeout(self._start_timeout_s):
                ready = await worker.recv()
            if ready.get("type") != "ready":
                raise ProtocolError("the worker did not say ready")
        except BaseException:
            self._bury(worker)
            raise
        self.spawn_ms.append((time.perf_counter() - started) * 1000)
        return worker

    @staticmethod
    def _log_failure(worker: WorkerProcess, what: str) -> None:
        tail = worker.stderr_tail.decode("utf-8", "replace").strip()
        detail = f"; stderr: {tail}" if tail else ""
        log.warning("sandbox worker %s failed: %s%s", worker.proc.pid, what, detail)
