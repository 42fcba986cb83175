"""End to end: the official MCP conformance suite's server scenarios run THROUGH foldgate, on both paths.

Upstream of foldgate is foldgate's own reference server for the suite (tests/conformance/servers/
reference_server.ts, written from the scenarios' checks and the spec: the suite repository's
"everything" server is not published), published ``bare`` so its tools, prompts and resources keep the
names the scenarios use. Each suite version (the pinned 0.1.16 and the
newest 0.2 pre-release) runs three times: against the reference server directly, through
``foldgate serve`` (/mcp/all) and through the Lambda path (functions/mcp/app.py behind
tests/lambda_http.py, each HTTP request an API Gateway v2 event). One test per scenario and path:

- a scenario the reference server fails directly is skipped (nothing to carry), with its failures;
- every other scenario must pass through foldgate, unless it is listed in that path's
  tests/conformance/expected-failures*.txt with the reason it cannot be carried (xfail, strict: when it
  starts passing the test fails until the line goes, so a fix is never silent).

A pass that rests on foldgate's own ``unknown tool`` error does not count: no check may have seen one.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    CONFORMANCE_CLI,
    CONFORMANCE_DIR,
    CONFORMANCE_NEXT_CLI,
    SuiteRun,
    expected_failures,
    list_server_scenarios,
    reference_server,
    run_suite,
)
from tests.procs import foldgate_serve

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Suite:
    """One suite version: its CLI, the reference server run against it, and the expected-failure
    listings of the two paths."""

    name: str
    cli: Path
    server: Path
    local: Path
    lambda_: Path

    @property
    def scenarios(self) -> list[str]:
        """The suite's server scenarios, or none when the suite or its reference server is absent."""
        return list_server_scenarios(self.cli) if self.server.exists() else []


# One reference server implements the scenarios of both suite versions.
REFERENCE_SERVER = CONFORMANCE_DIR / "servers" / "reference_server.ts"
SUITES = {
    "0.1": Suite(
        "0.1.16",
        CONFORMANCE_CLI,
        REFERENCE_SERVER,
        CONFORMANCE_DIR / "expected-failures.txt",
        CONFORMANCE_DIR / "expected-failures-lambda.txt",
    ),
    "0.2": Suite(
        "0.2.0-alpha.12",
        CONFORMANCE_NEXT_CLI,
        REFERENCE_SERVER,
        CONFORMANCE_DIR / "expected-failures-0.2.txt",
        CONFORMANCE_DIR / "expected-failures-lambda-0.2.txt",
    ),
}
PATHS = ("local", "lambda")
NOT_INSTALLED = [
    pytest.param("", "", marks=pytest.mark.skip(reason="the conformance suite is not installed"))
]


def cases(suite: Suite) -> list[Any]:
    """(path, scenario) pairs, collected from the suite itself, so a scenario added by an upgrade gets
    a test (and fails until it passes or is listed)."""
    scenarios = suite.scenarios
    if not scenarios:
        return NOT_INSTALLED
    return [pytest.param(path, s, id=f"{path}-{s}") for path in PATHS for s in scenarios]


def bare_config(url: str) -> dict[str, Any]:
    """One upstream, published bare. tool_loading eager: the scenarios read each tool's whole
    inputSchema from tools/list (json-schema-2020-12), which the default auto mode may defer."""
    server = {"name": "conformance", "url": url, "publish": "bare", "tool_loading": "eager", "timeout_s": 10}
    return {"servers": [server]}


