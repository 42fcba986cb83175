"""End to end: `make run`'s demo/run.sh, started as a person starts it (on free ports, with a temporary
state folder), including its OAuth-protected upstream and that upstream's authorization server.

Pins: the demo comes up healthy with the protected server configured but ``not_connected`` (the index
run finishes and names the reason; none of its tools listed); the operator connects it through the
admin API, a person consents at the provider (driven over HTTP) and lands on the demo's
/oauth/callback; after a reindex an agent lists and calls its tools through /mcp/all as that person;
the `foldgate connect` line the demo prints works from a second terminal; and when the authorization
server cannot start, the demo warns and serves the rest of the fleet without the protected server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from foldgate.dev.procs import free_port
from tests.oauth_provider import consent, need_provider
from tests.procs import REPO, need_demo_fleet, wait_http

pytestmark = pytest.mark.e2e

RUN_SH = REPO / "demo" / "run.sh"
PORTS = (
    "FOLDGATE_PORT",
    "DEMO_EVERYTHING_PORT",
    "DEMO_REPLAY_PORT",
    "DEMO_OAUTH_PORT",
    "DEMO_PROTECTED_PORT",
)


@dataclass
class Demo:
    """A running demo: its gateway's base URL, state folder and everything it printed so far."""

    base: str
    state: Path
    log: Path

    def output(self) -> str:
        """What run.sh and its processes printed (stdout and stderr)."""
        return self.log.read_text()

    def config(self) -> str:
        """The generated demo config."""
        return (self.state / "foldgate.yaml").read_text()

    def admin(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        """An admin API request with the operator key the demo's gateway created."""
        key = (self.state / "operator.key").read_text().strip()
        headers = {"authorization": f"Bearer {key}"}
        return httpx2.request(method, self.base + path, headers=headers, timeout=60, **kwargs)

    def auth_state(self) -> dict[str, Any]:
        """The protected server's auth state as the status route reports it."""
        status = self.admin("GET", "/api/v1/status", params={"tenant": "default"})
        assert status.status_code == 200, status.text
        state: dict[str, Any] = status.json()["auth"]["protected"]
        return state


@contextlib.contextmanager
def run_demo(state: Path, ports: dict[str, int]) -> Iterator[Demo]:
    """demo/run.sh in its own process group until the block ends, then stopped as Ctrl-C stops it."""
    need_demo_fleet()
    need_provider()
    env = {**os.environ, "DEMO_STATE": str(state), **{k: str(v) for k, v in ports.items()}}
    log = state.parent / f"{state.name}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", str(RUN_SH)], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        base = f"http://127.0.0.1:{ports['FOLDGATE_PORT']}"
        try:
            wait_http(base + "/healthz", timeout=90)
        except TimeoutError:
            pytest.fail(f"the demo did not come up; it printed:\n{log.read_text()[-3000:]}")
        yield Demo(base, state, log)
    finally:
        # The whole group, as a terminal's Ctrl-C does: run.sh, the gateway and every upstream.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    state = tmp_path_factory.mktemp("demo-state")
    with run_demo(state, {name: free_port() for name in PORTS}) as running:
        yield running


async def tool_names(base: str) -> set[str]:
    async with Client(base + "/mcp/all") as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def call(base: str, name: str, arguments: dict[str, Any]) -> Any:
    async with Client(base + "/mcp/all") as client:
        return await client.call_tool(name, arguments)


async def test_the_demo_serves_the_fleet_with_the_protected_server_not_connected(demo: Demo) -> None:
    assert "auth: {kind: oauth" in demo.config()
    assert demo.auth_state()["state"] == "not_connected"
    names = await tool_names(demo.base)
    assert "everything__echo" in names
    assert not any(name.startswith("protected__") for name in names)
    # The index run finished (healthz) and says why the server has no tools, once per run.
    output = demo.output()
    assert "protected: not connected" in output
    # The printed steps name the connect route, the CLI and the callback.
    assert "/api/v1/servers/protected/connect?tenant=default" in output
    assert "foldgate connect protected" in output
    assert demo.base + "/oauth/callback" in output


async def test_the_operator_connects_and_an_agent_lists_and_calls_the_protected_tools(demo: Demo) -> None:
    started = demo.admin("POST", "/api/v1/servers/protected/connect", params={"tenant": "default"})
    assert started.status_code == 200, started.text
    callback = demo.base + "/oauth/callback"
    answer = await consent(started.json()["authorization_url"], callback, login="dora")
    page = httpx2.get(callback, params=answer, timeout=30)
    assert page.status_code == 200, page.text
    assert "protected is connected for tenant default" in page.text
    assert demo.auth_state()["state"] == "connected"

    reindexed = demo.admin("POST", "/api/v1/reindex", json={"tenant": "default"})
    assert reindexed.status_code == 202, reindexed.text
    names = await tool_names(demo.base)
    assert {"protected__whoami", "protected__echo"} <= names
    assert "everything__echo" in names

    who = await call(demo.base, "protected__whoami", {})
    assert not who.is_error, who
    assert json.loads(who.content[0].text)["subject"] == "dora"
    echoed = await call(demo.base, "protected__echo", {"text": "through the gateway"})
    assert echoed.content[0].text == "through the gateway"


async def test_the_printed_foldgate_connect_line_works_from_a_second_terminal(demo: Demo) -> None:
    line = next(ln for ln in demo.output().splitlines() if "foldgate connect protected" in ln)
    argv = shlex.split(line.strip().removeprefix("- "))
    proc = subprocess.Popen(
        [*argv, "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        callback = demo.base + "/oauth/callback"
        answer = await consent(url, callback, login="erin")
        assert httpx2.get(callback, params=answer, timeout=30).status_code == 200
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    demo.admin("POST", "/api/v1/reindex", json={"tenant": "default"})
    who = await call(demo.base, "protected__whoami", {})
    assert json.loads(who.content[0].text)["subject"] == "erin"


async def test_the_demo_serves_the_rest_when_the_authorization_server_cannot_start(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # The provider's port is taken (another program listens there), so it cannot start.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = {name: free_port() for name in PORTS}
        ports["DEMO_OAUTH_PORT"] = taken.getsockname()[1]
        with run_demo(tmp_path_factory.mktemp("demo-no-oauth"), ports) as demo:
            assert "warning: the demo's authorization server did not start" in demo.output()
            assert "protected" not in demo.config()
            assert "auth:" not in demo.config()
            names = await tool_names(demo.base)
            assert "everything__echo" in names
            assert "time__get_current_time" in names
