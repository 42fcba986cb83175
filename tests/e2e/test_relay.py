"""End to end: what an upstream sends back while a call runs reaches the client through
`foldgate serve`, with the official Python client, against a real upstream (the Python SDK's
MCPServer, tests/upstreams/relaying.py), one in each protocol era.

Pins:

* progress arrives in order, with the client's own progress token, and the upstream's log messages
  arrive too (named after the server), on the call's event stream;
* a handshake-era upstream's elicitation and sampling requests reach a client that declared them, on
  the stream, and the client's answers reach the upstream; so does a 2026-07-28 upstream's
  ``input_required`` (asked on the stream, the call sent again with the answers and its state);
* a 2026-07-28 upstream's ``input_required`` reaches a 2026-07-28 client as ``input_required`` with a
  requestState sealed by the gateway (not the upstream's), and the client's retry reaches the upstream
  with the answers and the upstream's own state;
* a client that declared no elicitation gets a tool error naming what the upstream asked, at once;
* on the Lambda path (the HTTP -> API Gateway v2 bridge, Mangum, which buffers) a call with a progress
  token still answers, its progress delivered in order with the answer, and a request for input is
  never sent on a stream there (no instance could route the reply): the clear error, at once.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError

from foldgate.config.tenant import parse_tenant_config
from foldgate.dev.procs import free_port, stop_process
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient
from tests.lambda_http import lambda_http
from tests.lambdas import load_function
from tests.node_clients import TS_CLIENT
from tests.procs import REPO, foldgate_serve

pytestmark = pytest.mark.e2e


@contextmanager
def relaying_upstream(tmp: Path, *, legacy: bool) -> Iterator[str]:
    """tests/upstreams/relaying.py in its own process; yields its /mcp URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "tests.upstreams.relaying", str(port), *(["--legacy"] if legacy else [])]
    with (tmp / f"upstream-{port}.log").open("w") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while True:
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        break
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the relaying upstream did not start")
                time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop_process(proc)


@dataclass
class Setup:
    url: str  # /mcp/all
    lambda_url: str  # /mcp/all of McpFunction's handler behind the API Gateway v2 bridge


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("relay")
    with ExitStack() as stack:
        legacy = stack.enter_context(relaying_upstream(tmp, legacy=True))
        modern = stack.enter_context(relaying_upstream(tmp, legacy=False))
        servers = [
            {"name": "old", "url": legacy, "timeout_s": 20},
            # Pinned: a 2025-era client's calls stay at 2026-07-28 (its input_required path); on "auto"
            # they would go at 2025, as to "both" (the same upstream, which accepts either).
            {"name": "new", "url": modern, "timeout_s": 20, "protocol": "2026-07-28"},
            {"name": "both", "url": modern, "timeout_s": 20},
        ]
        config = {"direct_tool_response_mode": "full", "servers": servers}
        base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "600"))
        yield Setup(base + "/mcp/all", stack.enter_context(lambda_front(tmp / "lambda", config)))


@contextmanager
def lambda_front(tmp: Path, config: dict[str, Any]) -> Iterator[str]:
    """McpFunction's handler (SQLite store, file config, indexed first) behind the v2 bridge."""
    tmp.mkdir()
    (tmp / "foldgate.json").write_text(json.dumps(config))
    store = SqliteStore(tmp / "store.sqlite3")
    asyncio.run(Indexer(store, UpstreamClient()).index_tenant("default", parse_tenant_config(config)))
    store.close()
    env = {
        "FOLDGATE_STORE": "sqlite",
        "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
        "FOLDGATE_CONFIG_SOURCE": "file",
        "FOLDGATE_CONFIG_FILE": str(tmp / "foldgate.json"),
    }
    handler = load_function("mcp", "mcp_function_relay", env).handler
    with lambda_http(handler) as (base, _):
        yield f"{base}/mcp/all"


