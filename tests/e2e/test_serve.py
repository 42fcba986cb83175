"""End to end: `foldgate serve` in its own process, real upstreams (npm and PyPI MCP servers, replay
upstreams), driven by the official mcp client over HTTP in both protocol eras."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client

from tests.procs import Replay, foldgate_serve, replay, stdio_fleet

pytestmark = pytest.mark.e2e


@dataclass
class Served:
    url: str
    config_path: Path
    config: dict[str, Any]
    crm: Replay

    def write_config(self, **changes: Any) -> None:
        """Rewrite the config file; the gateway applies it on a later request (no restart)."""
        self.config.update(changes)
        self.config_path.write_text(yaml.safe_dump(self.config))
        time.sleep(2.2)  # the file source re-checks the file every 2 s


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, everything_url: str) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("serve")
    with ExitStack() as stack:
        everything = everything_url
        crm = stack.enter_context(replay())
        config: dict[str, Any] = {
            "direct_tool_response_mode": "full",
            "servers": [
                {"name": "everything", "url": everything, "timeout_s": 10},
                *stdio_fleet(tmp / "scratch"),
                {"name": "crm", "url": crm.urls["crm"]},
                {"name": "tickets", "url": crm.urls["tickets"]},
            ],
        }
        base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "2", timeout=60))
        path = tmp / "foldgate.yaml"
        yield Served(f"{base}/mcp/all", path, config, crm)


async def listing(url: str, mode: str = "auto") -> dict[str, Any]:
    async with Client(url, mode=mode) as client:
        tools: dict[str, Any] = {}
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.update({t.name: t for t in page.tools})
            cursor = page.next_cursor
            if not cursor:
                return tools


async def call(url: str, name: str, args: dict[str, Any], mode: str = "auto") -> Any:
    async with Client(url, mode=mode) as client:
        return await client.call_tool(name, args)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_full_listing_of_the_real_fleet(served: Served, mode: str) -> None:
    tools = await listing(served.url, mode)
    expected = ("everything__echo", "filesystem__read_text_file", "memory__create_entities",
                "git__git_status", "time__get_current_time", "crm__create_contact",
                "describe_tool")  # fmt: skip
    for name in expected:
        assert name in tools, name
    assert tools["everything__echo"].input_schema["properties"]["message"]["type"] == "string"
    assert tools["everything__echo"].description.startswith("[everything] ")
    assert tools["everything__echo"].annotations is not None
    assert tools["everything__echo"].annotations.read_only_hint is True


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_valid_calls_reach_real_upstreams(served: Served, mode: str) -> None:
    echo = await call(served.url, "everything__echo", {"message": "hi foldgate"}, mode)
    assert not echo.is_error
    assert "hi foldgate" in echo.content[0].text
    now = await call(served.url, "time__get_current_time", {"timezone": "UTC"}, mode)
    assert not now.is_error
    assert "UTC" in now.content[0].text
    text = await call(served.url, "filesystem__read_text_file", {"path": "hello.txt"}, mode)
    assert "hello from foldgate" in text.content[0].text or text.is_error  # path policy is the server's
    status = await call(
        served.url, "git__git_status", {"repo_path": served.config["servers"][3]["command"][-1]}, mode
    )
    assert not status.is_error


async def test_invalid_call_is_answered_by_the_gateway_and_never_reaches_the_upstream(served: Served) -> None:
    served.crm.clear()
    bad = await call(served.url, "crm__create_contact", {"name": "Ada", "tags": ["vip"]})
    assert bad.is_error
    body = json.loads(bad.content[0].text)
    assert body["error_type"] == "invalid_params"
    assert body["input_schema"]["required"] == ["name", "email"]
    assert served.crm.calls() == []
    good = await call(served.url, "crm__create_contact", {"name": "Ada", "email": "ada@example.com"})
    assert not good.is_error
    assert [c["tool"] for c in served.crm.calls()] == ["create_contact"]
    bad_echo = await call(served.url, "everything__echo", {"message": 5})
    assert json.loads(bad_echo.content[0].text)["error_type"] == "invalid_params"


async def test_describe_tool_gives_the_real_schema(served: Served) -> None:
    async with Client(served.url) as client:
        result = await client.call_tool(
            "describe_tool", {"tool_ids": ["everything__echo", "git:git_log", "nope__x"]}
        )
    rows = json.loads(result.content[0].text)["tools"]
    assert rows[0]["input_schema"]["required"] == ["message"]
    assert rows[1]["id"] == "git__git_log"
    assert rows[2] == {"id": "nope__x", "error": "not_found"}


async def test_an_upstream_that_times_out_gets_a_timeout_error(served: Served) -> None:
    # Three times the server's timeout_s (10): the operation is still running whenever the timeout fires,
    # however late a loaded machine runs the timer (at 10 s against 10 the two raced).
    arguments = {"duration": 30, "steps": 3}
    slow = await call(served.url, "everything__trigger-long-running-operation", arguments)
    assert slow.is_error
    assert json.loads(slow.content[0].text)["error_type"] == "upstream_timeout"
    assert not (await call(served.url, "everything__echo", {"message": "still here"})).is_error


async def test_deferred_then_auto_listing_after_a_config_change(served: Served) -> None:
    served.write_config(direct_tool_response_mode="deferred")
    tools = await listing(served.url)
    echo = tools["everything__echo"]
    assert echo.input_schema == {"type": "object"}
    assert echo.description.endswith("\necho(message*:str)")
    assert tools["describe_tool"].input_schema["required"] == ["tool_ids"]
    served.write_config(direct_tool_response_mode="auto", defer_threshold=10)
    tools = await listing(served.url, "legacy")
    assert tools["everything__echo"].input_schema == {"type": "object"}  # 13 tools > 10: deferred
    assert "properties" in tools["time__get_current_time"].input_schema  # 2 tools: full
    served.write_config(direct_tool_response_mode="full")


async def test_a_dead_upstream_keeps_its_last_good_tools(served: Served) -> None:
    served.crm.stop()

    async def checked() -> list[dict[str, Any]]:
        async with Client(served.url) as client:
            check = await client.call_tool(
                "describe_tool", {"tool_ids": ["crm__find_contact"], "check": True}
            )
        found: list[dict[str, Any]] = json.loads(check.content[0].text)["tools"]
        return found

    # The next index runs (every 2 s) find the upstream dead; wait for that, not for a fixed time.
    deadline = time.monotonic() + 60
    while (found := await checked())[0].get("status") != "unavailable":
        assert time.monotonic() < deadline, f"crm still reported healthy: {found}"
        await asyncio.sleep(0.2)
    assert found == [{"id": "crm__find_contact", "status": "unavailable", "reason": "server_unhealthy"}]
    tools = await listing(served.url)
    assert "crm__find_contact" in tools
    failed = await call(served.url, "crm__find_contact", {"query": "x"})
    assert json.loads(failed.content[0].text)["error_type"] == "upstream_error"
