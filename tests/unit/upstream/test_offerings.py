"""Listing an upstream's prompts, resources and templates: only the capabilities it declared, every
page followed, hostile entries skipped with a reason, endless pagination refused."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamError
from foldgate.upstream.offerings import list_offerings_on

SERVER = ServerConfig(name="a", url="http://127.0.0.1:9/mcp")


class FakeSession:
    """Answers list requests from canned pages: method -> list of pages (cursor i -> page i)."""

    def __init__(self, pages: dict[str, list[dict[str, Any]]], **caps: Any) -> None:
        self.pages = pages
        self.server_capabilities = SimpleNamespace(
            prompts=caps.get("prompts"), resources=caps.get("resources")
        )
        self.sent: list[tuple[str, str | None]] = []

    async def send_request(self, request: Any, result_type: Any) -> dict[str, Any]:
        cursor = request.params.cursor if request.params is not None else None
        self.sent.append((request.method, cursor))
        return self.pages[request.method][int(cursor or 0)]


async def test_only_declared_capabilities_are_listed_across_pages() -> None:
    session = FakeSession(
        {
            "prompts/list": [
                {"prompts": [{"name": "p1"}, {"name": 5}, "junk"], "nextCursor": "1"},
                {"prompts": [{"name": "p2", "arguments": [{"name": "x"}]}]},
            ]
        },
        prompts={},
    )
    out = await list_offerings_on(SERVER, session)
    assert [p["name"] for p in out.items["prompt"]] == ["p1", "p2"]
    assert [s[0] for s in out.skipped] == ["prompt 5", "prompt ?"]
    assert session.sent == [("prompts/list", None), ("prompts/list", "1")]  # no resources capability


async def test_resources_and_templates_come_with_the_resources_capability() -> None:
    session = FakeSession(
        {
            "resources/list": [
                {"resources": [{"uri": "u://1", "name": "one"}, {"uri": "", "name": "empty"}]}
            ],
            "resources/templates/list": [{"resourceTemplates": [{"uriTemplate": "u://{id}", "name": "t"}]}],
        },
        resources={},
    )
    out = await list_offerings_on(SERVER, session)
    assert out.items["resource"] == [{"uri": "u://1", "name": "one"}]
    assert out.items["template"] == [{"uriTemplate": "u://{id}", "name": "t"}]
    assert "prompt" not in out.items


async def test_a_repeated_cursor_or_a_missing_array_fails_the_listing() -> None:
    looping = FakeSession({"prompts/list": [{"prompts": [], "nextCursor": "0"}]}, prompts={})
    with pytest.raises(UpstreamError, match="repeats a cursor"):
        await list_offerings_on(SERVER, looping)
    with pytest.raises(UpstreamError, match="no prompts array"):
        await list_offerings_on(SERVER, FakeSession({"prompts/list": [{"nope": []}]}, prompts={}))
