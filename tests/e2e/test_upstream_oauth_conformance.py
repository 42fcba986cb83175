"""End to end: foldgate's upstream OAuth client against the official conformance suite's client auth
scenarios (@modelcontextprotocol/conformance: its own MCP server and authorization server, checks of
every request the client makes).

The client under test is tests/conformance/foldgate_oauth_client.py: discovery, registration, the code
flow with PKCE, the code exchange, then tools/list and tools/call through the upstream client.

Pins: upstreams on the 2025-03-26 authorization spec connect (no protected resource metadata; the
authorization server metadata at the MCP server's origin, or none and the default /authorize, /token,
/register endpoints), as do the current spec's metadata layouts; a protected resource metadata naming
another resource is refused. With the suite's 0.2 pre-release (2026-07-28 wire): dynamic registration
sends ``application_type`` (SEP-837) and no token request precedes consent; the RFC 9207 ``iss``
response parameter is compared exactly (accepted when right, absent where not advertised; refused when
missing though advertised, wrong, unexpected or a trailing-slash variant, so no code exchange follows);
metadata naming another issuer is refused; an upstream whose protected resource metadata moves to
another authorization server is discovered again on the 401, foldgate registers there (never
presenting the first server's client) and the operator's second connect works; a ``workload_jwt``
server presents the suite's workload JWT with the RFC 7523 JWT-bearer grant (client auth ``none``).
With ``dpop: true``
(RFC 9449): a valid proof on the token request and on every MCP request, the token presented with the
DPoP scheme, and the authorization server's and the MCP server's ``use_dpop_nonce`` answered once with
their nonce.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.node_clients import CONFORMANCE_NEXT_CLI, run_client_scenario
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
# The 0.2.0-alpha.12 suite (2026-07-28 wire).
SCENARIOS_NEXT = [
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "auth/authorization-server-migration",
    "auth/metadata-default",
    "auth/token-endpoint-auth-none",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/enterprise-managed-authorization",
    # SEP-1933 workload identity: the JWT-bearer grant with the suite's workload JWT, no consent.
    "auth/wif-jwt-bearer",
    "auth/dpop",
    "auth/dpop-nonce",
]
# The wrapper's options per scenario: what the operator would configure for that upstream.
OPTIONS = {"auth/dpop": ["--dpop"], "auth/dpop-nonce": ["--dpop"]}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_auth_scenario(node22: Path, scenario: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "shared"), str(REPO)])}
    result = run_client_scenario(node22, [sys.executable, str(CLIENT)], scenario, env)
    assert result.checks, f"{scenario}: the suite recorded no checks"
    assert result.passed, f"{scenario}: {result.failures}"


@pytest.mark.parametrize("scenario", SCENARIOS_NEXT)
def test_client_auth_scenario_on_the_next_suite(node22: Path, scenario: str) -> None:
    if not CONFORMANCE_NEXT_CLI.exists():
        pytest.skip("the suite's 0.2 pre-release is not installed: run `make conformance-deps`")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "shared"), str(REPO)])}
    command = [sys.executable, str(CLIENT), *OPTIONS.get(scenario, [])]
    result = run_client_scenario(node22, command, scenario, env, CONFORMANCE_NEXT_CLI)
    assert result.checks, f"{scenario}: the suite recorded no checks"
    assert result.passed, f"{scenario}: {result.failures}"


# What the suite's authorization server refuses, and the check it records for that refusal.
WIF_REFUSALS = {
    "wrong_audience": "wif-assertion-audience",
    "expired": "wif-assertion-expired",
    "wif.rejected": "wif-assertion-verified",  # a valid JWT, a scope refused: invalid_scope
    "wif.trigger-unauthorized": "wif-assertion-verified",  # unauthorized_client
}


@pytest.mark.parametrize("refusal", list(WIF_REFUSALS))
def test_a_refused_workload_grant_is_never_asked_again(node22: Path, refusal: str) -> None:
    """SEP-1933: a refused JWT-bearer grant is surfaced and followed by no token request of any kind
    (the suite flags a retry as ``wif-no-retry``, another grant as ``wif-grant-fallback``); the client
    sends two requests, both answered ``upstream_needs_authorization``."""
    if not CONFORMANCE_NEXT_CLI.exists():
        pytest.skip("the suite's 0.2 pre-release is not installed: run `make conformance-deps`")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "shared"), str(REPO)]),
           "FOLDGATE_WIF_REFUSAL": refusal}  # fmt: skip
    result = run_client_scenario(
        node22, [sys.executable, str(CLIENT)], "auth/wif-jwt-bearer", env, CONFORMANCE_NEXT_CLI
    )
    ids = [c["id"] for c in result.checks]
    assert ids.count(WIF_REFUSALS[refusal]) == 1, ids
    assert "wif-no-retry" not in ids, ids
    assert "wif-grant-fallback" not in ids, ids
