"""End to end: foldgate's upstream OAuth client against the official conformance suite's client auth
scenarios (@modelcontextprotocol/conformance: its own MCP server and authorization server, checks of
every request the client makes).

The client under test is tests/conformance/foldgate_oauth_client.py: discovery, registration, the code
flow with PKCE, the code exchange, then tools/list and tools/call through the upstream client.

Pins: upstreams on the 2025-03-26 authorization spec connect (no protected resource metadata; the
authorization server metadata at the MCP server's origin, or none and the default /authorize, /token,
/register endpoints), as do the current spec's metadata layouts; a protected resource metadata naming
another resource is refused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.node_clients import run_client_scenario
from tests.procs import REPO

pytestmark = pytest.mark.e2e

CLIENT = REPO / "tests" / "conformance" / "foldgate_oauth_client.py"
SCENARIOS = [
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/token-endpoint-auth-none",
    "auth/resource-mismatch",
]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_auth_scenario(node22: Path, scenario: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "shared"), str(REPO)])}
    result = run_client_scenario(node22, [sys.executable, str(CLIENT)], scenario, env)
    assert result.checks, f"{scenario}: the suite recorded no checks"
    assert result.passed, f"{scenario}: {result.failures}"
