"""The replay upstream served over real Streamable HTTP, driven by the official MCP client in both eras."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from foldgate.dev.replay import ReplayApp, build_replay_app, listening_socket, replay_slugs
from foldgate.errors import ConfigError
from tests.conftest import REPO, corpus_path

MODES = ["legacy", "auto"]
SLASHED = "deepnlp/A2A Bridge_2"
STRICT_OUT = {
    "type": "object",
    "properties": {"content": {"type": "string"}},
    "required": ["content"],
    "additionalProperties": False,
}


@contextmanager
def serving(app: ReplayApp) -> Iterator[str]:
    """Run the app with uvicorn on a free loopback port in a thread; yields the base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "replay server died on startup"
        assert time.monotonic() < deadline, "replay server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def http(method: str, url: str) -> tuple[int, bytes]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def write_catalog(tmp_path: Path) -> Path:
    rows: list[dict[str, Any]] = [
        {
            "server": SLASHED,
            "name": f"search_{i}",
            "title": f"Search {i}",
            "description": f"Search thing {i}.",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            "annotations": {"readOnlyHint": True, "title": f"Search {i}"},
            "_meta": {"example.com/rank": i},
        }
        for i in range(7)
    ]
    rows += [
        {
            "server": SLASHED,
            "name": "strict_out",
            "inputSchema": {"type": "object"},
            "outputSchema": STRICT_OUT,
        },
        {
            "server": SLASHED,
            "name": "loose_out",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object"},
        },
        # Listable (the SDK accepts it) but not a valid JSON Schema: validation fails open.
        {
            "server": SLASHED,
            "name": "uncompilable",
            "inputSchema": {"type": "object", "properties": {"a": {"type": 5}}},
        },
        # Unservable: no protocol version can list these, so the replay skips them at startup.
        {"server": "天气", "name": "type_five", "inputSchema": {"type": 5}},
        {"server": "天气", "name": "not_a_dict", "inputSchema": [1, 2]},
        {"server": "天气", "name": "ok", "description": "Weather.", "inputSchema": {"type": "object"}},
    ]
    path = tmp_path / "tools.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def replay(tmp_path: Path) -> Iterator[tuple[ReplayApp, dict[str, str], str]]:
    app, slugs = build_replay_app(write_catalog(tmp_path), page_size=3)
    with serving(app) as base:
        yield app, slugs, base


async def list_all(client: Client) -> tuple[list[Any], int]:
    tools: list[Any] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await client.list_tools(cursor=cursor)
        pages += 1
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            return tools, pages


def test_slugs_are_url_safe_deterministic_and_unique() -> None:
    slugs = replay_slugs([SLASHED, "DeepNLP A2A-Bridge_2", "天气", "雨", SLASHED, "deepnlp-a2a-bridge_2-2"])
    assert list(slugs) == [
        "deepnlp-a2a-bridge_2",
        "deepnlp-a2a-bridge_2-2",
        "server",
        "server-2",
        "deepnlp-a2a-bridge_2-2-2",
    ]
    assert slugs["deepnlp-a2a-bridge_2"] == SLASHED


def test_unservable_tools_are_skipped_and_reported(tmp_path: Path) -> None:
    app, slugs = build_replay_app(write_catalog(tmp_path))
    assert slugs == {"deepnlp-a2a-bridge_2": SLASHED, "server": "天气"}
    assert {(s.server, s.name) for s in app.skipped} == {("天气", "type_five"), ("天气", "not_a_dict")}
    assert all(s.reason for s in app.skipped)


def test_options_are_checked(tmp_path: Path) -> None:
    path = write_catalog(tmp_path)
    assert build_replay_app(path, server="天气")[1] == {"server": "天气"}
    assert build_replay_app(path, server="deepnlp-a2a-bridge_2")[1] == {"deepnlp-a2a-bridge_2": SLASHED}
    with pytest.raises(ConfigError):
        build_replay_app(path, server="nope")
    with pytest.raises(ConfigError):
        build_replay_app(path, page_size=0)


@pytest.mark.parametrize("mode", MODES)
async def test_lists_every_tool_faithfully_across_pages(
    replay: tuple[ReplayApp, dict[str, str], str], mode: str
) -> None:
    _, _, base = replay
    async with Client(f"{base}/deepnlp-a2a-bridge_2/mcp", mode=mode) as client:
        tools, pages = await list_all(client)
    assert pages == 4  # 10 tools, 3 per page
    by_name = {t.name: t for t in tools}
    assert len(by_name) == 10
    first = by_name["search_0"]
    assert first.title == "Search 0"
    assert first.description == "Search thing 0."
    assert first.input_schema["required"] == ["q"]
    assert first.annotations is not None
    assert first.annotations.read_only_hint is True
    assert first.meta == {"example.com/rank": 0}
    assert by_name["strict_out"].output_schema == STRICT_OUT
    async with Client(f"{base}/server/mcp", mode=mode) as client:
        tools, _ = await list_all(client)
    assert [t.name for t in tools] == ["ok"]


