"""``foldgate bench coldstart``: each Lambda handler's init next to a bare interpreter, fresh processes.

A Lambda instance's first request pays for its function's init: the Python start, the imports and the
wiring ``functions/<name>/app.py`` runs at module level. Each round starts one fresh process per
variant, in turn (so machine noise hits every variant alike):

* ``bare``: the interpreter alone (``python -c pass``), the floor no handler can go under;
* each handler: the interpreter, then ``runpy.run_path(functions/<name>/app.py)`` (init only, no
  request), against a SQLite store and a config file (no AWS call at init);
* with ``before``, each handler again from other checkouts (a directory, or a git revision exported
  with ``git archive``: its ``functions/``, ``shared/`` and ``layers/``).

Each handler runs in two bytecode states, as Lambda would see them (the layer and the code directory
are read-only there, so nothing compiled at init is kept for the next instance):

* ``cold``: only the standard library has bytecode (the runtime image ships it); the dependencies and
  foldgate compile from source in every process: a layer built without ``.pyc``;
* ``shipped``: the dependencies and foldgate have unchecked-hash ``.pyc`` as the layer build ships
  them (``foldgate.dev.layer_bytecode``).

Both use a private ``PYTHONPYCACHEPREFIX`` with ``PYTHONDONTWRITEBYTECODE``, so a checkout's own
``__pycache__`` (warm from tests) never leaks in. A checkout whose layer build compiles bytecode is
*deployed* shipped, another cold: the ``deployed`` ratio compares what each would run in Lambda.

Reported per variant: the median wall time of the process (start to exit) and of the init alone (timed
inside the process), and how many modules the init left in ``sys.modules``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from foldgate.dev.bench.call_procs import REPO

__all__ = ["HANDLERS", "MODES", "format_coldstart_report", "run_coldstart_bench", "ships_bytecode"]

# The functions whose init is timed (functions/<name>/app.py); the agents' two first.
HANDLERS = ("mcp", "code", "admin", "indexer")
MODES = ("cold", "shipped")

_TIMED = (
    "import runpy, sys, time, json; t, c = time.perf_counter(), time.process_time(); "
    "runpy.run_path({app!r}); "
    "print(json.dumps([time.perf_counter() - t, time.process_time() - c, len(sys.modules)]))"
)
# The source files an init imports (once per checkout and handler, to compile the two prefixes).
_SOURCES = (
    "import runpy, sys, json; runpy.run_path({app!r}); "
    "print(json.dumps(sorted({{getattr(m, '__file__', None) or '' for m in list(sys.modules.values())}})))"
)
_COMPILE = (
    "import json, py_compile, sys; mode = py_compile.PycInvalidationMode[sys.argv[1]]; n = 0\n"
    "for f in json.load(sys.stdin):\n"
    "    try: py_compile.compile(f, doraise=True, invalidation_mode=mode); n += 1\n"
    "    except (py_compile.PyCompileError, OSError): pass\n"
    "print(n)"
)
_BARE = "import sys, json; print(json.dumps([0, 0, len(sys.modules)]))"


def _run(code: str, env: dict[str, str]) -> tuple[float, float, float, int]:
    """(process wall ms, init ms, init CPU ms, modules) of one fresh interpreter running ``code``."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False, timeout=120
    )
    wall = (time.perf_counter() - t) * 1000
    if out.returncode != 0:
        raise RuntimeError(f"cold-start child failed: {out.stderr.strip()[-800:]}")
    lines = out.stdout.strip().splitlines()
    if not lines:
        return wall, 0.0, 0.0, 0
    init_s, cpu_s, modules = json.loads(lines[-1])
    return wall, float(init_s) * 1000, float(cpu_s) * 1000, int(modules)


