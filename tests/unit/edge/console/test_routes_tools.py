"""The tool, Try it, prompt, resource and Connect pages in process: the tool page shows the entries the
serving path lists (not a re-rendering), Try it calls through the gateway as the chosen token (its
scope, tier, validation and approval hold), asks before a destructive call, and records the call and
the operator's action; Connect and a new token's page carry the snippets (the secret only on the
latter); hostile upstream text is escaped; every page needs a console session."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace
from typing import Any

from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.console.connect_snippets import PLACEHOLDER
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.activity import ActivityEvent, ActivityRecord, AuditEvent
from foldgate.model.offerings import publish_items
from foldgate.model.tool import Tool
from tests.gateway_fixture import demo_tools

HOSTILE = '<script>alert("pwned")</script>'


class Recording:
    """A recorder keeping every event (the gateway's recorder is where the activity log listens)."""

    def __init__(self) -> None:
        self.events: list[ActivityRecord] = []

    def record(self, event: ActivityRecord) -> None:
        self.events.append(event)


def pre(page: str, element_id: str) -> str:
    found = re.search(rf'<pre class="code" id="{element_id}">(.*?)</pre>', page, re.S)
    assert found is not None, element_id
    return html.unescape(found.group(1))


async def tried(c: Any, csrf: str, tool: str, **form: str) -> str:
    r = await c.client.post(f"/console/tools/{tool}/try", data={"csrf": csrf, "tenant": "default", **form})
    assert r.status_code == 200, r.text
    return str(r.text)


async def test_the_tool_page_shows_the_pre_rendered_entries_tier_and_deferral(make_console: Any) -> None:
    async for c in make_console():
        await c.login()
        r = await c.client.get("/console/tools/crm__find_contact")
        assert r.status_code == 200
        listed = c.gateway.view("default").resolve("crm__find_contact")
        assert json.loads(pre(r.text, "entry-full")) == json.loads(listed.full_fragment)
        assert json.loads(pre(r.text, "entry-deferred")) == json.loads(listed.deferred_fragment)
        assert json.loads(pre(r.text, "entry-describe"))["input_schema"] == listed.tool.input_schema
        assert "find_contact" + listed.signature in html.unescape(r.text)
        assert "<strong>read</strong>, from its annotations" in r.text
        assert "<strong>full</strong>: no rule defers it" in r.text
        # The canonical key opens the same page; an unknown tool is a 404.
        assert (await c.client.get("/console/tools/crm:find_contact")).status_code == 200
        assert (await c.client.get("/console/tools/crm__nope")).status_code == 404


async def test_the_tool_page_shows_an_inline_signature_whole_and_flat(make_console: Any) -> None:
    async for c in make_console():
        await c.login()
        r = await c.client.get("/console/tools/crm__create_contact")
        assert r.status_code == 200
        signature = "create_contact(name*:str, email*:str, address:{city:str, country:str}, "
        assert signature in html.unescape(r.text)
        assert "not fully described" not in r.text  # no ~: the page does not call it lossy


async def test_a_pinned_tier_and_a_deferral_rule_are_said_with_their_source(make_console: Any) -> None:
    servers = [
        {"name": "crm", "url": "http://127.0.0.1:9/crm/mcp", "tool_loading": "deferred",
         "tools": {"find_contact": {"tier": "write"}}},
        {"name": "tickets", "url": "http://127.0.0.1:9/tickets/mcp"},
    ]  # fmt: skip
    async for c in make_console(config=parse_tenant_config({"servers": servers})):
        await c.login()
        page = (await c.client.get("/console/tools/crm__find_contact")).text
        assert "<strong>write</strong>, from the operator&#39;s pin in the tenant config" in page
        assert "<strong>deferred</strong>: its server&#39;s tool_loading is deferred" in page
        assert "call_tool_write" in page
        tickets = (await c.client.get("/console/tools/tickets__update_ticket")).text
        assert "from the MCP spec&#39;s default" in tickets


async def test_try_it_answers_exactly_what_the_agent_gets_and_records_it(make_console: Any) -> None:
    async for c in make_console():
        c.gateway.recorder = recorder = Recording()
        csrf = await c.login()
        token, grant = c.tokens.issue("default", servers=["crm"], tier="read", expires_in=None)
        page = await tried(c, csrf, "crm__find_contact", token=grant.token_id, arguments='{"query": "ada"}')
        result = json.loads(pre(page, "try-result"))
        assert result == await c.gateway.call(
            c.gateway.view("default").principal, "crm__find_contact", {"query": "ada"}
        )
        assert c.gateway.upstream.calls[-1] == ("crm", "find_contact", {"query": "ada"})
        call = next(e for e in recorder.events if isinstance(e, ActivityEvent))
        assert (call.principal, call.surface, call.tool, call.outcome) == (
            grant.token_id,
            "console",
            "find_contact",
            "ok",
        )
        action = next(e for e in recorder.events if isinstance(e, AuditEvent) and e.action == "tool.try")
        assert (action.action, action.target, action.actor.via) == ("tool.try", "crm:find_contact", "console")
        assert grant.token_id in action.detail
        assert token not in page  # the secret is never needed nor shown


async def test_bad_arguments_get_the_self_healing_error_and_reach_no_upstream(make_console: Any) -> None:
    async for c in make_console():
        csrf = await c.login()
        page = await tried(c, csrf, "crm__find_contact", arguments='{"limit": "many"}')
        result = json.loads(pre(page, "try-result"))
        assert result["isError"] is True
        body = json.loads(result["content"][0]["text"])
        assert body["error_type"] == "invalid_params"
        assert body["hint"].startswith("Call describe_tool")
        assert "input_schema" in body
        assert c.gateway.upstream.calls == []
        # Not JSON at all: the form is refused, nothing is called.
        page = await tried(c, csrf, "crm__find_contact", arguments="{query: ada")
        assert "arguments are not JSON" in page
        assert c.gateway.upstream.calls == []


async def test_a_destructive_tool_is_called_only_after_confirmation(make_console: Any) -> None:
    async for c in make_console():
        csrf = await c.login()
        page = await tried(c, csrf, "crm__delete_contact", arguments='{"id": "c1"}')
        assert "is destructive</strong>" in page
        assert 'name="confirm" value="yes"' in page
        assert c.gateway.upstream.calls == []
        page = await tried(c, csrf, "crm__delete_contact", arguments='{"id": "c1"}', confirm="yes")
        assert json.loads(pre(page, "try-result"))["isError"] is False
        assert c.gateway.upstream.calls == [("crm", "delete_contact", {"id": "c1"})]


async def test_a_token_outside_the_tools_scope_or_tier_is_refused_as_its_agent_would_be(
    make_console: Any,
) -> None:
    async for c in make_console():
        csrf = await c.login()
        _, tickets_only = c.tokens.issue("default", servers=["tickets"], tier="destructive", expires_in=None)
        _, read_only = c.tokens.issue("default", tier="read", expires_in=None)
        for grant, tool in ((tickets_only, "crm__find_contact"), (read_only, "crm__delete_contact")):
            page = await tried(c, csrf, tool, token=grant.token_id, arguments='{"id": "c1", "query": "x"}')
            # No confirmation: this token could not call it anyway; the agent's own answer instead.
            assert "is destructive</strong>" not in page
            result = json.loads(pre(page, "try-result"))
            agent = await c.gateway.call(
                replace(c.gateway.view("default").principal, servers=frozenset(grant.servers or []) or None,
                        tier=grant.tier, key=grant.token_id),
                tool, {"id": "c1", "query": "x"},
            )  # fmt: skip
            assert result == agent
            assert result["isError"] is True
        assert c.gateway.upstream.calls == []
        # A token of no one in this tenant (or revoked) is refused by the form, not called as.
        page = await tried(c, csrf, "crm__find_contact", token="tok_" + "0" * 16, arguments="{}")
        assert "no token" in page


async def test_hostile_tool_text_is_escaped_on_the_tool_pages(make_console: Any) -> None:
    evil = Tool(server="crm", name="evil", description=HOSTILE, annotations={"readOnlyHint": True})
    tools = [*demo_tools(), evil]
    async for c in make_console(tools=tools):
        await c.login()
        for path in ("/console/tools/crm__evil", "/console/tools?server=crm"):
            page = (await c.client.get(path)).text
            assert HOSTILE not in page
            assert "&lt;script&gt;" in page


async def test_prompts_and_resources_pages_list_what_is_published_and_held(make_console: Any) -> None:
    async for c in make_console():
        await c.login()
        items = [
            *publish_items("prompt", [("crm", {"name": "brief", "description": HOSTILE})]),
            *publish_items("resource", [("crm", {"uri": "mem://note", "name": "note"})]),
            *publish_items("template", [("tickets", {"uriTemplate": "mem://{id}", "name": "byid"})]),
        ]
        prompt = {"name": "triage", "description": "t"}
        pending = {"state": "pending", "server": "tickets", "kind": "prompt", "hash": "h", "prompt": prompt}
        held = {"tickets#prompt:triage": pending}
        current = c.store.current_version("default")
        catalog = replace(catalog_from_tools("default", demo_tools()), offerings=tuple(items), withheld=held)
        c.store.publish(catalog, expected_current=current)
        prompts = (await c.client.get("/console/prompts")).text
        assert "crm__brief" in prompts
        assert "approved: agents can list and fetch it" in prompts
        assert "new: held until an operator approves it" in prompts
        assert HOSTILE not in prompts
        resources = (await c.client.get("/console/resources")).text
        assert "foldgate://crm/mem%3A%2F%2Fnote" in resources
        assert "mem://{id}" in resources
        tool = (await c.client.get("/console/tools/crm__find_contact")).text
        assert "crm__brief" in tool  # the server's prompt beside its tool


async def test_connect_shows_a_placeholder_and_a_new_tokens_page_its_snippets(make_console: Any) -> None:
    async for c in make_console(public_url="https://gw.example.com/"):
        csrf = await c.login()
        connect = (await c.client.get("/console/connect")).text
        assert html.escape(PLACEHOLDER) in connect
        assert "claude mcp add --transport http foldgate https://gw.example.com/mcp/all" in connect
        assert "fgt_" not in connect
        created = await c.client.post(
            "/console/tokens", data={"csrf": csrf, "tenant": "default", "tier": "read"}
        )
        assert created.status_code == 303  # post-redirect-get: the secret is shown by the GET it names
        r = await c.client.get(created.headers["location"])
        token = re.search(r'id="new-token" class="mono wide" readonly value="([^"]+)"', r.text)
        assert token is not None
        assert f"Authorization: Bearer {token.group(1)}" in html.unescape(r.text)
        assert "https://gw.example.com/mcp/code" in r.text
        # Shown once: the token list never carries it again.
        assert token.group(1) not in (await c.client.get("/console/tokens")).text


async def test_the_new_pages_need_a_console_session_not_an_agent_token(make_console: Any) -> None:
    async for c in make_console():
        token, _ = c.tokens.issue("default", expires_in=None)
        for path in ("/console/tools", "/console/tools/crm__find_contact", "/console/prompts",
                     "/console/resources", "/console/connect"):  # fmt: skip
            r = await c.client.get(path, headers={"authorization": f"Bearer {token}"})
            assert r.status_code == 303
            assert r.headers["location"] == "/console/login"
        r = await c.client.post("/console/tools/crm__delete_contact/try", data={"arguments": '{"id": "1"}'})
        assert r.status_code == 403
        assert c.gateway.upstream.calls == []


async def test_the_tool_page_shows_the_generated_enrichment_marked_and_escaped(make_console: Any) -> None:
    from foldgate.model.enrichment import Enrichment  # only this test enriches

    async for c in make_console():
        await c.login()
        plain = (await c.client.get("/console/tools/crm__find_contact")).text
        assert "enrichment-h" not in plain  # an un-enriched tool has no such section
        current = c.store.load_current("default")
        tool = current.by_key["crm:find_contact"].tool
        made = Enrichment(f"Use to look people up {HOSTILE}", ("who is bob",), tool.content_hash, "x:tiny")
        enriched = catalog_from_tools("default", demo_tools(), enrichments={tool.key: made})
        c.store.publish(enriched, expected_current=current.version)
        page = (await c.client.get("/console/tools/crm__find_contact")).text
        assert "<strong>generated</strong> by x:tiny" in page
        assert "never shown to agents" in page
        assert HOSTILE not in page
        shown = re.search(r'<p id="enrichment-hint">(.*?)</p>', page, re.S)
        assert shown is not None
        assert html.unescape(shown.group(1)) == made.hint
        assert "<li>who is bob</li>" in page
        # What the agent gets stays the upstream's words only.
        assert "look people up" not in pre(page, "entry-full")
        assert "look people up" not in pre(page, "entry-describe")