@dataclass
class Fronts:
    """For one suite: the reference server and foldgate's two paths in front of it, and each one's
    suite run (made once, on first use)."""

    node: Path
    suite: Suite
    tmp: Path
    stack: contextlib.ExitStack
    urls: dict[str, str] = field(default_factory=dict)
    invocations: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, SuiteRun] = field(default_factory=dict)

    def url(self, path: str) -> str:
        """The /mcp URL of ``direct`` (the reference server), ``local`` or ``lambda``."""
        if "direct" not in self.urls:
            self.urls["direct"] = self.stack.enter_context(reference_server(self.node, self.suite.server))
        if path not in self.urls:
            self.urls[path] = self._local() if path == "local" else self._lambda()
        return self.urls[path]

    def run(self, path: str) -> SuiteRun:
        """The suite's run on ``path`` (one suite process for every scenario)."""
        if path not in self.runs:
            self.runs[path] = run_suite(self.node, self.url(path), self.suite.cli)
        return self.runs[path]

    def _local(self) -> str:
        config = bare_config(self.url("direct"))
        base = self.stack.enter_context(foldgate_serve(config, self.tmp / "local", "--interval", "600"))
        return f"{base}/mcp/all"

    def _lambda(self) -> str:
        tmp = self.tmp / "lambda"
        tmp.mkdir()
        doc = bare_config(self.url("direct"))
        (tmp / "foldgate.json").write_text(json.dumps(doc))
        store = SqliteStore(tmp / "store.sqlite3")
        indexer = Indexer(store, UpstreamClient())
        report = asyncio.run(indexer.index_tenant("default", parse_tenant_config(doc)))
        store.close()
        assert report.changed, f"indexing the reference server published nothing: {report.servers}"
        env = {
            "FOLDGATE_STORE": "sqlite",
            "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
            "FOLDGATE_CONFIG_SOURCE": "file",
            "FOLDGATE_CONFIG_FILE": str(tmp / "foldgate.json"),
            # The adapter serves on loopback: name it as the deployment's public host, so Host and
            # Origin are checked as they are behind a custom domain.
            "FOLDGATE_PUBLIC_HOSTS": "localhost,127.0.0.1",
        }
        module = f"mcp_function_conformance_{self.suite.name.replace('.', '_').replace('-', '_')}"
        handler = load_function("mcp", module, env).handler
        base, self.invocations = self.stack.enter_context(lambda_http(handler))
        return f"{base}/mcp/all"


@contextlib.contextmanager
def fronts(node: Path, suite: Suite, tmp: Path) -> Iterator[Fronts]:
    with contextlib.ExitStack() as stack:
        yield Fronts(node, suite, tmp, stack)


# Module-scoped, one per suite: the 0.1 tests run first (file order), then its servers stop.
@pytest.fixture(scope="module")
def suite_01(node22: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fronts]:
    with fronts(node22, SUITES["0.1"], tmp_path_factory.mktemp("conformance-0.1")) as f:
        yield f


@pytest.fixture(scope="module")
def suite_02(node22: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fronts]:
    with fronts(node22, SUITES["0.2"], tmp_path_factory.mktemp("conformance-0.2")) as f:
        yield f


def judge(front: Fronts, path: str, scenario: str) -> None:
    """Skip what the reference server fails itself; otherwise pass, or xfail with the listed reason (a
    listed scenario that passes fails: strict)."""
    direct = front.run("direct").results.get(scenario)
    if direct is None:
        pytest.fail(
            f"the suite recorded no checks for {scenario} directly:\n{front.run('direct').output[-3000:]}"
        )
    if not direct.passed:
        pytest.skip(f"the reference server fails {scenario} itself: {'; '.join(direct.failures)[:300]}")
    listing = front.suite.local if path == "local" else front.suite.lambda_
    run = front.run(path)
    result = run.results.get(scenario)
    if result is None:
        pytest.fail(f"the suite recorded no checks for {scenario} through foldgate:\n{run.output[-3000:]}")
    reason = expected_failures(listing).get(scenario)
    if reason is None:
        if not result.passed:
            pytest.fail(f"{scenario} failed through foldgate:\n" + "\n".join(result.failures), pytrace=False)
        return
    if result.passed:
        pytest.fail(
            f"{scenario} passes now: remove its line from {listing.name} (was: {reason})", pytrace=False
        )
    pytest.xfail(f"{reason} [{'; '.join(result.failures)[:300]}]")


