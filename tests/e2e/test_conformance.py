"""End to end: the official MCP conformance suite (server scenarios) against `/mcp/all`, on both paths.

Local: one `foldgate serve` with the demo fleet for every scenario. Lambda: functions/mcp/app.py behind
tests/lambda_http.py (each HTTP request becomes an API Gateway v2 event), over the same everything
server. One test per scenario and path. A scenario listed in tests/conformance/expected-failures*.txt
must fail (xfail, with the line's reason); when it starts passing the test fails until the line goes,
so a fix is never silent. Every other scenario must pass.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient
from tests.lambda_http import lambda_http
from tests.lambdas import load_function
from tests.node_clients import (
    CONFORMANCE_DIR,
    SuiteRun,
    expected_failures,
    list_server_scenarios,
    run_suite,
)

pytestmark = pytest.mark.e2e

LOCAL_FILE = CONFORMANCE_DIR / "expected-failures.txt"
LAMBDA_FILE = CONFORMANCE_DIR / "expected-failures-lambda.txt"
LOCAL_EXPECTED = expected_failures(LOCAL_FILE)
LAMBDA_EXPECTED = expected_failures(LAMBDA_FILE)
# Collected from the pinned suite itself, so a scenario added by an upgrade gets a test (and fails
# until it passes or is listed). Empty when the suite is not installed: one test then skips.
SCENARIOS = list_server_scenarios()
NOT_INSTALLED = [pytest.param("", marks=pytest.mark.skip(reason="the conformance suite is not installed"))]


@dataclass
class LambdaFront:
    """The McpFunction handler behind the v2 adapter: its /mcp/all URL and every invocation so far."""

    url: str
    invocations: list[dict[str, Any]]


@pytest.fixture(scope="module")
def lambda_front(everything_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LambdaFront]:
    """The McpFunction handler (SQLite store, file config, indexed first) behind the v2 adapter."""
    tmp = tmp_path_factory.mktemp("conformance-lambda")
    # HTTP upstreams only: a Lambda cannot spawn the stdio servers of the local fleet.
    doc: dict[str, Any] = {"servers": [{"name": "everything", "url": everything_url, "timeout_s": 10}]}
    (tmp / "foldgate.json").write_text(json.dumps(doc))
    store = SqliteStore(tmp / "store.sqlite3")
    report = asyncio.run(Indexer(store, UpstreamClient()).index_tenant("default", parse_tenant_config(doc)))
    store.close()
    assert report.changed, "indexing server-everything published nothing"
    env = {
        "FOLDGATE_STORE": "sqlite",
        "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
        "FOLDGATE_CONFIG_SOURCE": "file",
        "FOLDGATE_CONFIG_FILE": str(tmp / "foldgate.json"),
        # The adapter serves on loopback: name it as the deployment's public host, so Host and Origin
        # are checked as they are behind a custom domain.
        "FOLDGATE_PUBLIC_HOSTS": "localhost,127.0.0.1",
    }
    handler = load_function("mcp", "mcp_function_conformance", env).handler
    with lambda_http(handler) as (base, invocations):
        yield LambdaFront(f"{base}/mcp/all", invocations)


@pytest.fixture(scope="module")
def local_results(node22: Path, demo_gateway: str) -> SuiteRun:
    """Every scenario's checks against the local gateway (one suite run; the tests read their part)."""
    return run_suite(node22, demo_gateway)


@pytest.fixture(scope="module")
def lambda_results(node22: Path, lambda_front: LambdaFront) -> SuiteRun:
    """Every scenario's checks against the Lambda path."""
    return run_suite(node22, lambda_front.url)


def judge(run: SuiteRun, scenario: str, expected: dict[str, str], listing: Path) -> None:
    """Pass, or xfail with the listed reason; a listed scenario that passes fails (strict)."""
    result = run.results.get(scenario)
    if result is None:
        pytest.fail(f"the suite recorded no checks for {scenario}:\n{run.output[-3000:]}")
    reason = expected.get(result.scenario)
    if reason is None:
        if not result.passed:
            pytest.fail(f"{scenario} failed:\n" + "\n".join(result.failures), pytrace=False)
        return
    if result.passed:
        pytest.fail(
            f"{scenario} passes now: remove its line from {listing.name} (was: {reason})", pytrace=False
        )
    pytest.xfail(f"{reason} [{'; '.join(result.failures)[:300]}]")


@pytest.mark.parametrize("scenario", SCENARIOS or NOT_INSTALLED)
def test_local_scenario(local_results: SuiteRun, scenario: str) -> None:
    judge(local_results, scenario, LOCAL_EXPECTED, LOCAL_FILE)


@pytest.mark.parametrize("scenario", SCENARIOS or NOT_INSTALLED, ids=lambda s: f"lambda-{s}")
def test_lambda_scenario(lambda_results: SuiteRun, scenario: str) -> None:
    judge(lambda_results, scenario, LAMBDA_EXPECTED, LAMBDA_FILE)


@pytest.mark.parametrize("listing", [LOCAL_FILE, LAMBDA_FILE], ids=lambda p: p.name)
def test_expected_failures_name_scenarios_the_suite_has(listing: Path) -> None:
    # A stale line (a scenario renamed or dropped by a suite upgrade) would hide nothing and mislead.
    if not SCENARIOS:
        pytest.skip("the conformance suite is not installed")
    unknown = set(expected_failures(listing)) - set(SCENARIOS)
    assert not unknown, f"{listing.name} names scenarios the suite does not have: {sorted(unknown)}"


# Clients open a GET stream after initialize and may DELETE the session at the end; a stateless gateway
# answers both with 405 (the transport spec allows it), an Allow header and a JSON body, fast.


def method_answer(url: str, method: str) -> tuple[int | None, dict[str, str], bytes]:
    """Status, headers and body of a bare ``method`` request: status None when no headers came within
    3 s, body empty when it did not end within 3 s (an SSE stream that never sends)."""
    request = urllib.request.Request(
        url, method=method, headers={"Accept": "application/json, text/event-stream"}
    )
    try:
        response = urllib.request.urlopen(request, timeout=3)
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()
    except TimeoutError:
        return None, {}, b""
    with response:
        headers = {k.lower(): v for k, v in response.headers.items()}
        try:
            body = response.read()
        except (TimeoutError, http.client.HTTPException):
            body = b""
        return response.status, headers, body


def assert_405(answer: tuple[int | None, dict[str, str], bytes]) -> None:
    status, headers, body = answer
    assert status == 405, f"status {status}"
    assert "POST" in headers.get("allow", ""), headers
    assert json.loads(body)["error"]["code"] < 0


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_local_get_and_delete_answer_405(demo_gateway: str, method: str) -> None:
    assert_405(method_answer(demo_gateway, method))


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_lambda_get_and_delete_answer_405(lambda_front: LambdaFront, method: str) -> None:
    assert_405(method_answer(lambda_front.url, method))


def test_no_exception_escapes_the_lambda_handler_during_the_suite(
    lambda_results: SuiteRun, lambda_front: LambdaFront
) -> None:
    assert lambda_front.invocations, "the suite made no requests"
    escaped = [i for i in lambda_front.invocations if "error" in i]
    assert not escaped, f"{len(escaped)} invocations raised, e.g. {escaped[0]}"
