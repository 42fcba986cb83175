"""``foldgate bench call --own-cpu``: the gateway's own CPU per proxied call, in process, side by side.

What a proxied call costs the gateway itself, without the HTTP server, the network or the upstream:
a fresh process wires a gateway exactly as ``foldgate serve`` does (``build_local``: the task store,
the activity recorder, the metrics, the guard), indexes server-everything, then has its upstream
client answer ``everything__echo`` at once and sends the same ``tools/call`` to the app as raw ASGI
messages, timing each request in thread CPU (what other work on a shared machine does not inflate).

With ``--versus PATH`` the same process runs from that ``PYTHONPATH`` too (another checkout's
``shared/``), the two alternating round by round, so before and after are read from one run. The
measuring process runs :mod:`foldgate.app.bench_own_child` of this checkout as a script (it wires the
gateway, a floor above these benches, and imports whichever package ``PYTHONPATH`` names first), so
the other checkout's code is measured with this checkout's harness.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

__all__ = ["format_own_cpu", "run_own_cpu"]

# Run by path, not imported: the wiring it measures sits on a floor above the benches.
_CHILD: Final = Path(__file__).resolve().parents[2] / "app" / "bench_own_child.py"


def _measure(path: str, upstream: str, requests: int) -> dict[str, float]:
    """One fresh process importing the gateway from ``path``; its p50/p95 thread CPU per request."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ, "PYTHONPATH": path, "FOLDGATE_SQLITE_PATH": str(Path(tmp) / "own.sqlite3"),
            "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "true", "FOLDGATE_RATE_LIMIT_PER_MINUTE": "0",
        }  # fmt: skip
        done = subprocess.run(
            [sys.executable, str(_CHILD), upstream, str(requests)],
            env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the measuring process failed: {done.stderr.strip()[-500:]}")
    row: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def run_own_cpu(other: str | None = None, *, requests: int = 2000, rounds: int = 3) -> dict[str, Any]:
    """This checkout's (and ``other``'s) own CPU per call: ``rounds`` fresh processes each, alternating."""
    # The fleet's processes load with this bench only.
    from foldgate.dev.bench.call_procs import everything

    this = str(Path(__file__).resolve().parents[3])
    sides = {"this": this, **({"other": other} if other else {})}
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    with everything() as upstream:
        for _ in range(rounds):
            for side, path in sides.items():
                runs[side].append(_measure(path, upstream, requests))
    return {
        "requests": requests,
        "rounds": rounds,
        "other": other,
        "own_cpu": {
            side: {
                "p50_ms": round(statistics.median(r["p50_ms"] for r in rows), 3),
                "p95_ms": round(statistics.median(r["p95_ms"] for r in rows), 3),
            }
            for side, rows in runs.items()
        },
    }


def format_own_cpu(r: dict[str, Any]) -> str:
    """One line per side: the median over rounds of each process's p50 and p95."""
    lines = [
        f"gateway's own CPU per proxied everything__echo call (in process, upstream answering at once; "
        f"{r['requests']} requests, median of {r['rounds']} processes, ms thread CPU)"
    ]
    for side, row in r["own_cpu"].items():
        name = "this checkout" if side == "this" else r["other"]
        lines.append(f"  {name}: p50 {row['p50_ms']:.3f} p95 {row['p95_ms']:.3f}")
    return "\n".join(lines)
