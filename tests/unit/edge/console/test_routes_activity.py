"""The console's Activity, Audit and fleet-usage routes in process: only a console session reaches them
(never an agent token), a page of one tenant never shows another's events (not by filter, cursor or
live refresh), hostile event fields are escaped, and the live refresh answers only what is new."""

from __future__ import annotations

import html
import re
import time
from typing import Any

from foldgate.config.source import StaticConfigSource
from foldgate.edge.operator_audit import DEPLOYMENT
from foldgate.model.activity import ActivityEvent, ActivityRecord, Actor, AuditEvent
from foldgate.store.activity.base import StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore
from tests.gateway_fixture import demo_config

HOSTILE = '<script>alert("pwned")</script>'
# How the console's templates escape it (Jinja2: quotes as numeric references).
ESCAPED = "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;"


def call(tenant: str, tool: str, ago_s: float = 60, **fields: Any) -> ActivityEvent:
    values: dict[str, Any] = {"server": "crm", "principal": "tok_1", "gateway_ms": 8.0} | fields
    return ActivityEvent(tenant, "tools/call", "mcp", values.pop("outcome", "ok"), at=time.time() - ago_s,
                         tool=tool, **values).with_id()  # fmt: skip


def put(store: SqliteActivityStore, *records: ActivityRecord) -> None:
    store.put_many([StoredRecord(r, time.time() + 86400) for r in records])


def two_tenants(make_console: Any) -> tuple[Any, SqliteActivityStore]:
    store = SqliteActivityStore(":memory:")
    configs = StaticConfigSource({"default": demo_config(), "other": demo_config()})
    return make_console(configs=configs, activity=store), store


def ids(page: str) -> list[str]:
    """The event ids a page or fragment lists, in order."""
    return re.findall(r'id="event-([0-9]{13}-[0-9a-f]{12})"', page)


async def test_activity_audit_and_the_live_refresh_need_a_console_session_not_an_agent_token(
    make_console: Any,
) -> None:
    opened, store = two_tenants(make_console)
    put(store, call("default", "find_contact"))
    async for c in opened:
        token, _ = c.tokens.issue("default", expires_in=None)
        for path in ("/console/activity", "/console/activity/new?tenant=default", "/console/audit"):
            for headers in ({}, {"authorization": f"Bearer {token}"}):
                r = await c.client.get(path, headers=headers)
                assert r.status_code == 303, path
                assert r.headers["location"] == "/console/login"
                assert "find_contact" not in r.text


async def test_a_tenants_activity_page_never_shows_another_tenants_events(make_console: Any) -> None:
    opened, store = two_tenants(make_console)
    mine, theirs = call("default", "mine_tool"), call("other", "their_tool", principal="tok_other")
    put(store, mine, theirs, *(call("other", f"their_{i}", ago_s=120 + i) for i in range(60)))
    async for c in opened:
        await c.login()
        page = (await c.client.get("/console/activity?tenant=default")).text
        assert ids(page) == [mine.event_id]
        assert "their_" not in page
        # Filtering by the other tenant's principal or tool narrows this tenant's events: to none.
        for q in ("principal=tok_other", "tool=their_tool"):
            assert ids((await c.client.get(f"/console/activity?tenant=default&{q}")).text) == []
        # The other tenant's older-page cursor is refused on this tenant's page, not followed.
        other = (await c.client.get("/console/activity?tenant=other")).text
        assert mine.event_id not in other
        cursor = html.unescape(re.search(r'href="/console/activity\?([^"]*cursor=[^"]*)"', other).group(1))  # type: ignore[union-attr]
        followed = await c.client.get("/console/activity?" + cursor.replace("tenant=other", "tenant=default"))
        assert ids(followed.text) == []
        assert "cursor: not a cursor of this tenant" in followed.text
        # The live refresh of this tenant's page answers none of the other tenant's new events.
        put(store, call("other", "their_new"))
        assert (
            await c.client.get("/console/activity/new?tenant=default&after=" + mine.event_id)
        ).status_code == 204
        # An unconfigured tenant has no page.
        assert (await c.client.get("/console/activity?tenant=nope")).status_code == 404
        assert (await c.client.get("/console/activity/new?tenant=nope")).status_code == 404


