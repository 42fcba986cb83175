"""Browsing without a query (issue 28 item 7): ``retrieve_tools`` with no query, or ``browse: true``,
pages through the caller's visible tools grouped by server (config order, then listing order), each
server once per page with a summary, tools as compact hits; a cursor continues, ``server`` opens one
server, the tier filters apply, hidden tools never appear."""

from __future__ import annotations

from typing import Any

from foldgate.index.indexer import catalog_from_tools
from foldgate.model.tool import tool_from_wire
from foldgate.serve.browse import browse_answer
from foldgate.serve.surfaces.call import page_entries, retrieve_tool
from tests.gateway_fixture import demo_config, gateway_client
from tests.unit.serve.surfaces.test_call import answer, call


def listed(page: dict[str, Any]) -> list[tuple[str, str]]:
    """(server, name) of every tool on a page, signed hits and tail lines alike, in page order."""
    out = []
    for group in page["servers"]:
        out += [(group["server"], hit["name"]) for hit in group.get("tools", [])]
        out += [(group["server"], line.split(" ", 1)[0]) for line in group.get("more", [])]
    return out


async def test_an_empty_query_pages_through_every_tool_grouped_by_server() -> None:
    async with gateway_client() as (client, *_):
        pages, cursor = [], None
        while True:
            args: dict[str, Any] = {"limit": 2} if cursor is None else {"limit": 2, "cursor": cursor}
            page = answer(await call(client, "retrieve_tools", args))
            pages.append(page)
            cursor = page.get("next_cursor")
            if cursor is None:
                break
        assert [[g["server"] for g in p["servers"]] for p in pages] == [
            ["crm"],
            ["crm", "tickets"],
            ["tickets"],
        ]
        seen = [pair for p in pages for pair in listed(p)]
        assert seen == [
            ("crm", "crm__find_contact"),
            ("crm", "crm__create_contact"),
            ("crm", "crm__delete_contact"),
            ("tickets", "tickets__list_tickets"),
            ("tickets", "tickets__update_ticket"),
        ]
        first = pages[0]["servers"][0]
        assert (
            first["summary"]
            == "3 tools (1 read, 1 write, 1 destructive): find_contact, create_contact, delete_contact"
        )
        assert set(first["tools"][0]) == {"name", "call_with", "signature", "description"}
        # The same request gives the same page: nothing depends on timing or hashing.
        again = answer(await call(client, "retrieve_tools", {"limit": 2, "query": "  "}))
        assert again == pages[0]


async def test_browse_true_ignores_the_query_and_server_opens_one_server() -> None:
    async with gateway_client() as (client, *_):
        page = answer(
            await call(client, "retrieve_tools", {"query": "contact", "browse": True, "server": "tickets"})
        )
        assert listed(page) == [("tickets", "tickets__list_tickets"), ("tickets", "tickets__update_ticket")]
        assert "next_cursor" not in page
        ghost = answer(await call(client, "retrieve_tools", {"server": "ghost"}))
        assert ghost["servers"] == []
        assert "hint" in ghost


async def test_browsing_applies_the_tier_filters_and_hides_what_the_caller_cannot_see() -> None:
    servers = [
        {"name": "crm", "url": "http://127.0.0.1:9/crm/mcp", "tools": {"find_contact": {"enabled": False}}},
        {"name": "tickets", "url": "http://127.0.0.1:9/tickets/mcp"},
    ]
    async with gateway_client(demo_config(servers=servers)) as (client, *_):
        page = answer(await call(client, "retrieve_tools", {"exclude_destructive": True}))
        assert listed(page) == [("crm", "crm__create_contact"), ("tickets", "tickets__list_tickets")]
        assert page["servers"][0]["summary"].startswith("1 tool (1 write)")


def test_a_page_signs_its_first_hits_and_puts_the_rest_on_one_line_each() -> None:
    tools = [
        tool_from_wire(
            f"s{i % 2}", {"name": f"t{i:02d}", "description": f"Tool {i}.", "inputSchema": {"type": "object"}}
        )
        for i in range(30)
    ]
    catalog = catalog_from_tools("t", tools)
    page = browse_answer(
        catalog.tools,
        ["s1", "s0"],
        lambda t: t.tier,
        lambda p: page_entries(p, lambda t: t.tier, full=False),
        offset=0,
        limit=25,
    )
    assert [g["server"] for g in page["servers"]] == ["s1", "s0"]  # the config's order, not the listing's
    assert len(page["servers"][0]["tools"]) == 10  # signed head: as many as a search answer signs
    assert len(page["servers"][0]["more"]) == 5
    assert "tools" not in page["servers"][1]
    assert len(page["servers"][1]["more"]) == 10
    assert page["next_cursor"] == "b25"


def test_the_meta_tool_schema_offers_browsing() -> None:
    schema = retrieve_tool(50)["inputSchema"]
    assert "required" not in schema
    assert {"browse", "server", "cursor"} <= set(schema["properties"])