def _env(
    tmp: Path, shared: Path, prefix: Path | None = None, cloud: dict[str, str] | None = None
) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "FOLDGATE_", "AWS_", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITE"))
    }
    store = cloud or {
        "FOLDGATE_SQLITE_PATH": str(tmp / "cold.sqlite3"),
        "FOLDGATE_CONFIG_FILE": str(tmp / "cold.json"),
    }
    env = {**base, "PYTHONPATH": str(shared), **store}
    if prefix is not None:
        env |= {"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}
    return env


def ships_bytecode(root: Path) -> bool:
    """Whether the checkout at ``root`` builds its dependency layer with ``.pyc`` (its layer Makefile
    runs foldgate.dev.layer_bytecode)."""
    makefile = root / "layers" / "deps" / "Makefile"
    return makefile.is_file() and "foldgate.dev.layer_bytecode" in makefile.read_text(encoding="utf-8")


def _export(rev: str, into: Path) -> Path:
    """A git revision's functions/, shared/ and layers/ (what an init and the layer build read)."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "functions", "shared", "layers"],
        capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True, timeout=120)
    return into


def _compile(files: list[str], prefix: Path, mode: str) -> None:
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [sys.executable, "-c", _COMPILE, mode], input=json.dumps(files), text=True, env=env,
        capture_output=True, check=True, timeout=600,
    )  # fmt: skip


def _prefixes(tmp: Path, apps: list[tuple[Path, dict[str, str]]]) -> dict[str, Path]:
    """Two bytecode prefixes: the standard library's alone (cold) and everything's (shipped)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    sources: set[str] = set()
    for app, env in apps:
        out = subprocess.run(
            [sys.executable, "-c", _SOURCES.format(app=str(app))], capture_output=True, text=True,
            env=env, check=True, timeout=120,
        )  # fmt: skip
        sources.update(f for f in json.loads(out.stdout.strip().splitlines()[-1]) if f.endswith(".py"))
    std = sorted(f for f in sources if Path(f).resolve().is_relative_to(stdlib) and "site-packages" not in f)
    layer = sorted(sources.difference(std))
    cold, shipped = tmp / "pyc-cold", tmp / "pyc-shipped"
    _compile(std, cold, "TIMESTAMP")  # the runtime image's stdlib bytecode
    shutil.copytree(cold, shipped)
    _compile(layer, shipped, "UNCHECKED_HASH")  # what the layer build ships
    return {"cold": cold, "shipped": shipped}


def _checkouts(tmp: Path, before: list[str | Path]) -> dict[str, Path]:
    roots: dict[str, Path] = {"": REPO}
    for i, ref in enumerate(before):
        path = Path(ref)
        if path.is_dir():
            roots[f"{path.name or 'before'}:"] = path.resolve()
        else:
            roots[f"{ref}:"] = _export(str(ref), tmp / f"before-{i}")
    return roots


def _handler_env(name: str, cloud: dict[str, str] | None) -> dict[str, str] | None:
    if cloud is None:
        return None
    # Loaded only for the cloud store (the handler's own Environment over the Globals).
    from foldgate.dev.bench.coldstart_cloud import HANDLER_ENV

    return cloud | HANDLER_ENV.get(name, {})


def _sample(
    tmp: Path,
    rounds: int,
    handlers: tuple[str, ...],
    before: list[str | Path],
    modes: tuple[str, ...],
    cloud: dict[str, str] | None,
) -> tuple[dict[str, list[tuple[float, float, float, int]]], dict[str, str], list[str]]:
    """Every variant's samples, each checkout's deployed bytecode mode, and the ``before`` labels."""
    samples: dict[str, list[tuple[float, float, float, int]]] = {"bare": []}
    (tmp / "cold.json").write_text(json.dumps({"servers": []}))
    roots = _checkouts(tmp, before)
    apps = {
        (prefix, name): root / "functions" / name / "app.py"
        for prefix, root in roots.items()
        for name in handlers
        if (root / "functions" / name / "app.py").exists()
    }
    envs = {key: _handler_env(key[1], cloud) for key in apps}
    pyc = _prefixes(
        tmp, [(app, _env(tmp, roots[key[0]] / "shared", None, envs[key])) for key, app in apps.items()]
    )
    for _ in range(rounds):  # interleaved, so machine noise hits every variant alike
        samples["bare"].append(_run(_BARE, _env(tmp, REPO / "shared", pyc["cold"])))
        for (prefix, name), app in apps.items():
            for mode in modes:
                env = _env(tmp, roots[prefix] / "shared", pyc[mode], envs[(prefix, name)])
                samples.setdefault(f"{prefix}{name}/{mode}", []).append(
                    _run(_TIMED.format(app=str(app)), env)
                )
    deployed = {prefix: "shipped" if ships_bytecode(root) else "cold" for prefix, root in roots.items()}
    return samples, deployed, [p for p in roots if p]


def run_coldstart_bench(
    *,
    rounds: int = 7,
    handlers: tuple[str, ...] = HANDLERS,
    before: list[str | Path] | None = None,
    modes: tuple[str, ...] = MODES,
    store: str = "sqlite",
) -> dict[str, Any]:
    """Median init of each handler per bytecode mode (and of a bare interpreter), ``rounds`` fresh
    processes each; ``before`` names other checkouts (directories or git revisions) timed alike;
    ``store`` dynamodb runs every init against a moto-backed stack as deployed (coldstart_cloud)."""
    with contextlib.ExitStack() as stack:
        cloud: dict[str, str] | None = None
        if store == "dynamodb":
            # Loaded only for this store: boto3 and moto are the cloud figures' alone.
            from foldgate.dev.bench.coldstart_cloud import cloud_stack

            cloud = stack.enter_context(cloud_stack())
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        samples, deployed, befores = _sample(tmp, rounds, handlers, list(before or []), modes, cloud)
    rows: dict[str, Any] = {}
    for label, runs in samples.items():
        rows[label] = {
            "process_ms": round(statistics.median(r[0] for r in runs), 1),
            "init_ms": round(statistics.median(r[1] for r in runs), 1),
            "init_cpu_ms": round(statistics.median(r[2] for r in runs), 1),
            "modules": int(statistics.median(r[3] for r in runs)),
        }
    bare = rows["bare"]["process_ms"]
    for row in rows.values():
        row["over_bare_ms"] = round(row["process_ms"] - bare, 1)
    for prefix in befores:
        for name in handlers:
            for mode in modes:
                now, then = rows.get(f"{name}/{mode}"), rows.get(f"{prefix}{name}/{mode}")
                if now and then and then["init_ms"] and then["init_cpu_ms"]:
                    now.setdefault("vs_before", {})[prefix[:-1]] = round(now["init_ms"] / then["init_ms"], 2)
                    now.setdefault("cpu_vs_before", {})[prefix[:-1]] = round(
                        now["init_cpu_ms"] / then["init_cpu_ms"], 2
                    )
    summary: dict[str, Any] = {}
    for name in handlers:
        now = rows.get(f"{name}/{deployed['']}")
        if now is None:
            continue
        summary[name] = {
            "init_ms": now["init_ms"], "init_cpu_ms": now["init_cpu_ms"], "bytecode": deployed[""], "vs": {}
        }  # fmt: skip
        for prefix in befores:
            then = rows.get(f"{prefix}{name}/{deployed[prefix]}")
            if then and then["init_ms"] and then["init_cpu_ms"]:
                summary[name]["vs"][prefix[:-1]] = {
                    "init_ms": then["init_ms"],
                    "init_cpu_ms": then["init_cpu_ms"],
                    "bytecode": deployed[prefix],
                    "ratio": round(now["init_ms"] / then["init_ms"], 2),
                    "cpu_ratio": round(now["init_cpu_ms"] / then["init_cpu_ms"], 2),
                }
    return {
        "rounds": rounds,
        "store": store,
        "before": [p[:-1] for p in befores],
        "modes": list(modes),
        "handlers": rows,
        "deployed": summary,
    }


def format_coldstart_report(r: dict[str, Any]) -> str:
    """A table per variant (process, init wall and CPU time, modules, the init's ratios to each
    ``before`` in the same bytecode mode), then each handler's init as deployed (its checkout's layer
    bytecode) against each ``before``."""
    lines = [
        f"fresh processes per variant: {r['rounds']} (medians, ms); bytecode: cold = compiled at init, "
        "shipped = .pyc in the layer; init vs before: wall (CPU)",
        f"{'variant':<26}{'process':>9}{'over bare':>11}{'init':>9}{'init CPU':>10}{'modules':>9}"
        "  init vs before",
    ]
    for label, row in r["handlers"].items():
        cpu = row.get("cpu_vs_before", {})
        ratio = "  ".join(f"{b}: {v:.2f}x ({cpu[b]:.2f}x)" for b, v in row.get("vs_before", {}).items())
        lines.append(
            f"{label:<26}{row['process_ms']:>9.1f}{row['over_bare_ms']:>11.1f}{row['init_ms']:>9.1f}"
            f"{row['init_cpu_ms']:>10.1f}{row['modules']:>9}  {ratio}"
        )
    if r["deployed"]:
        lines.append("as deployed (each checkout's layer bytecode), init wall (CPU) ms:")
        for name, d in r["deployed"].items():
            vs = "  ".join(
                f"{b} ({v['bytecode']}) {v['init_ms']:.1f} ({v['init_cpu_ms']:.1f}): "
                f"{v['ratio']:.2f}x ({v['cpu_ratio']:.2f}x)"
                for b, v in d["vs"].items()
            )
            lines.append(f"  {name} ({d['bytecode']}) {d['init_ms']:.1f} ({d['init_cpu_ms']:.1f})  {vs}")
    return "\n".join(lines)
