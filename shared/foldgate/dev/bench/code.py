"""``foldgate bench code``: what the code-execution sandbox costs per run, per tool call and per respawn.

All figures are wall time measured around ``Sandbox.run`` in this process, with a tool caller that
answers at once, so they are the sandbox's own overhead: a fresh QuickJS runtime per run, the JSON-lines
round trips to the worker process and the host's validation. Per-call cost is the marginal cost of a
tool call: (a run making 20 calls - the median run making 1 call) / 19, both sequential (20 round trips
to the host) and with ``Promise.all`` (one batch). Respawn is the start of a fresh worker after a
timeout kill (start to ready), and what the next run actually waits for, since the next worker starts
as soon as the old one is killed.
"""

from __future__ import annotations

import asyncio
import platform
import statistics
import time
from typing import Any

from foldgate.code.sandbox import RunLimits, Sandbox

__all__ = ["format_code_report", "run_code_bench"]

_TRIVIAL = "return 1"
_ONE = 'return (await call_tool("bench", "echo", {i: 0})).ok'
_SEQUENTIAL = (
    'let n = 0;\nfor (let i = 0; i < 20; i++) n += (await call_tool("bench", "echo", {i})).ok ? 1 : 0;\n'
    "return n"
)
_PARALLEL = (
    'const all = await Promise.all(Array.from({length: 20}, (_, i) => call_tool("bench", "echo", {i})));\n'
    "return all.length"
)


async def _instant(server: str, tool: str, args: Any) -> tuple[bool, Any]:
    return True, {"ok": True}


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(_pct(samples, 0.5), 3), "p95_ms": round(_pct(samples, 0.95), 3)}


async def _time(sandbox: Sandbox, code: str, runs: int, limits: RunLimits) -> list[float]:
    out: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await sandbox.run(code, _instant, limits)
        out.append((time.perf_counter() - started) * 1000)
        if not result.ok:
            raise RuntimeError(f"bench program failed: {result.error}")
    return out


async def _bench(runs: int) -> dict[str, Any]:
    limits = RunLimits()
    async with Sandbox() as sandbox:
        first_start = sandbox.spawn_ms[0]
        await _time(sandbox, _SEQUENTIAL, max(5, runs // 10), limits)  # warm up both processes
        trivial = await _time(sandbox, _TRIVIAL, runs, limits)
        one = await _time(sandbox, _ONE, runs, limits)
        sequential = await _time(sandbox, _SEQUENTIAL, runs, limits)
        parallel = await _time(sandbox, _PARALLEL, runs, limits)
        base = statistics.median(one)
        kills = max(3, runs // 20)
        next_run: list[float] = []
        killed = RunLimits(timeout_ms=50)
        for _ in range(kills):
            await sandbox.run("while (true) {}", _instant, killed)
            next_run += await _time(sandbox, _TRIVIAL, 1, limits)
        starts = sandbox.spawn_ms[-kills:]
        respawns = sandbox.respawns
    return {
        "runs": runs,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "trivial_run": _row(trivial),
        "one_call_run": _row(one),
        "twenty_calls_sequential_run": _row(sequential),
        "twenty_calls_parallel_run": _row(parallel),
        "per_call_sequential": _row([(t - base) / 19 for t in sequential]),
        "per_call_parallel": _row([(t - base) / 19 for t in parallel]),
        "respawn": {
            "kills": kills,
            "respawns": respawns,
            "first_worker_start_ms": round(first_start, 1),
            "worker_start_p50_ms": round(statistics.median(starts), 1),
            "next_run_after_kill_p50_ms": round(statistics.median(next_run), 1),
        },
    }


def run_code_bench(runs: int = 200) -> dict[str, Any]:
    """Measure the sandbox; returns a JSON-ready report."""
    if runs < 1:
        raise ValueError("runs must be at least 1")
    return asyncio.run(_bench(runs))


def format_code_report(r: dict[str, Any]) -> str:
    """A human-readable table of the report."""
    lines = [
        f"code sandbox: {r['runs']} runs per row, Python {r['python']} on {r['machine']}, "
        "a tool caller that answers at once",
        f"{'':<34}{'p50 ms':>9}{'p95 ms':>9}",
    ]
    for key, label in (
        ("trivial_run", "run `return 1`"),
        ("one_call_run", "run with 1 tool call"),
        ("twenty_calls_sequential_run", "run with 20 calls, sequential"),
        ("twenty_calls_parallel_run", "run with 20 calls, Promise.all"),
        ("per_call_sequential", "per call, sequential"),
        ("per_call_parallel", "per call, Promise.all"),
    ):
        row = r[key]
        lines.append(f"{label:<34}{row['p50_ms']:>9.3f}{row['p95_ms']:>9.3f}")
    sp = r["respawn"]
    lines.append(
        f"respawn after a timeout kill: worker start p50 {sp['worker_start_p50_ms']} ms "
        f"(first start {sp['first_worker_start_ms']} ms); the next run waited p50 "
        f"{sp['next_run_after_kill_p50_ms']} ms ({sp['kills']} kills)"
    )
    return "\n".join(lines)
