"""``foldgate bench call --versus PATH``: this checkout's gateway and another's, side by side in one run.

Both gateways (``foldgate serve``, one from this checkout's ``shared/``, one with ``PATH`` as its
``PYTHONPATH``: another checkout's ``shared/``, optionally after other folders, ``a:b``) serve the same
server-everything. A warm client calls ``everything__echo`` through each, interleaved in blocks with
the same call on a direct session and with each other; then 16 (``callers``) concurrent sessions call
as fast as they can, direct, other, this, in two interleaved rounds. Load hits all sides alike, so
the ratios compare where absolute times cannot.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from foldgate.dev.bench.call import _caller, _latency, _rounds, _session, _throughput, _watch, format_cpu
from foldgate.dev.bench.call_procs import everything, foldgate_serve

__all__ = ["format_versus", "run_versus"]


async def _measure(urls: dict[str, str], calls: int, callers: int, per_caller: int) -> dict[str, Any]:
    echo = {"message": "bench"}
    async with (
        _session(urls["direct"]) as direct,
        _session(urls["other"]) as other,
        _session(urls["this"]) as this,
    ):
        plain = _caller(direct, "echo", echo)
        via_other = _caller(other, "everything__echo", echo)
        via_this = _caller(this, "everything__echo", echo)
        latency = await _latency(
            {"other": (plain, via_other), "this": (plain, via_this), "other_vs_this": (via_other, via_this)},
            calls,
        )
    rounds: dict[str, list[dict[str, Any]]] = {"direct": [], "other": [], "this": []}
    for _ in range(2):  # interleaved, so machine noise hits every side alike
        for side, tool in (("direct", "echo"), ("other", "everything__echo"), ("this", "everything__echo")):
            watch = _watch(
                {"gateway": urls[side], "upstream": urls["direct"]}
                if side != "direct"
                else {"upstream": urls["direct"]}
            )
            rounds[side].append(await _throughput(urls[side], tool, echo, callers, per_caller, watch))
    sides = {side: _rounds(rows) for side, rows in rounds.items()}
    rate = {side: got["calls_per_s"] for side, got in sides.items()}
    return {
        "latency": latency,
        "callers": callers,
        "calls_per_s": rate,
        "cpu_ms_per_call": {side: got.get("cpu_ms_per_call") for side, got in sides.items()},
        "ratio_other": round(rate["other"] / rate["direct"], 2) if rate["direct"] else 0.0,
        "ratio_this": round(rate["this"] / rate["direct"], 2) if rate["direct"] else 0.0,
    }


def run_versus(other: str, *, calls: int = 100, callers: int = 16, per_caller: int = 10) -> dict[str, Any]:
    """Start server-everything and both gateways; measure latency and throughput side by side."""
    env = {**os.environ, "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "true"}
    this_path = str(Path(__file__).resolve().parents[3])
    with tempfile.TemporaryDirectory() as tmp_name, everything() as upstream, contextlib.ExitStack() as stack:
        tmp = Path(tmp_name)
        servers = [{"name": "everything", "url": upstream}]
        urls = {"direct": upstream}
        for side, path in (("other", other), ("this", this_path)):
            (tmp / side).mkdir()
            base = stack.enter_context(
                foldgate_serve({"servers": servers}, tmp / side, {**env, "PYTHONPATH": path})
            )
            urls[side] = base + "/mcp/all"
        report = asyncio.run(_measure(urls, calls, callers, per_caller))
    return {"other": other, "calls": calls, **report}


def format_versus(r: dict[str, Any]) -> str:
    """Each gateway's overhead over direct, the two head to head, and their throughput ratios."""
    lines = [f"this checkout vs {r['other']}: everything__echo, {r['calls']} calls per side (ms)"]
    for label, row in r["latency"].items():
        first, second = ("other", "this") if label == "other_vs_this" else ("direct", label)
        lines.append(
            f"{label:<14} {first} p50 {row['direct_p50_ms']} p95 {row['direct_p95_ms']} | {second} p50 "
            f"{row['proxied_p50_ms']} p95 {row['proxied_p95_ms']} | {second} - {first}: "
            f"{row['p50_overhead_ms']:+.2f} / {row['p95_overhead_ms']:+.2f}"
        )
    rate = r["calls_per_s"]
    lines.append(
        f"{r['callers']} concurrent callers, calls/s: direct {rate['direct']}, other {rate['other']} "
        f"({r['ratio_other']}x direct), this {rate['this']} ({r['ratio_this']}x direct)"
    )
    for side, cpu in r.get("cpu_ms_per_call", {}).items():
        lines.append("  " + format_cpu(side, cpu))
    return "\n".join(lines)
