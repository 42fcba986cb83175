"""``foldgate bench call --breakdown``: where a proxied call's time goes, stage by stage, in one run.

A gateway of its own (``foldgate serve`` with ``FOLDGATE_STAGE_LOG``, see
:mod:`foldgate.telemetry.stages`) serves the same upstream as the latency bench; a warm MCP client calls
``everything__echo`` through it, interleaved with the same call on a direct session. When the gateway
stops it writes each request's stage times; the ``tools/call`` requests after the warm-up are kept and
each stage's p50/p95 printed (its *own* time: the quota inside authentication is the quota's), with
what no span covers (the HTTP server, routing, surfaces' glue) as ``other``. The stage gateway's
overhead over direct is printed too, so the stages can be set against what the client sees.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foldgate.dev.bench.call_procs import foldgate_serve
from foldgate.telemetry.stages import read_stage_log

__all__ = ["STAGES", "format_breakdown", "run_breakdown", "stage_table"]

# Span name -> the stage it times, in the order a call crosses them.
STAGES: dict[str, str] = {
    "foldgate.trace": "trace",
    "foldgate.auth": "authentication",
    "foldgate.quota": "quota",
    "foldgate.activity": "activity record",
    "foldgate.view": "view",
    "foldgate.validation": "validation",
    "foldgate.param_headers": "Mcp-Param check",
    "foldgate.upstream": "upstream wait",
    "foldgate.guard": "result guard",
    "foldgate.encode": "response encoding",
    "foldgate.send": "response write (HTTP server)",
}
_WARM = 10


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_breakdown(
    servers: list[dict[str, Any]],
    tmp: Path,
    env: dict[str, str],
    measure: Callable[[str], dict[str, float]],
) -> dict[str, Any]:
    """Serve ``servers`` from a stage-timing gateway, have ``measure`` call through it (its MCP URL)
    and directly (the latency bench's pair, see :mod:`foldgate.dev.bench.call`), read the stages."""
    log = tmp / "stages.json"
    (tmp / "stages").mkdir(exist_ok=True)
    timed_env = {**env, "FOLDGATE_STAGE_LOG": str(log)}
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(foldgate_serve({"servers": servers}, tmp / "stages", timed_env))
        latency = measure(base + "/mcp/all")
    # The gateway wrote its records when it stopped; the calls are the requests that went upstream.
    records = [r for r in read_stage_log(log) if "foldgate.upstream" in r][_WARM:]
    if not records:
        raise RuntimeError(f"the stage-timing gateway wrote no call records to {log}")
    return {"calls": len(records), "stages": stage_table(records), "latency": latency}


def stage_table(records: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """p50/p95 of each stage's own time over ``records`` (a stage a request skipped counts 0), then
    ``other`` (the request's time no stage covers: surfaces, routing between them) and the total."""
    stages: dict[str, dict[str, float]] = {}
    for name, label in {**STAGES, "other": "other (surfaces, glue)", "total": "total"}.items():
        if name == "other":
            values = [r["total"] - sum(v for k, v in r.items() if k in STAGES) for r in records]
        else:
            values = [r.get(name, 0.0) for r in records]
        stages[label] = {
            "p50_ms": round(statistics.median(values), 3),
            "p95_ms": round(_pct(values, 0.95), 3),
        }
    return stages


def format_breakdown(b: dict[str, Any]) -> str:
    """A table of the stages' own times, then the same gateway's overhead over direct."""
    lines = [
        f"breakdown of {b['calls']} proxied everything__echo calls (own time per stage, ms)",
        f"{'stage':<36}{'p50':>9}{'p95':>9}",
    ]
    for label, row in b["stages"].items():
        lines.append(f"{label:<36}{row['p50_ms']:>9.3f}{row['p95_ms']:>9.3f}")
    lat = b["latency"]
    lines.append(
        f"same gateway vs direct: p50 {lat['proxied_p50_ms']} vs {lat['direct_p50_ms']} "
        f"({lat['p50_overhead_ms']:+.2f}), p95 {lat['proxied_p95_ms']} vs {lat['direct_p95_ms']} "
        f"({lat['p95_overhead_ms']:+.2f})"
    )
    return "\n".join(lines)
