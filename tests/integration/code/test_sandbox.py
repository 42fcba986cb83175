"""The host side of the sandbox: the worker's process, its lifecycle, and a worker that misbehaves."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from foldgate.code.sandbox import RunLimits, Sandbox, default_worker_command
from tests.integration.code.conftest import FakeTools

INTERNAL = "internal sandbox error; the sandbox was restarted and the program can be run again"


def worker_pid(sandbox: Sandbox) -> int:
    worker = sandbox._worker
    assert worker is not None
    return worker.proc.pid


def gone(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            return True
        if state == "Z":  # exited, waiting to be reaped
            return True
        time.sleep(0.02)
    return False


async def test_the_worker_environment_is_empty(sandbox: Sandbox) -> None:
    pid = worker_pid(sandbox)
    assert Path(f"/proc/{pid}/environ").read_bytes() == b""
    assert os.environ  # while the host's is not


async def test_the_worker_holds_no_host_files_or_directory(sandbox: Sandbox) -> None:
    pid = worker_pid(sandbox)
    assert sorted(int(fd) for fd in os.listdir(f"/proc/{pid}/fd")) == [0, 1, 2]
    cwd = os.readlink(f"/proc/{pid}/cwd")
    assert Path(cwd).name.startswith("foldgate-sandbox-")
    assert cwd.endswith(" (deleted)")  # removed once the worker started: nothing to write to or leave
    limits = Path(f"/proc/{pid}/limits").read_text()
    assert any(
        line.startswith("Max open files") and line.split()[3:5] == ["3", "3"] for line in limits.splitlines()
    )
    assert any(
        line.startswith("Max file size") and line.split()[3:5] == ["0", "0"] for line in limits.splitlines()
    )


async def test_the_worker_command_is_isolated() -> None:
    command = default_worker_command()
    assert command[0] == sys.executable
    assert command[1:4] == ["-I", "-S", "-B"]


async def test_a_worker_is_respawned_after_every_kill(sandbox: Sandbox, tools: FakeTools) -> None:
    pids = [worker_pid(sandbox)]
    for n in range(1, 4):
        result = await sandbox.run("for (;;) {}", tools, RunLimits(timeout_ms=100))
        assert result.error is not None
        assert result.error["type"] == "timeout"
        assert sandbox.respawns == n
        assert gone(pids[-1])
        after = await sandbox.run("return 40 + 2", tools)
        assert after.ok
        assert after.value == 42
        pids.append(worker_pid(sandbox))
    assert len(set(pids)) == 4


async def test_a_slow_tool_times_out_without_killing_the_worker(sandbox: Sandbox, tools: FakeTools) -> None:
    tools.delay_s = 5.0
    pid = worker_pid(sandbox)
    result = await sandbox.run(
        "console.log('before');\nawait call_tool('x', 'sleep', {});", tools, RunLimits(timeout_ms=200)
    )
    assert result.error is not None
    assert result.error["type"] == "timeout"
    assert result.console == ["before"]
    assert [(c.tool, c.ok) for c in result.calls] == [("x__sleep", False)]
    assert sandbox.respawns == 0
    assert worker_pid(sandbox) == pid
    tools.delay_s = 0.0
    after = await sandbox.run("return (await call_tool('x', 'echo', {a: 1})).echo", tools)
    assert after.ok
    assert after.value == {"a": 1}


async def test_a_worker_killed_from_outside_is_an_internal_error(sandbox: Sandbox, tools: FakeTools) -> None:
    pid = worker_pid(sandbox)
    asyncio.get_running_loop().call_later(0.1, os.kill, pid, signal.SIGKILL)
    result = await sandbox.run("for (;;) {}", tools, RunLimits(timeout_ms=3000))
    assert result.error == {"type": "internal", "message": INTERNAL}
    assert sandbox.respawns == 1
    assert (await sandbox.run("return 1", tools)).value == 1


async def test_a_worker_that_died_between_runs_is_replaced(sandbox: Sandbox, tools: FakeTools) -> None:
    pid = worker_pid(sandbox)
    os.kill(pid, signal.SIGKILL)
    assert gone(pid)
    await asyncio.sleep(0.05)  # let the event loop notice the exit
    result = await sandbox.run("return 1", tools)
    assert result.ok
    assert worker_pid(sandbox) != pid


async def test_a_cancelled_run_replaces_the_worker(sandbox: Sandbox, tools: FakeTools) -> None:
    pid = worker_pid(sandbox)
    task = asyncio.create_task(sandbox.run("for (;;) {}", tools, RunLimits(timeout_ms=5000)))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(pid)
    assert (await sandbox.run("return 2", tools)).value == 2


async def test_runs_are_serialized(sandbox: Sandbox, tools: FakeTools) -> None:
    tools.delay_s = 0.02
    code = "const r = await call_tool('x', 'echo', {n: N});\nreturn r.echo.n"
    results = await asyncio.gather(*(sandbox.run(code.replace("N", str(n)), tools) for n in range(6)))
    assert [r.value for r in results] == list(range(6))
    assert tools.max_in_flight == 1


async def test_aclose_stops_the_worker(tools: FakeTools) -> None:
    sandbox = Sandbox()
    await sandbox.start()
    pid = worker_pid(sandbox)
    await sandbox.aclose()
    assert gone(pid)
    with pytest.raises(RuntimeError):
        await sandbox.run("return 1", tools)


async def test_a_sandbox_refuses_another_event_loop(sandbox: Sandbox, tools: FakeTools) -> None:
    assert (await sandbox.run("return 1", tools)).value == 1

    def elsewhere() -> object:
        return asyncio.run(sandbox.run("return 2", tools))

    with pytest.raises(RuntimeError, match="event loop"):
        await asyncio.to_thread(elsewhere)
    assert (await sandbox.run("return 3", tools)).value == 3


def test_the_worker_dies_with_its_host() -> None:
    # A host killed outright (no atexit, no stdin EOF handling in a busy worker) takes its worker along.
    host = textwrap.dedent(
        """
        import asyncio, sys
        from foldgate.code.sandbox import RunLimits, Sandbox

        async def main():
            sandbox = Sandbox()
            await sandbox.start()
            print(sandbox._worker.proc.pid, flush=True)
            await sandbox.run("for (;;) {}", None, RunLimits(timeout_ms=60000))

        asyncio.run(main())
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", host], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        time.sleep(0.2)
        assert not gone(pid, within_s=0.1)  # busy in JS
    finally:
        proc.kill()
        proc.wait()
    assert gone(pid)


