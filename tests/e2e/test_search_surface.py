"""End to end on the search surface: `foldgate serve` in its own process with a real npm server and a
replay upstream, driven by the official mcp client: search, call through the variant the hit names,
a wrong variant refused, and a long result read back with read_cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from mcp import Client

from tests.procs import foldgate_serve, replay

pytestmark = pytest.mark.e2e

VARIANTS = ("call_tool_read", "call_tool_write", "call_tool_destructive")


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, everything_url: str) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("search-serve")
    with ExitStack() as stack:
        everything = everything_url
        crm = stack.enter_context(replay())
        config = {
            "routing_mode": "retrieve_tools",
            "tool_response_limit": 1000,
            "servers": [
                {"name": "everything", "url": everything},
                {"name": "crm", "url": crm.urls["crm"]},
                {"name": "tickets", "url": crm.urls["tickets"]},
            ],
        }
        yield stack.enter_context(foldgate_serve(config, tmp)) + "/mcp"


def body(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_search_then_call_through_the_named_variant(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert listed == ["retrieve_tools", *VARIANTS, "describe_tool", "read_cache"]
        hits = body(await client.call_tool("retrieve_tools", {"query": "echo back a message"}))["tools"]
        echo = next(h for h in hits if h["name"] == "everything__echo")
        assert echo["signature"] == "echo(message*:str)"
        result = await client.call_tool(
            echo["call_with"], {"name": "everything__echo", "arguments": {"message": "hi"}}
        )
        assert not result.is_error
        assert "hi" in result.content[0].text  # type: ignore[union-attr]
        wrong = next(v for v in VARIANTS if v != echo["call_with"])
        refused = await client.call_tool(wrong, {"name": "everything__echo", "arguments": {"message": "hi"}})
        assert refused.is_error
        assert body(refused)["error_type"] == "wrong_variant"
        assert body(refused)["call_with"] == echo["call_with"]


async def test_a_long_result_is_read_back_with_read_cache(url: str) -> None:
    async with Client(url) as client:
        hits = body(await client.call_tool("retrieve_tools", {"query": "create contact"}))["tools"]
        create = next(h for h in hits if h["name"] == "crm__create_contact")
        query = "z" * 4000
        args = {"name": "crm__find_contact", "arguments": {"query": query}}
        assert create["call_with"] == "call_tool_write"
        cut = await client.call_tool("call_tool_read", args)
        text = cut.content[0].text  # type: ignore[union-attr]
        assert "read_cache" in text
        key = text.split('key "', 1)[1].split('"', 1)[0]
        parts, offset = [text.split("\n\n[foldgate:")[0]], 1000
        while offset is not None:
            page = body(await client.call_tool("read_cache", {"key": key, "offset": offset}))
            parts.append(page["text"])
            offset = page["next_offset"]
        assert json.loads("".join(parts))["arguments"] == {"query": query}
        forged = await client.call_tool("read_cache", {"key": key[:-2] + "xx"})
        assert forged.is_error