@pytest.mark.parametrize(("path", "scenario"), cases(SUITES["0.1"]))
def test_suite_01_scenario(suite_01: Fronts, path: str, scenario: str) -> None:
    judge(suite_01, path, scenario)


@pytest.mark.parametrize("path", PATHS)
def test_suite_01_no_pass_rests_on_foldgates_unknown_tool(suite_01: Fronts, path: str) -> None:
    assert_no_unknown_tool(suite_01.run(path))


def test_suite_01_no_exception_escapes_the_lambda_handler(suite_01: Fronts) -> None:
    assert_no_escape(suite_01)


# Clients open a GET stream after initialize and may DELETE the session at the end; a stateless gateway
# answers both with 405 (the transport spec allows it), an Allow header and a JSON body, fast.


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_answer_405(suite_01: Fronts, path: str, method: str) -> None:
    status, headers, body = method_answer(suite_01.url(path), method)
    assert status == 405, f"status {status}"
    assert "POST" in headers.get("allow", ""), headers
    assert json.loads(body)["error"]["code"] < 0


@pytest.mark.parametrize(("path", "scenario"), cases(SUITES["0.2"]))
def test_suite_02_scenario(suite_02: Fronts, path: str, scenario: str) -> None:
    judge(suite_02, path, scenario)


@pytest.mark.parametrize("path", PATHS)
def test_suite_02_no_pass_rests_on_foldgates_unknown_tool(suite_02: Fronts, path: str) -> None:
    assert_no_unknown_tool(suite_02.run(path))


def test_suite_02_no_exception_escapes_the_lambda_handler(suite_02: Fronts) -> None:
    assert_no_escape(suite_02)


@pytest.mark.parametrize("path", PATHS)
def test_a_header_argument_reaches_the_upstream_in_its_mcp_param_header(suite_02: Fronts, path: str) -> None:
    """SEP-2243 upstream: the reference server refuses a call to test_header_param whose Mcp-Param-Region
    is missing or differs (-32020); through foldgate the call runs, with a value that needs Base64."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    region = "zürich eu"
    params = {"name": "test_header_param", "arguments": {"region": region}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "test_header_param",
        "Mcp-Param-Region": "=?base64?esO8cmljaCBldQ==?=",
    }
    request = urllib.request.Request(suite_02.url(path), data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = json.loads(response.read())
    result = answer["result"]
    assert result.get("isError") is not True, result
    assert region in json.dumps(result, ensure_ascii=False), result


@pytest.mark.parametrize("suite", SUITES.values(), ids=lambda s: s.name)
@pytest.mark.parametrize("path", PATHS)
def test_expected_failures_name_scenarios_the_suite_has(suite: Suite, path: str) -> None:
    # A stale line (a scenario renamed or dropped by a suite upgrade) would hide nothing and mislead.
    scenarios = suite.scenarios
    if not scenarios:
        pytest.skip("the conformance suite is not installed")
    listing = suite.local if path == "local" else suite.lambda_
    unknown = set(expected_failures(listing)) - set(scenarios)
    assert not unknown, f"{listing.name} names scenarios the suite does not have: {sorted(unknown)}"


def assert_no_unknown_tool(run: SuiteRun) -> None:
    """No passing scenario saw foldgate's own not-found for a tool: every tool a scenario that passes
    named was carried (one the reference server lacks too fails either way)."""
    seen = [
        name
        for name, result in run.results.items()
        if result.passed and "unknown tool" in json.dumps(result.checks)
    ]
    assert not seen, f"scenarios that met foldgate's 'unknown tool': {seen}"


def assert_no_escape(front: Fronts) -> None:
    front.run("lambda")
    assert front.invocations, "the suite made no requests"
    escaped = [i for i in front.invocations if "error" in i]
    assert not escaped, f"{len(escaped)} invocations raised, e.g. {escaped[0]}"


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