def text_of(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_progress_arrives_in_order_with_the_clients_token(setup: Setup, mode: str) -> None:
    """Five progress notifications from each era's upstream reach the client's progress callback in
    order (the client's token: the SDK routes by it), and the upstream's logs reach its log callback."""
    seen: list[tuple[float, float | None, str | None]] = []
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async with Client(setup.url, mode=mode, logging_callback=on_log, log_level="info") as client:
        for server in ("old", "new"):
            seen.clear()
            logs.clear()
            result = await client.call_tool(f"{server}__count", {"steps": 5}, progress_callback=on_progress)
            assert text_of(result) == "counted 5"
            assert seen == [(float(i), 5.0, f"step {i}") for i in range(1, 6)]
            # A 2026-07-28 client asks for a level (log_level: logLevel in _meta) and the gateway
            # asks a 2026-07-28 upstream for it; a handshake-era upstream logs unasked.
            assert [p.data for p in logs] == [f"step {i} of 5" for i in range(1, 6)]
            assert {p.logger for p in logs} == {server}
            assert {p.level for p in logs} == {"info"}


async def test_an_elicitation_round_trips_on_the_stream(setup: Setup) -> None:
    """A handshake-era upstream's elicitation reaches a handshake-era client that declared it, and
    the user's answer reaches the upstream (which echoes it)."""
    asked: list[types.ElicitRequestParams] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"ok": True})

    async with Client(setup.url, mode="legacy", elicitation_callback=elicit) as client:
        result = await client.call_tool("old__confirm", {"question": "Deploy to production?"})
    assert not result.is_error, text_of(result)
    assert text_of(result) == "answer: accept ok=True"
    assert [p.message for p in asked] == ["Deploy to production?"]


async def test_a_sampling_request_round_trips_on_the_stream(setup: Setup) -> None:
    """A handshake-era upstream's sampling request reaches a client that declared sampling; the
    model's text reaches the upstream."""

    async def sample(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="forty-two"), model="test"
        )

    async with Client(setup.url, mode="legacy", sampling_callback=sample) as client:
        result = await client.call_tool("old__sample", {"prompt": "What is six times seven?"})
    assert text_of(result) == "model said: forty-two"


async def test_input_required_round_trips_with_a_sealed_state(setup: Setup) -> None:
    """A 2026-07-28 upstream's input_required reaches a 2026-07-28 client with the gateway's sealed
    requestState (never the upstream's), and the retry reaches the upstream with the answer and the
    upstream's own state."""
    asked: list[types.ElicitRequestParams] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"ok": False})

    async with Client(setup.url, elicitation_callback=elicit) as client:
        first = await client.session.call_tool(
            "new__confirm", {"question": "Delete it?"}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state is not None
        assert first.request_state.startswith("fg1.")
        assert "upstream-state" not in first.request_state
        # The client's own loop: it answers and retries (the gateway opens its state).
        result = await client.call_tool("new__confirm", {"question": "Delete it?"})
    assert text_of(result) == "answer: accept {'ok': False} state=upstream-state-1"
    assert [p.message for p in asked] == ["Delete it?"]


async def test_a_modern_upstreams_input_required_is_asked_on_a_handshake_era_clients_stream(
    setup: Setup,
) -> None:
    """A 2026-07-28 upstream's input_required reaches a handshake-era client that declared elicitation
    as a request on its stream (the upstream is stateless: nothing waits across requests); the answer
    and the upstream's own state reach the upstream on the call sent again, and its result the client."""
    asked: list[types.ElicitRequestParams] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"ok": True})

    async with Client(setup.url, mode="legacy", elicitation_callback=elicit) as client:
        result = await client.call_tool("new__confirm", {"question": "Rotate the keys?"})
    assert not result.is_error, text_of(result)
    assert text_of(result) == "answer: accept {'ok': True} state=upstream-state-1"
    assert [p.message for p in asked] == ["Rotate the keys?"]


async def test_on_auto_a_handshake_era_clients_call_reaches_an_upstream_of_both_eras_at_2025(
    setup: Setup,
) -> None:
    """The same upstream on ``protocol: auto``: a handshake-era client that declared elicitation has its
    call sent in a 2025 session, so the upstream asks with a server-to-client request (its answer has
    no requestState) and the client answers it on its stream."""
    asked: list[types.ElicitRequestParams] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"ok": True})

    async with Client(setup.url, mode="legacy", elicitation_callback=elicit) as client:
        result = await client.call_tool("both__confirm", {"question": "Rotate the keys?"})
    assert not result.is_error, text_of(result)
    assert text_of(result) == "answer: accept ok=True"
    assert [p.message for p in asked] == ["Rotate the keys?"]