async def test_a_worker_that_cannot_start_is_an_internal_error(tools: FakeTools) -> None:
    sandbox = Sandbox(worker_command=[sys.executable, "-c", "import sys; sys.exit(3)"], start_timeout_s=2)
    with pytest.raises(Exception, match="exited"):
        await sandbox.start()  # an explicit start says so
    result = await sandbox.run("return 1", tools)  # a run answers instead
    assert result.error == {"type": "internal", "message": INTERNAL}
    await sandbox.aclose()


# A fake worker: says ready, reads the run, then answers with the given lines, one per message it reads.
FAKE = textwrap.dedent(
    """
    import json, sys
    print(json.dumps({"type": "ready"}), flush=True)
    replies = json.loads(sys.argv[1])
    for line in sys.stdin:
        if not replies:
            break
        sys.stdout.write(replies.pop(0) + "\\n")
        sys.stdout.flush()
    """
)


def calls(*ids: int) -> str:
    return json.dumps(
        {"type": "calls", "calls": [{"id": i, "server": "s", "tool": "echo", "args": "{}"} for i in ids]}
    )


@pytest.mark.parametrize(
    "replies",
    [
        pytest.param(["not json"], id="garbage"),
        pytest.param([], id="exits"),
        pytest.param(["[1, 2]"], id="not-an-object"),
        pytest.param([json.dumps({"type": "surprise"})], id="unknown-type"),
        pytest.param(
            [json.dumps({"type": "done", "ok": False, "error": {"type": "timeout"}})], id="bad-error-type"
        ),
        pytest.param([json.dumps({"type": "done", "ok": True, "value": "{nope"})], id="bad-value"),
        pytest.param([json.dumps({"type": "done", "ok": True})], id="no-value"),
        pytest.param([calls(1, 2, 3, 4)], id="too-many-calls"),
        pytest.param([calls(1), calls(1)], id="reused-id"),
        pytest.param(
            [json.dumps({"type": "calls", "calls": [{"id": 1, "server": "s", "tool": "t", "args": {}}]})],
            id="args-not-text",
        ),
        pytest.param([json.dumps({"type": "calls", "calls": [], "console": [1]})], id="console-not-text"),
    ],
)
async def test_a_misbehaving_worker_is_an_internal_error(tools: FakeTools, replies: list[str]) -> None:
    command = [sys.executable, "-c", FAKE, json.dumps(replies)]
    async with Sandbox(worker_command=command) as sandbox:
        result = await sandbox.run("return 1", tools, RunLimits(max_calls=3, timeout_ms=3000))
        assert result.error == {"type": "internal", "message": INTERNAL}
        assert sandbox.respawns == 1
    assert len(tools.received) <= 1


async def test_a_worker_error_keeps_only_known_fields(tools: FakeTools) -> None:
    error = {
        "type": "exception",
        "message": "Error: x",
        "line": 3,
        "column": 4,
        "stack": "at f",
        "secret": "y",
    }
    command = [
        sys.executable,
        "-c",
        FAKE,
        json.dumps([json.dumps({"type": "done", "ok": False, "error": error})]),
    ]
    async with Sandbox(worker_command=command) as sandbox:
        result = await sandbox.run("return 1", tools)
    assert result.error == {
        "type": "exception",
        "message": "Error: x",
        "line": 3,
        "column": 4,
        "stack": "at f",
    }