async def test_event_fields_from_agents_and_upstreams_are_escaped_in_the_row_and_its_expansion(
    make_console: Any,
) -> None:
    opened, store = two_tenants(make_console)
    put(store, call("default", HOSTILE, client_name=HOSTILE, detail=HOSTILE, server=HOSTILE))
    async for c in opened:
        await c.login()
        page = (await c.client.get("/console/activity")).text
        assert HOSTILE not in page
        assert page.count(ESCAPED) >= 5
        assert "<details>" in page
        assert "<dt>client_name</dt>" in page


async def test_the_live_refresh_answers_204_until_a_new_event_then_it_and_the_next_poller(
    make_console: Any,
) -> None:
    opened, store = two_tenants(make_console)
    first = call("default", "find_contact", ago_s=30)
    put(store, first)
    async for c in opened:
        await c.login()
        page = (await c.client.get("/console/activity?server=crm")).text
        poll = html.unescape(re.search(r'hx-get="(/console/activity/new\?[^"]+)"', page).group(1))  # type: ignore[union-attr]
        assert f"after={first.event_id}" in poll
        assert "every 3s" in page
        assert (await c.client.get(poll)).status_code == 204
        fresh, elsewhere = (
            call("default", "create_ticket", ago_s=1),
            call("default", "x", ago_s=1, server="git"),
        )
        put(store, fresh, elsewhere)
        r = await c.client.get(poll)
        assert r.status_code == 200
        assert ids(r.text) == [fresh.event_id]
        # The fragment starts with the next poller, from the newest event now shown.
        assert r.text.lstrip().startswith('<li class="live" id="activity-live"')
        assert f"after={fresh.event_id}" in r.text
        assert "server=crm" in html.unescape(r.text)
        # A later page does not refresh itself; a poll that cannot continue tells htmx to stop.
        assert (await c.client.get("/console/activity/new?after=garbage")).status_code == 286


async def test_the_audit_page_lists_operator_events_of_its_tenant_escaped(make_console: Any) -> None:
    opened, store = two_tenants(make_console)
    put(
        store,
        AuditEvent("default", "token.revoke", Actor("console", "operator", "127.0.0.1"), target=HOSTILE),
        AuditEvent("other", "config.save", Actor("cli", "someone-else")),
        call("default", "find_contact"),
    )
    async for c in opened:
        await c.login()
        r = await c.client.get("/console/audit")
        assert r.status_code == 200
        assert "token.revoke" in r.text
        assert "console operator" in r.text
        assert HOSTILE not in r.text
        assert ESCAPED in r.text
        assert "config.save" not in r.text
        assert "find_contact" not in r.text
        assert 'href="/console/audit?tenant=default"' in r.text


async def test_fleet_shows_each_servers_last_24_hours_with_sparklines_or_nothing_without_a_log(
    make_console: Any,
) -> None:
    opened, store = two_tenants(make_console)
    put(
        store,
        call("default", "a", gateway_ms=20.0),
        call("default", "b", ago_s=7200, outcome="upstream_error", gateway_ms=900.0),
        *(call("other", "c", server="tickets") for _ in range(3)),
    )
    async for c in opened:
        await c.login()
        page = (await c.client.get("/console/fleet")).text
        section = page[page.index('id="usage-h"') :]
        crm = section[section.index(">crm</a>") : section.index("</tr>", section.index(">crm</a>"))]
        assert '<span class="figure">2</span>' in crm
        assert '<span class="figure">50.0%</span>' in crm
        assert '<span class="figure">900 ms</span>' in crm
        assert crm.count('<svg class="spark"') == 3
        tickets = section[section.index(">tickets</a>") :]
        assert '<span class="figure">0</span>' in tickets
    async for c in make_console():
        await c.login()
        assert 'id="usage-h"' not in (await c.client.get("/console/fleet")).text


async def test_the_audit_page_lists_the_consoles_sign_ins_under_the_console_not_under_a_tenant(
    make_console: Any,
) -> None:
    opened, store = two_tenants(make_console)
    put(
        store,
        AuditEvent(
            DEPLOYMENT, "console.sign_in_refused", Actor("console", "", "192.0.2.7"), outcome="refused"
        ),
        AuditEvent("default", "token.create", Actor("console", "s-1"), target="tok_9"),
    )
    async for c in opened:
        await c.login()
        tenant = (await c.client.get("/console/audit")).text
        assert "token.create" in tenant
        assert "192.0.2.7" not in tenant
        console = (await c.client.get("/console/audit?tenant=default&scope=deployment")).text
        assert "console.sign_in_refused" in console
        assert "192.0.2.7" in console
        assert "token.create" not in console
        assert '<option value="deployment" selected>' in console
