"""The search surface (/mcp/call): constant listing, retrieve_tools over visible tools only, the
intent-split call variants, and read_cache for results cut at the tenant's limit."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from foldgate.index.indexer import catalog_from_tools
from foldgate.model.catalog import IndexedTool
from foldgate.model.token_count import get_counter
from foldgate.model.tool import tool_from_wire
from foldgate.serve.surfaces.call import (
    call_surface_listing,
    hit_entry,
    needs_describe,
    page_entries,
    tail_line,
)
from tests.gateway_fixture import demo_config, demo_tools, gateway_client
from tests.helpers import error_of

H = {"accept": "application/json, text/event-stream", "content-type": "application/json",
     "mcp-protocol-version": "2025-11-25"}  # fmt: skip
META_TOOLS = ["retrieve_tools", "call_tool_read", "call_tool_write", "call_tool_destructive",
              "describe_tool", "read_cache"]  # fmt: skip


async def rpc(client: httpx2.AsyncClient, method: str, params: Any = None, *, path: str = "/mcp/call",
              tenant: str | None = None) -> dict[str, Any]:  # fmt: skip
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        msg["params"] = params
    headers = {**H, "x-foldgate-tenant": tenant} if tenant else H
    r = await client.post(path, json=msg, headers=headers)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def answer(result: dict[str, Any]) -> dict[str, Any]:
    """A retrieve_tools body: carried once, as JSON text (no structuredContent to double it)."""
    assert "structuredContent" not in result
    body: dict[str, Any] = json.loads(result["content"][0]["text"])
    return body


async def call(client: httpx2.AsyncClient, name: str, arguments: Any, **kw: Any) -> dict[str, Any]:
    result: dict[str, Any] = (await rpc(client, "tools/call", {"name": name, "arguments": arguments}, **kw))[
        "result"
    ]
    return result


async def names(client: httpx2.AsyncClient, path: str) -> list[str]:
    return [t["name"] for t in (await rpc(client, "tools/list", path=path))["result"]["tools"]]


async def test_the_surface_lists_only_its_meta_tools_whatever_the_fleet() -> None:
    async with gateway_client(demo_config(tools_limit=7)) as (client, *_):
        body = await rpc(client, "tools/list")
        tools = {t["name"]: t for t in body["result"]["tools"]}
        assert list(tools) == META_TOOLS
        assert tools["retrieve_tools"]["inputSchema"]["properties"]["limit"]["default"] == 7
        assert tools["call_tool_destructive"]["annotations"]["destructiveHint"] is True
        assert tools["call_tool_read"]["annotations"]["readOnlyHint"] is True
        # The SDK path (a paginated request) lists the same tools.
        slow = await rpc(client, "tools/list", {"cursor": None, "_meta": {"progressToken": 1}})
        assert [t["name"] for t in slow["result"]["tools"]] == META_TOOLS


async def test_routed_endpoint_follows_the_routing_mode() -> None:
    async with gateway_client() as (client, _, _, configs):
        assert await names(client, "/mcp") == META_TOOLS  # retrieve_tools is the default
        configs.configs["default"] = demo_config(routing_mode="direct")
        assert await names(client, "/mcp") == await names(client, "/mcp/all")


async def test_initialize_on_the_surface_explains_the_search_workflow() -> None:
    async with gateway_client() as (client, *_):
        init = {"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}  # fmt: skip
        text = (await rpc(client, "initialize", init))["result"]["instructions"]
        assert "retrieve_tools" in text
        assert "call_tool_read" in text


async def test_retrieve_tools_finds_the_tool_and_says_how_to_call_it() -> None:
    async with gateway_client() as (client, *_):
        result = await call(client, "retrieve_tools", {"query": "create a new contact"})
        hits = answer(result)["tools"]
        top = hits[0]
        assert top["name"] == "crm__create_contact"
        assert top["call_with"] == "call_tool_write"
        assert top["signature"].startswith("create_contact(name*:str, email*:str")
        # Compact: the position is the rank, the server is the name's prefix, the tier is call_with.
        assert set(top) == {"name", "call_with", "signature", "description"}
        full = await call(
            client, "retrieve_tools", {"query": "create a new contact", "detail": "full", "limit": 1}
        )
        [whole] = answer(full)["tools"]
        assert whole["input_schema"]["required"] == ["name", "email"]
        assert whole["server"] == "crm"
        assert whole["rank"] == 1


async def test_a_request_with_several_needs_is_answered_need_by_need() -> None:
    async with gateway_client() as (client, *_):
        query = "Delete the contact for good, then list the support tickets newest first"
        body = answer(await call(client, "retrieve_tools", {"query": query, "limit": 2}))
        names = [h["name"] for h in body["tools"]]
        assert set(names) == {"crm__delete_contact", "tickets__list_tickets"}
        # Each need names its tools by 1-based position in `tools`; the query is not echoed.
        assert body["intents"] == [
            {"need": "Delete the contact for good", "tools": [names.index("crm__delete_contact") + 1]},
            {
                "need": "list the support tickets newest first",
                "tools": [names.index("tickets__list_tickets") + 1],
            },
        ]
        assert "query" not in body
        # One need: the answer has no intents (nothing to group, no extra tokens).
        single = await call(client, "retrieve_tools", {"query": "create a new contact"})
        assert "intents" not in answer(single)


async def test_annotation_filters() -> None:
    async with gateway_client() as (client, *_):

        async def found(**filters: Any) -> set[str]:
            args = {"query": "contact ticket delete create find list update", "limit": 10, **filters}
            return {h["name"] for h in answer(await call(client, "retrieve_tools", args))["tools"]}

        everything = await found()
        assert "crm__delete_contact" in everything
        assert "crm__delete_contact" not in await found(exclude_destructive=True)
        assert await found(read_only_only=True) == {"crm__find_contact", "tickets__list_tickets"}
        assert await found(exclude_open_world=True) == set()  # none of them declares openWorldHint false


async def test_search_never_finds_what_the_caller_cannot_see() -> None:
    config = demo_config()
    servers = [s.model_copy(update={"quarantined": s.name == "crm"}) for s in config.servers]
    async with gateway_client(config.model_copy(update={"servers": servers})) as (client, _, upstream, _):
        result = await call(client, "retrieve_tools", {"query": "crm create_contact"})
        assert all(not h["name"].startswith("crm__") for h in answer(result)["tools"])
        hidden = await call(client, "call_tool_write", {"name": "crm__create_contact", "arguments": {}})
        missing = await call(client, "call_tool_write", {"name": "crm__no_such_tool", "arguments": {}})
        assert error_of(hidden)["error_type"] == error_of(missing)["error_type"] == "not_found"
        assert upstream.calls == []


async def test_the_variant_must_match_the_tools_tier() -> None:
    async with gateway_client() as (client, _, upstream, _):
        args = {"name": "crm__create_contact", "arguments": {"name": "Ada", "email": "ada@example.com"}}
        wrong = await call(client, "call_tool_read", args)
        assert wrong["isError"] is True
        assert error_of(wrong)["error_type"] == "wrong_variant"
        assert error_of(wrong)["call_with"] == "call_tool_write"
        destructive = await call(
            client, "call_tool_write", {"name": "crm:delete_contact", "arguments": {"id": "1"}}
        )
        assert error_of(destructive)["call_with"] == "call_tool_destructive"
        assert upstream.calls == []
        ok = await call(client, "call_tool_write", args)
        assert ok["isError"] is False
        assert upstream.calls == [("crm", "create_contact", args["arguments"])]


async def test_invalid_arguments_self_heal_through_the_variants() -> None:
    async with gateway_client() as (client, _, upstream, _):
        bad = await call(
            client, "call_tool_write", {"name": "crm__create_contact", "arguments": {"name": "Ada"}}
        )
        err = error_of(bad)
        assert err["error_type"] == "invalid_params"
        assert err["input_schema"]["required"] == ["name", "email"]
        assert upstream.calls == []


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("retrieve_tools", {"query": 3}, "query must be a string"),
        ("retrieve_tools", {"query": "x", "cursor": "b10"}, "cursor continues a browse"),
        ("retrieve_tools", {"cursor": "10"}, "cursor must be a next_cursor"),
        ("retrieve_tools", {"browse": "yes"}, "browse must be true or false"),
        ("retrieve_tools", {"query": "x", "limit": 0}, "limit must be an integer between 1 and 100"),
        ("retrieve_tools", {"query": "x", "detail": "everything"}, "detail must be"),
        ("retrieve_tools", {"query": "x", "sort": "asc"}, "does not take sort"),
        ("call_tool_read", {"arguments": {}}, "name must be"),
        ("read_cache", {"key": "k", "offset": -1}, "offset must be an integer"),
        ("no_such_meta_tool", {}, "unknown tool"),
    ],
)
async def test_bad_meta_tool_arguments_get_a_clear_error(tool: str, arguments: Any, message: str) -> None:
    async with gateway_client() as (client, *_):
        result = await call(client, tool, arguments)
        assert result["isError"] is True
        assert message in error_of(result)["error"]


async def test_long_results_are_cut_and_paged_back_with_read_cache() -> None:
    async with gateway_client(demo_config(tool_response_limit=1000)) as (client, *_):
        args = {"name": "crm__find_contact", "arguments": {"query": "x" * 2500}}
        result = await call(client, "call_tool_read", args)
        text = result["content"][0]["text"]
        assert "structuredContent" not in result
        key = text.split('key "', 1)[1].split('"', 1)[0]
        assert text.startswith('{"echo"')
        pages, offset = [text.split("\n\n[foldgate:")[0]], 1000
        while offset is not None:
            page = (await call(client, "read_cache", {"key": key, "offset": offset, "limit": 700}))[
                "structuredContent"
            ]
            pages.append(page["text"])
            offset = page["next_offset"]
        whole = "".join(pages)
        assert json.loads(whole) == {"echo": args["arguments"]}
        assert page["total"] == len(whole)


async def test_another_tenants_cache_key_is_exactly_not_found() -> None:
    async with gateway_client(demo_config(tool_response_limit=1000)) as (client, gateway, _, configs):
        configs.configs["other"] = demo_config(tool_response_limit=1000)
        gateway.catalogs.store.publish(catalog_from_tools("other", demo_tools()), expected_current=None)
        args = {"name": "crm__find_contact", "arguments": {"query": "y" * 3000}}
        text = (await call(client, "call_tool_read", args))["content"][0]["text"]
        key = text.split('key "', 1)[1].split('"', 1)[0]
        own = await call(client, "read_cache", {"key": key})
        assert own["isError"] is False
        foreign = await call(client, "read_cache", {"key": key}, tenant="other")
        missing = await call(client, "read_cache", {"key": "no-such-key"}, tenant="other")
        assert foreign == missing
        assert foreign["isError"] is True


async def test_hits_carry_ranks_and_tools_the_caller_cannot_see_change_nothing() -> None:
    """Raw BM25 scores carry corpus statistics (how many tools mention a word); with hidden tools in
    the index they would tell a caller about tools it cannot see. Answers carry ranks instead (in
    full detail; a compact answer's order is its ranking)."""
    query = {"query": "find a contact by name", "detail": "full"}
    async with gateway_client() as (client, *_):
        plain = (await call(client, "retrieve_tools", query))["content"][0]["text"]
    hidden = [
        tool_from_wire(
            "secret", {"name": f"contact_{i}", "description": "Find a contact by name in the vault."}
        )
        for i in range(30)
    ]
    config = demo_config()
    servers = [*config.servers, config.servers[0].model_copy(update={"name": "secret", "quarantined": True})]
    async with gateway_client(
        config.model_copy(update={"servers": servers}), tools=demo_tools() + hidden
    ) as (
        client,
        *_,
    ):
        answer = await call(client, "retrieve_tools", query)
        shadowed = answer["content"][0]["text"]
    assert shadowed == plain
    hits = json.loads(plain)["tools"]
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert all("score" not in h for h in hits)


def _indexed(name: str, description: str, properties: dict[str, Any]) -> IndexedTool:
    tool = tool_from_wire("srv", {"name": name, "description": description, "inputSchema": {
        "type": "object", "properties": properties}})  # fmt: skip
    sig = tool.signature
    return IndexedTool(f"srv__{name}", tool, sig.params, sig.lossy, "", "", 0, 0)


def test_a_compact_hit_is_one_sentence_and_a_bounded_signature() -> None:
    """Compact hits are what lets many tools fit in one answer: the first sentence only, and a long
    signature cut with a mark that tells the agent to describe the tool before calling it."""
    long_desc = "Search the web for pages. Then rank them by freshness and return the top ones.\nMore."
    short = _indexed("web_search", long_desc, {"q": {"type": "string"}})
    entry = hit_entry(short, "read", 1, full=False)
    assert entry == {
        "name": "srv__web_search",
        "call_with": "call_tool_read",
        "signature": "web_search(q:str)",
        "description": "Search the web for pages.",
    }
    assert not needs_describe(short)
    # Past the tenth hit the signature is left to describe_tool: the tail is there to be found.
    assert tail_line(short, "read") == "srv__web_search (read): Search the web for pages."
    assert needs_describe(short, 11)
    wordy = _indexed("crawl", "Crawl " + "every linked page " * 10 + "of a site.", {})
    line = tail_line(wordy, "destructive")
    assert line.startswith("srv__crawl (destructive): Crawl every linked page")
    assert line.endswith("…")
    assert len(line) <= len("srv__crawl (destructive): ") + 80
    # A Chinese sentence ends at its full stop, with no space after it.
    chinese = _indexed("weather", "\u83b7\u53d6\u5929\u6c14\u3002\u8fd4\u56de\u7ed3\u679c", {})
    assert hit_entry(chinese, "read", 1, full=False)["description"] == "\u83b7\u53d6\u5929\u6c14\u3002"
    wide = _indexed("configure", "Set it.", {f"parameter_{i}": {"type": "string"} for i in range(20)})
    cut = hit_entry(wide, "write", 1, full=False)["signature"]
    assert cut.endswith("…)")
    assert len(cut) <= 160
    assert needs_describe(wide)  # the cut signature is not enough to call it
    # Full detail keeps the whole signature and description.
    whole = hit_entry(wide, "write", 1, full=True)
    assert whole["signature"] == "configure" + wide.signature
    assert whole["description"] == "Set it."


def test_a_compact_page_signs_its_head_and_lists_its_tail_one_line_each() -> None:
    """Ten signed hits as objects (callable from the answer), the rest as ``more`` lines; a full page
    has every hit whole. The tier each tail line names is the tool's own."""
    tools = [_indexed(f"tool_{i}", f"Does thing {i}. More.", {"x": {"type": "string"}}) for i in range(13)]
    tiers = {t.published: ("read" if i % 2 else "write") for i, t in enumerate(tools)}

    def tier(tool: IndexedTool) -> Any:
        return tiers[tool.published]

    entries, more = page_entries(tools, tier, full=False)
    assert [e["name"] for e in entries] == [f"srv__tool_{i}" for i in range(10)]
    assert all("signature" in e for e in entries)
    assert more == [
        "srv__tool_10 (write): Does thing 10.",
        "srv__tool_11 (read): Does thing 11.",
        "srv__tool_12 (write): Does thing 12.",
    ]
    whole, none = page_entries(tools, tier, full=True)
    assert [e["rank"] for e in whole] == list(range(1, 14))
    assert none == []


def test_the_surface_listing_stays_small() -> None:
    """The listing is paid on every session before any search: it must leave most of a 3,000-token
    budget to the answer (it was 899 cl100k tokens before the descriptions were tightened)."""
    assert get_counter("cl100k")(call_surface_listing(50)) <= 700


async def test_a_long_page_answers_its_tail_in_more() -> None:
    extra = [
        tool_from_wire("notes", {"name": f"contact_note_{i}", "description": f"Note {i} about a contact."})
        for i in range(20)
    ]
    config = demo_config()
    servers = [*config.servers, config.servers[0].model_copy(update={"name": "notes"})]
    async with gateway_client(config.model_copy(update={"servers": servers}), tools=demo_tools() + extra) as (
        client,
        *_,
    ):
        body = answer(await call(client, "retrieve_tools", {"query": "contact note", "limit": 100}))
        assert len(body["tools"]) == 10
        assert len(body["more"]) >= 10
        assert all(" (" in line and "): " in line for line in body["more"])
        names = {h["name"] for h in body["tools"]} | {line.split(" (", 1)[0] for line in body["more"]}
        assert len(names) == len(body["tools"]) + len(body["more"])
        short = answer(await call(client, "retrieve_tools", {"query": "contact note", "limit": 3}))
        assert "more" not in short
