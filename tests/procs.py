"""Real processes for integration and end-to-end tests: replay upstreams, the demo fleet, the gateway."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from foldgate.dev.corpus import load_catalog_rows
from foldgate.dev.procs import free_port, stop_process

REPO = Path(__file__).resolve().parents[1]
DEMO_CATALOG = REPO / "demo" / "catalog.jsonl"
NODE_BIN = REPO / "demo" / "node_modules" / ".bin"
DEMO_BIN = REPO / ".demo" / "venv" / "bin"


def wait_http(url: str, timeout: float = 20.0) -> None:
    """Poll until the URL answers 2xx."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if 200 <= r.status < 300:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not come up within {timeout}s")
        time.sleep(0.1)


@dataclass
class Replay:
    """A running replay upstream: one URL per catalog server, and the log of calls it received."""

    base: str
    urls: dict[str, str]
    proc: subprocess.Popen[str]

    def calls(self) -> list[dict[str, Any]]:
        """Every tools/call the replay received."""
        with urllib.request.urlopen(self.base + "/_calls", timeout=5) as r:
            data: list[dict[str, Any]] = json.loads(r.read())
            return data

    def clear(self) -> None:
        """Forget received calls."""
        urllib.request.urlopen(
            urllib.request.Request(self.base + "/_calls", method="DELETE"), timeout=5
        ).close()

    def stop(self) -> None:
        """Kill the upstream (to simulate one that dies)."""
        stop_process(self.proc)


@contextlib.contextmanager
def replay(catalog: Path = DEMO_CATALOG, *, page_size: int | None = None) -> Iterator[Replay]:
    """Run ``foldgate replay`` on a free port for the duration of the block."""
    servers = {str(r["server"]) for r in load_catalog_rows(catalog)}
    cmd = [sys.executable, "-m", "foldgate.app.cli", "replay", str(catalog), "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        urls: dict[str, str] = {}
        assert proc.stdout is not None
        while len(urls) < len(servers):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"replay exited early with {proc.wait()}")
            name, url = line.rstrip("\n").split("\t")
            urls[name] = url
        base = next(iter(urls.values())).rsplit("/", 2)[0]
        wait_http(base + "/healthz")
        yield Replay(base, urls, proc)
    finally:
        stop_process(proc)


def need_demo_fleet() -> None:
    """Skip with a reason when `make demo-deps` has not installed the real servers."""
    if not (NODE_BIN / "mcp-server-everything").exists() or not (DEMO_BIN / "mcp-server-git").exists():
        pytest.skip("the demo fleet is not installed: run `make demo-deps` (make test does)")
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")


@contextlib.contextmanager
def everything_server() -> Iterator[str]:
    """npm @modelcontextprotocol/server-everything over Streamable HTTP; yields its /mcp URL."""
    need_demo_fleet()
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    proc = subprocess.Popen(
        [str(NODE_BIN / "mcp-server-everything"), "streamableHttp"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "listening" in line.lower():
                break
            if not line and proc.poll() is not None:
                raise RuntimeError("server-everything exited early")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


def stdio_fleet(scratch: Path) -> list[dict[str, Any]]:
    """Config entries for the stdio servers of the demo fleet, working in a scratch folder."""
    need_demo_fleet()
    repo = scratch / "repo"
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (repo / "README.md").write_text("# scratch\n")
        subprocess.run(["git", "-C", str(repo), "add", "README.md"], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(repo),
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "commit",
                "-qm",
                "init",
            ],
            check=True,
        )
    (scratch / "hello.txt").write_text("hello from foldgate\n")
    fs = [str(NODE_BIN / "mcp-server-filesystem"), str(scratch)]
    git = [str(DEMO_BIN / "mcp-server-git"), "--repository", str(repo)]
    return [
        {"name": "filesystem", "transport": "stdio", "command": fs},
        {"name": "memory", "transport": "stdio", "command": [str(NODE_BIN / "mcp-server-memory")],
         "env": {"MEMORY_FILE_PATH": str(scratch / "memory.jsonl")}},
        {"name": "git", "transport": "stdio", "command": git},
        {"name": "time", "transport": "stdio", "command": [str(DEMO_BIN / "mcp-server-time")]},
    ]  # fmt: skip


@contextlib.contextmanager
def foldgate_serve(
    config: dict[str, Any],
    tmp: Path,
    *extra_args: str,
    timeout: float = 90.0,
    port: int | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """``foldgate serve`` in its own process on ``port`` (default: a free one) with ``config`` written to
    ``tmp``; yields the base URL once /healthz answers (the first index run finished). ``env`` adds to
    (or overrides) the process's environment, e.g. a SQLite file shared by two gateways."""
    import yaml

    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "foldgate.yaml"
    path.write_text(yaml.safe_dump(config))
    port = port or free_port()
    env = {**os.environ, "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"), **(env or {})}
    cmd = [sys.executable, "-m", "foldgate.app.cli", "serve", "--config", str(path), "--port", str(port)]
    cmd.extend(extra_args)
    with (tmp / "serve.log").open("w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(base + "/healthz", timeout=timeout)
            yield base
        finally:
            stop_process(proc)
