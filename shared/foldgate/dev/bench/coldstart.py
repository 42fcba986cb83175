"""``foldgate bench coldstart``: each Lambda handler's init next to a bare interpreter, fresh processes.

A Lambda instance's first request pays for its function's init: the Python start, the imports and the
wiring ``functions/<name>/app.py`` runs at module level. Each round starts one fresh process per
variant, in turn (so machine noise hits every variant alike):

* ``bare``: the interpreter alone (``python -c pass``), the floor no handler can go under;
* each handler: the interpreter, then ``runpy.run_path(functions/<name>/app.py)`` (init only, no
  request), against a SQLite store and a config file (no AWS call at init);
* with ``before``, each handler again from another checkout (its ``functions/`` and ``shared/``).

Reported per variant: the median wall time of the process (start to exit) and of the init alone (timed
inside the process), and how many modules the init left in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from foldgate.dev.bench.call_procs import REPO

__all__ = ["HANDLERS", "format_coldstart_report", "run_coldstart_bench"]

# The functions whose init is timed (functions/<name>/app.py); the agents' two first.
HANDLERS = ("mcp", "code", "admin", "indexer")

_TIMED = (
    "import runpy, sys, time, json; t = time.perf_counter(); runpy.run_path({app!r}); "
    "print(json.dumps([time.perf_counter() - t, len(sys.modules)]))"
)

_BARE = "import sys, json; print(json.dumps([0, len(sys.modules)]))"


def _run(code: str, env: dict[str, str]) -> tuple[float, float, int]:
    """(process wall ms, init ms, modules) of one fresh interpreter running ``code``."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False, timeout=120
    )
    wall = (time.perf_counter() - t) * 1000
    if out.returncode != 0:
        raise RuntimeError(f"cold-start child failed: {out.stderr.strip()[-800:]}")
    lines = out.stdout.strip().splitlines()
    if not lines:
        return wall, 0.0, 0
    init_s, modules = json.loads(lines[-1])
    return wall, float(init_s) * 1000, int(modules)


def _env(tmp: Path, shared: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "FOLDGATE_", "AWS_"))}
    return {
        **base,
        "PYTHONPATH": str(shared),
        "FOLDGATE_SQLITE_PATH": str(tmp / "cold.sqlite3"),
        "FOLDGATE_CONFIG_FILE": str(tmp / "cold.json"),
    }


def run_coldstart_bench(
    *, rounds: int = 7, handlers: tuple[str, ...] = HANDLERS, before: Path | None = None
) -> dict[str, Any]:
    """Median init of each handler (and of a bare interpreter) over ``rounds`` fresh processes each."""
    checkouts = {"": REPO} | ({"before:": before} if before is not None else {})
    samples: dict[str, list[tuple[float, float, int]]] = {"bare": []}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "cold.json").write_text(json.dumps({"servers": []}))
        for _ in range(rounds):  # interleaved, so machine noise hits every variant alike
            samples["bare"].append(_run(_BARE, _env(tmp, REPO / "shared")))
            for prefix, root in checkouts.items():
                for name in handlers:
                    app = root / "functions" / name / "app.py"
                    if not app.exists():
                        continue
                    code = _TIMED.format(app=str(app))
                    samples.setdefault(prefix + name, []).append(_run(code, _env(tmp, root / "shared")))
    rows: dict[str, Any] = {}
    for label, runs in samples.items():
        rows[label] = {
            "process_ms": round(statistics.median(r[0] for r in runs), 1),
            "init_ms": round(statistics.median(r[1] for r in runs), 1),
            "modules": int(statistics.median(r[2] for r in runs)),
        }
    bare = rows["bare"]["process_ms"]
    for label, row in rows.items():
        row["over_bare_ms"] = round(row["process_ms"] - bare, 1)
        if label.startswith("before:") and label[7:] in rows:
            now = rows[label[7:]]
            now["vs_before"] = round(now["init_ms"] / row["init_ms"], 2) if row["init_ms"] else 0.0
    return {"rounds": rounds, "before": str(before) if before else None, "handlers": rows}


def format_coldstart_report(r: dict[str, Any]) -> str:
    """A table: per variant its process time, init time, modules and the ratio to ``before``."""
    lines = [
        f"fresh processes per variant: {r['rounds']} (medians, ms)",
        f"{'variant':<18}{'process':>9}{'over bare':>11}{'init':>9}{'modules':>9}{'init vs before':>16}",
    ]
    for label, row in r["handlers"].items():
        ratio = f"{row['vs_before']:.2f}x" if "vs_before" in row else ""
        lines.append(
            f"{label:<18}{row['process_ms']:>9.1f}{row['over_bare_ms']:>11.1f}{row['init_ms']:>9.1f}"
            f"{row['modules']:>9}{ratio:>16}"
        )
    return "\n".join(lines)
