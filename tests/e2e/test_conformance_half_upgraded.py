"""End to end: a half-upgraded upstream behind ``foldgate serve`` keeps a 2025-era client's relays.

The upstream is the conformance reference server with ``HALF_UPGRADED=1``: it offers 2026-07-28, but in
it its interactive tools cannot ask for input ("Method not found", as an SDK 1.x server that only asks
with server-to-client requests); in a 2025 session they ask as usual. The suite's four input
scenarios, run by a 2025-era client (0.1.16, and 0.2.0-alpha.12 which still initialises at
2025-11-25), must pass through the gateway with the server's ``protocol`` on ``auto`` (foldgate sends
such calls at a 2025 version), and fail with it pinned to 2026-07-28 (so the pass is the era choice's
doing, and the pinned setting is obeyed).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.node_clients import (
    CONFORMANCE_CLI,
    CONFORMANCE_DIR,
    CONFORMANCE_NEXT_CLI,
    SuiteRun,
    list_server_scenarios,
    reference_server,
    run_suite,
)
from tests.procs import foldgate_serve

pytestmark = pytest.mark.e2e

SCENARIOS = (
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
)
SERVER = CONFORMANCE_DIR / "servers" / "reference_server.ts"
CLIS = {"0.1.16": CONFORMANCE_CLI, "0.2.0-alpha.12": CONFORMANCE_NEXT_CLI}


@pytest.fixture(scope="module")
def half_upgraded(node22: Path) -> Iterator[str]:
    if not CONFORMANCE_CLI.exists():
        pytest.skip("the conformance suite is not installed")
    with reference_server(node22, SERVER, {"HALF_UPGRADED": "1"}) as url:
        yield url


def config(url: str, protocol: str) -> dict[str, Any]:
    server = {
        "name": "conformance",
        "url": url,
        "publish": "bare",
        "tool_loading": "eager",
        "protocol": protocol,
    }
    return {"servers": [server]}


def modern_call(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call at 2026-07-28 that declares sampling and elicitation; the JSON-RPC answer."""
    caps = {"sampling": {}, "elicitation": {"form": {}}}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as error:
        answer = json.loads(error.read())
    return answer


def suite_run(node: Path, url: str, cli: Path) -> SuiteRun:
    if not list_server_scenarios(cli):
        pytest.skip(f"{cli} is not installed")
    return run_suite(node, url, cli, SCENARIOS)


def test_the_upstream_cannot_ask_for_input_at_2026(half_upgraded: str) -> None:
    # What makes the scenarios below hard: called directly at 2026-07-28 the server refuses.
    answer = modern_call(half_upgraded, "test_sampling", {"prompt": "hi"})
    assert answer.get("error", {}).get("code") == -32601, answer
    assert "Method not found" in answer["error"]["message"]


@pytest.mark.parametrize("suite", CLIS)
def test_the_input_scenarios_pass_through_serve_in_auto(
    node22: Path, half_upgraded: str, tmp_path: Path, suite: str
) -> None:
    with foldgate_serve(config(half_upgraded, "auto"), tmp_path, "--interval", "600") as base:
        run = suite_run(node22, f"{base}/mcp/all", CLIS[suite])
    for scenario in SCENARIOS:
        result = run.results.get(scenario)
        assert result is not None, f"no checks for {scenario}:\n{run.output[-3000:]}"
        assert result.passed, f"{scenario} failed through foldgate: {result.failures}"


def test_pinned_to_2026_the_input_scenarios_fail(node22: Path, half_upgraded: str, tmp_path: Path) -> None:
    with foldgate_serve(config(half_upgraded, "2026-07-28"), tmp_path, "--interval", "600") as base:
        run = suite_run(node22, f"{base}/mcp/all", CONFORMANCE_CLI)
    for scenario in SCENARIOS:
        result = run.results.get(scenario)
        assert result is not None, f"no checks for {scenario}:\n{run.output[-3000:]}"
        assert not result.passed, f"{scenario} passed though the upstream was pinned to 2026-07-28"
    assert "Method not found" in json.dumps(run.results["tools-call-sampling"].checks)