@pytest.mark.parametrize("mode", MODES)
async def test_calls_echo_validate_and_log(replay: tuple[ReplayApp, dict[str, str], str], mode: str) -> None:
    app, _, base = replay
    async with Client(f"{base}/deepnlp-a2a-bridge_2/mcp", mode=mode) as client:
        await list_all(client)
        ok = await client.call_tool("search_1", {"q": "cats"})
        bad = await client.call_tool("search_1", {"q": 3})
        unknown = await client.call_tool("nope", {})
        strict = await client.call_tool("strict_out", {"x": 1})
        loose = await client.call_tool("loose_out", {})
        fail_open = await client.call_tool("uncompilable", {"a": "anything"})

    echo = {"server": SLASHED, "tool": "search_1", "arguments": {"q": "cats"}}
    assert not ok.is_error
    assert ok.structured_content == echo
    assert json.loads(text_of(ok)) == echo
    assert bad.is_error
    assert text_of(bad).startswith("invalid arguments: ")
    assert unknown.is_error
    assert "unknown tool" in text_of(unknown)
    # A declared outputSchema gets conforming structured content (the client checks it); text keeps the echo.
    assert not strict.is_error
    assert strict.structured_content == {"content": ""}
    assert json.loads(text_of(strict))["arguments"] == {"x": 1}
    assert loose.structured_content == {"server": SLASHED, "tool": "loose_out", "arguments": {}}
    assert not fail_open.is_error

    outcomes = [(c["tool"], c["valid"], c["outcome"]) for c in app.calls]
    assert outcomes == [
        ("search_1", True, "echo"),
        ("search_1", False, "invalid_arguments"),
        ("nope", False, "unknown_tool"),
        ("strict_out", True, "echo"),
        ("loose_out", True, "echo"),
        ("uncompilable", True, "echo"),
    ]
    assert all(c["server"] == SLASHED for c in app.calls)

    status, body = http("GET", f"{base}/_calls")
    assert status == 200
    assert json.loads(body) == app.calls
    assert http("DELETE", f"{base}/_calls")[0] == 204
    assert app.calls == []
    assert json.loads(http("GET", f"{base}/_calls")[1]) == []


@pytest.mark.parametrize("mode", MODES)
async def test_bad_cursor_is_an_error(replay: tuple[ReplayApp, dict[str, str], str], mode: str) -> None:
    _, _, base = replay
    async with Client(f"{base}/deepnlp-a2a-bridge_2/mcp", mode=mode) as client:
        with pytest.raises(MCPError, match="invalid cursor"):
            await client.list_tools(cursor="bogus")


def test_health_and_unknown_server(replay: tuple[ReplayApp, dict[str, str], str]) -> None:
    _, _, base = replay
    assert http("GET", f"{base}/healthz")[0] == 200
    assert http("POST", f"{base}/no-such-server/mcp")[0] == 404


@pytest.mark.corpus
@pytest.mark.parametrize("mode", MODES)
async def test_real_corpus_lists_every_server(mode: str) -> None:
    app, slugs = build_replay_app(corpus_path("mcpproxy", "livemcptool_snapshot", "tools.json"))
    assert len(slugs) == 70
    total = 0
    with serving(app) as base:
        for slug in slugs:
            async with Client(f"{base}/{slug}/mcp", mode=mode) as client:
                tools, _ = await list_all(client)
            total += len(tools)
    assert total == 527 - len(app.skipped)


def test_run_replay_prints_urls_and_serves(tmp_path: Path) -> None:
    path = write_catalog(tmp_path)
    code = (
        "import sys; from foldgate.dev.replay import run_replay as r; r(sys.argv[1], port=0, server='天气')"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "shared"), "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode("utf-8").rstrip("\n")
        name, url = line.split("\t")
        assert name == "天气"
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/server/mcp")
        assert http("GET", url.removesuffix("/server/mcp") + "/healthz")[0] == 200
    finally:
        proc.terminate()
        proc.wait(10)


async def test_the_replay_servers_connections_send_without_nagles_delay() -> None:
    # A proto-0 listening socket left Nagle on for every connection asyncio accepted from it: a
    # keep-alive client then waited ~40 ms per answer for the delayed ACK of the answer's head.
    listener = listening_socket("127.0.0.1", 0)
    accepted: list[int] = []

    def opened(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.get_extra_info("socket")
        accepted.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(opened, sock=listener)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", listener.getsockname()[1])
        while not accepted:
            await asyncio.sleep(0.01)
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    assert accepted == [1]