@pytest.mark.parametrize(("mode", "tool"), [("legacy", "old__confirm"), ("auto", "new__confirm")])
async def test_a_client_without_elicitation_gets_a_clear_error_at_once(
    setup: Setup, mode: str, tool: str
) -> None:
    """A client that declared no elicitation gets a tool error naming what the upstream asked for,
    in well under the server's 20 s timeout (the upstream was refused at once, nothing hung)."""
    started = time.monotonic()
    async with Client(setup.url, mode=mode) as client:
        result = await client.call_tool(tool, {"question": "Deploy to production?"})
    assert time.monotonic() - started < 10
    assert result.is_error
    text = text_of(result)
    assert "upstream_input_required" in text
    assert "elicitation/create" in text
    assert "Deploy to production?" in text


async def test_a_call_that_relays_nothing_is_answered_as_json(setup: Setup) -> None:
    """The stream starts only with the first thing relayed: a call that reports nothing is one JSON
    body, with or without a progress token; a 2025-era client (no per-request log level) hears the
    upstream's logs, so a call that logs is a stream of them, in order, then the result."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with httpx2.AsyncClient() as http:
        for meta in ({}, {"_meta": {"progressToken": "p"}}):
            params = {"name": "old__count", "arguments": {"steps": 0}, **meta}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            response = await http.post(setup.url, json=body, headers=headers)
            assert response.headers["content-type"].startswith("application/json")
            assert response.json()["result"]["content"][0]["text"] == "counted 0"
        params = {"name": "old__count", "arguments": {"steps": 2}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        response = await http.post(setup.url, json=body, headers=headers)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    logs = [e["params"]["data"] for e in events if e.get("method") == "notifications/message"]
    assert [str(x) for x in logs] == ["step 1 of 2", "step 2 of 2"]
    assert events[-1]["result"]["content"][0]["text"] == "counted 2"
    assert not any(e.get("method") == "notifications/progress" for e in events)


async def test_a_prompts_input_required_round_trips_with_a_sealed_state(setup: Setup) -> None:
    """prompts/get from a 2026-07-28 upstream that answers input_required (which the gateway used to
    blame on the client with -32602) reaches the client sealed, and its retry reaches the upstream."""
    asked: list[types.ElicitRequestParams] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"ok": True})

    async with Client(setup.url, elicitation_callback=elicit) as client:
        prompt = await client.get_prompt("new__briefing", {"topic": "rates"})
    message = prompt.messages[0].content
    assert isinstance(message, types.TextContent)
    assert message.text == "Brief on rates for {'ok': True} state=upstream-state-1."
    assert [p.message for p in asked] == ["Who is the briefing for?"]


async def test_a_prompts_input_required_without_the_capability_names_what_was_asked(setup: Setup) -> None:
    async with Client(setup.url) as client:
        with pytest.raises(MCPError, match=r"elicitation/create.*Who is the briefing for"):
            await client.get_prompt("new__briefing", {"topic": "rates"})


async def test_on_the_lambda_path_a_call_with_progress_still_answers(setup: Setup) -> None:
    """API Gateway buffers: the progress arrives with the answer, still in order, and the call answers."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(setup.lambda_url, mode="legacy") as client:
        result = await client.call_tool("old__count", {"steps": 3}, progress_callback=on_progress)
    assert text_of(result) == "counted 3"
    assert seen == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("tool", ["old__confirm", "new__confirm"])
async def test_on_the_lambda_path_a_request_for_input_is_the_clear_error(setup: Setup, tool: str) -> None:
    """Even for a client that declared elicitation, from either era's upstream: no instance could
    route its reply back."""

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("never asked on the Lambda path")

    started = time.monotonic()
    async with Client(setup.lambda_url, mode="legacy", elicitation_callback=elicit) as client:
        result = await client.call_tool(tool, {"question": "Deploy?"})
    assert time.monotonic() - started < 10
    assert result.is_error
    assert "upstream_input_required" in text_of(result)


def test_progress_arrives_in_order_with_the_typescript_client(setup: Setup, node22: Path) -> None:
    """The TypeScript SDK client's onprogress hears each progress of both eras' upstreams, in order."""
    calls = [
        {"name": f"{server}__count", "arguments": {"steps": 4}, "progress": True} for server in ("old", "new")
    ]
    proc = subprocess.run(
        [str(node22), str(TS_CLIENT), setup.url],
        input=json.dumps(calls), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    answers = [line for line in lines if "tool" in line]
    assert [a["ok"] for a in answers] == [True, True], answers
    for answer in answers:
        assert answer["result"]["content"][0]["text"] == "counted 4"
        assert [(p["progress"], p["total"], p["message"]) for p in answer["progress"]] == [
            (i, 4, f"step {i}") for i in range(1, 5)
        ]
