"""Answers before the Lambda deadline (issue 24, item 10): the MCP and code functions, driven by real
API Gateway v2 events with a Lambda context that has little time left, against an upstream that hangs.

The upstream is the replay server behind a loopback proxy that holds every ``tools/call`` (it never
answers). The server's own ``timeout_s`` is longer than the invocation has left, so only the deadline
read from the Lambda context can end the wait in time: the agent gets the ``upstream_timeout`` tool
error (with the bound and what to do) as a 200, before the invocation would have been killed and API
Gateway answered 503.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.dev.bench.wire_proxy import WireProxy, wire_proxy
from foldgate.index.indexer import Indexer
from foldgate.model.deadline import ANSWER_MARGIN_S
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient
from tests.helpers import error_of
from tests.lambdas import LambdaContext, event, load_function
from tests.procs import Replay, replay

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

# The invocation has this long left when the request arrives; the server would wait far longer.
REMAINING_MS = 3_500
SERVER_TIMEOUT_S = 8.0


class ShortContext(LambdaContext):
    """A Lambda context whose invocation ends ``REMAINING_MS`` after it was made."""

    def __init__(self, remaining_ms: int = REMAINING_MS) -> None:
        self._ends = time.monotonic() + remaining_ms / 1000

    def get_remaining_time_in_millis(self) -> int:  # type: ignore[override]
        return max(0, int((self._ends - time.monotonic()) * 1000))


def _index(tmp: Path, doc: dict[str, Any]) -> dict[str, str]:
    (tmp / "foldgate.json").write_text(json.dumps(doc))
    store = SqliteStore(tmp / "store.sqlite3")
    report = asyncio.run(Indexer(store, UpstreamClient()).index_tenant("default", parse_tenant_config(doc)))
    assert report.changed, report.error
    store.close()
    return {
        "FOLDGATE_STORE": "sqlite",
        "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
        "FOLDGATE_CONFIG_SOURCE": "file",
        "FOLDGATE_CONFIG_FILE": str(tmp / "foldgate.json"),
    }


@pytest.fixture(scope="module")
def rp() -> Iterator[Replay]:
    with replay() as running:
        yield running


@pytest.fixture
def hanging(rp: Replay, tmp_path: Path) -> Iterator[tuple[WireProxy, dict[str, str]]]:
    """A proxy in front of the replay upstream (``crm``), and the environment of functions serving it
    (a proxy per test: once released, a proxy holds nothing again)."""
    parts = urlsplit(rp.urls["crm"])
    assert parts.hostname is not None
    assert parts.port is not None
    with wire_proxy(parts.hostname, parts.port) as proxy:
        crm = {"name": "crm", "url": proxy.url(parts.path), "timeout_s": SERVER_TIMEOUT_S}
        yield proxy, _index(tmp_path, {"servers": [crm], "code_execution": {"timeout_ms": 25_000}})


def invoke(handler: Handler, data: dict[str, Any], context: Any) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    response = handler(data, context)
    elapsed = time.monotonic() - started
    return int(response["statusCode"]), json.loads(response["body"]), elapsed


def call_event(path: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": name, "arguments": arguments}
    })  # fmt: skip
    data = event("mcp_tools_call.json", rawPath=path, routeKey=f"POST {path}", body=body)
    data["headers"] = {**data["headers"], "content-length": str(len(body))}
    data["requestContext"] = {**data["requestContext"], "routeKey": f"POST {path}"}
    data["requestContext"]["http"] = {**data["requestContext"]["http"], "path": path}
    return data


def test_a_hanging_upstream_is_a_tool_error_before_the_mcp_functions_deadline(
    hanging: tuple[WireProxy, dict[str, str]],
) -> None:
    proxy, env = hanging
    handler = load_function("mcp", "mcp_deadline_app", env).handler
    # Warm: the session is open, so the held request is the call itself.
    status, body, _ = invoke(handler, event("mcp_tools_call.json"), LambdaContext())
    assert status == 200
    assert body["result"]["isError"] is False
    proxy.hold.add("tools/call")
    try:
        status, body, elapsed = invoke(handler, event("mcp_tools_call.json"), ShortContext())
    finally:
        proxy.release()
    assert status == 200
    err = error_of(body["result"])
    assert err["error_type"] == "upstream_timeout"
    assert err["tool"] == "crm__find_contact"
    # The bound is what the invocation had left less the margin, not the server's timeout_s.
    expected = REMAINING_MS / 1000 - ANSWER_MARGIN_S
    assert expected - 0.3 <= err["timeout_s"] <= expected
    assert "time limit" in err["hint"]
    assert "retry" in err["hint"].lower()
    # Answered before the invocation ran out, with time to spare for the answer's way back.
    assert elapsed < REMAINING_MS / 1000 - 1.0
    # The pooled session is still usable by the next request.
    status, body, _ = invoke(handler, event("mcp_tools_call.json"), LambdaContext())
    assert status == 200
    assert body["result"]["isError"] is False


def test_a_code_run_is_cut_before_the_code_functions_deadline(
    hanging: tuple[WireProxy, dict[str, str]],
) -> None:
    proxy, env = hanging
    handler = load_function("code", "code_deadline_app", env).handler
    code = 'return await call_tool("crm", "find_contact", {query: "ada"});'
    data = call_event("/mcp/code", "code_execution", {"code": code})
    status, body, _ = invoke(handler, data, LambdaContext())
    assert status == 200
    assert body["result"]["isError"] is False, body
    proxy.hold.add("tools/call")
    try:
        status, body, elapsed = invoke(handler, data, ShortContext())
    finally:
        proxy.release()
    assert status == 200
    err = error_of(body["result"])
    assert err["error_type"] == "timeout"
    assert err["timeout_ms"] <= REMAINING_MS - ANSWER_MARGIN_S * 1000
    assert "time limit" in err["hint"]
    assert elapsed < REMAINING_MS / 1000 - 0.5


def test_without_a_short_deadline_the_servers_timeout_applies(
    hanging: tuple[WireProxy, dict[str, str]],
) -> None:
    """A Lambda context with plenty of time left changes nothing: a server timeout shorter than the
    time left still ends the wait, reported with the server's own bound and hint."""
    proxy, env = hanging
    doc = json.loads(Path(env["FOLDGATE_CONFIG_FILE"]).read_text())
    doc["servers"][0]["timeout_s"] = 0.5
    Path(env["FOLDGATE_CONFIG_FILE"]).write_text(json.dumps(doc))
    handler = load_function("mcp", "mcp_deadline_plenty_app", env).handler
    _, body, _ = invoke(handler, event("mcp_tools_call.json"), LambdaContext())
    assert body["result"]["isError"] is False
    proxy.hold.add("tools/call")
    try:
        _, body, _ = invoke(handler, event("mcp_tools_call.json"), LambdaContext())
    finally:
        proxy.release()
    err = error_of(body["result"])
    assert err["error_type"] == "upstream_timeout"
    assert err["timeout_s"] == 0.5
    assert "timeout_s" in err["hint"]
