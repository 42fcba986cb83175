"""Real processes for ``foldgate bench call``: server-everything, the replay upstream, ``foldgate serve``.

Each is started on a free loopback port and stopped when its block ends; a process that fails to come
up raises with the reason instead of leaving the bench waiting.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from foldgate.dev.procs import free_port, stop_process
from foldgate.errors import ConfigError

__all__ = ["PIDS", "REPO", "cpu_seconds", "everything", "foldgate_serve", "index_once", "replay_crm"]

REPO = Path(__file__).resolve().parents[4]
EVERYTHING = REPO / "demo" / "node_modules" / ".bin" / "mcp-server-everything"
DEMO_CATALOG = REPO / "demo" / "catalog.jsonl"
# The process behind each URL a block below yields (server-everything's and each gateway's), so a bench
# can read their CPU time (``cpu_seconds``).
PIDS: dict[str, int] = {}
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds ``pid`` has used (Linux ``/proc``), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _wait_http(url: str, proc: subprocess.Popen[Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} before {url} answered")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as r:
            if 200 <= r.status < 300:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


@contextlib.contextmanager
def everything() -> Iterator[str]:
    """server-everything over Streamable HTTP (``make demo-deps`` installs it); yields its /mcp URL."""
    if not EVERYTHING.exists():
        raise ConfigError(f"{EVERYTHING} is missing: run `make demo-deps`")
    port = free_port()
    proc = subprocess.Popen(
        [str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 20
        while "listening" not in proc.stdout.readline().lower():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("server-everything did not start")
        url = f"http://127.0.0.1:{port}/mcp"
        PIDS[url] = proc.pid
        yield url
    finally:
        stop_process(proc)


@contextlib.contextmanager
def replay_crm() -> Iterator[str]:
    """The replay upstream serving the demo catalog's ``crm`` server; yields its URL."""
    cmd = [sys.executable, "-m", "foldgate.app.cli", "replay", str(DEMO_CATALOG), "--server", "crm"]
    cmd += ["--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"replay exited early with {proc.wait()}")
        url = line.rstrip("\n").split("\t")[1]
        _wait_http(url.rsplit("/", 2)[0] + "/healthz", proc, 20)
        yield url
    finally:
        stop_process(proc)


@contextlib.contextmanager
def foldgate_serve(config: dict[str, Any], tmp: Path, env: dict[str, str]) -> Iterator[str]:
    """``foldgate serve`` on a free port (first index run done); yields its base URL."""
    path = tmp / "serve.json"
    path.write_text(json.dumps(config))
    port = free_port()
    cmd = [sys.executable, "-m", "foldgate.app.cli", "serve", "--config", str(path), "--port", str(port)]
    # No per-source rate limit: every bench caller comes from loopback, and a refusal would count as a
    # fast "call" in the throughput figure.
    serve_env = {
        **env,
        "FOLDGATE_SQLITE_PATH": str(tmp / "serve.sqlite3"),
        "FOLDGATE_RATE_LIMIT_PER_MINUTE": "0",
    }
    with (tmp / "serve.log").open("w") as log:
        proc = subprocess.Popen(cmd, env=serve_env, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_http(base + "/healthz", proc, 90)
            PIDS[base] = proc.pid
            yield base
        finally:
            stop_process(proc)


def index_once(config: Path, db: Path, env: dict[str, str]) -> None:
    """``foldgate index`` into ``db`` (the cold-start process then serves a ready catalog)."""
    cmd = [sys.executable, "-m", "foldgate.app.cli", "index", "--config", str(config), "--db", str(db)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"foldgate index failed: {done.stderr.strip()[-500:]}")
