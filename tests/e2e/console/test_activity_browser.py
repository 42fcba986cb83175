"""The console's Activity, Audit and fleet-usage views in a real browser (Debian's headless chromium
through Playwright) against `foldgate serve` over a replay upstream, with events seeded into the
gateway's own activity store: pages newest first, filters, a row expanded to every field (hostile values
as text), the htmx live refresh adding an event that arrives while the page is open, a real agent call
through the gateway appearing there as the gateway recorded it, the Audit page (a token created in
the console, the console's own sign-in), the fleet's sparklines, another tenant's events never shown,
and agent tokens refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from foldgate.model.activity import ActivityEvent, ActivityRecord, Actor, AuditEvent
from foldgate.store.activity.base import StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore
from tests.browser import accessibility_problems, chromium_browser, need_chromium
from tests.procs import REPO, foldgate_serve, replay

pytestmark = pytest.mark.e2e

SHOTS = REPO / "test-output" / "console"
HOSTILE = '<img src=x onerror="document.title=1">'
NOW = time.time()


@dataclass
class Served:
    base: str
    tmp: Path
    operator_key: str
    store: SqliteActivityStore

    def put(self, *records: ActivityRecord) -> None:
        """Write events as the gateway's recorder would (same store, same file)."""
        self.store.put_many([StoredRecord(r, time.time() + 86400) for r in records])


def call(i: int, tenant: str = "default", **fields: Any) -> ActivityEvent:
    """The i-th seeded call: i times 20 minutes ago (60 span the day), crm's find_contact unless told
    otherwise."""
    values: dict[str, Any] = {
        "server": "crm",
        "tool": "find_contact",
        "principal": "tok_browser",
        "client_name": "claude-code",
        "client_version": "2.1",
        "protocol": "2025-11-25",
        "gateway_ms": 10.0 + i,
        "upstream_ms": 8.0 + i,
        "request_id": f"req-{i}",
    } | fields
    outcome = values.pop("outcome", "ok")
    return ActivityEvent(tenant, "tools/call", "mcp", outcome, at=NOW - 1200 * i, **values).with_id()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    need_chromium()
    tmp = tmp_path_factory.mktemp("activity")
    with ExitStack() as stack:
        upstream = stack.enter_context(replay())
        servers = [{"name": n, "url": upstream.urls[n], "trusted": True} for n in ("crm", "tickets")]
        config = {"servers": servers}
        base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "3600", timeout=60))
        key = (tmp / "operator.key").read_text().strip()
        store = SqliteActivityStore(tmp / "store.sqlite3")
        stack.callback(store.close)
        served = Served(base, tmp, key, store)
        # 60 calls of this tenant (more than a page), tickets' failing ones among them, one with a
        # hostile client name; another tenant's calls, which no page of this one may show.
        served.put(
            *(call(i) for i in range(1, 50)),
            *(call(i, server="tickets", tool="create_ticket", outcome="tool_error") for i in range(50, 58)),
            call(58, client_name=HOSTILE, detail=HOSTILE),
            call(59, server="tickets", tool="create_ticket", outcome="upstream_timeout"),
            call(60, server="tickets", tool="create_ticket"),
            *(call(i, tenant="intruder", tool="intruder_tool") for i in range(1, 5)),
            AuditEvent("default", "token.create", Actor("console", "operator", "127.0.0.1"), at=NOW - 300,
                       target="tok_browser"),
            AuditEvent("default", "console.sign_in_refused", Actor("console", "", "127.0.0.1"), at=NOW - 200,
                       outcome="refused", detail="wrong operator key"),
            AuditEvent("intruder", "config.save", Actor("cli", "intruder-admin"), at=NOW - 100),
        )  # fmt: skip
        yield served


@pytest.fixture(scope="module")
def page(served: Served) -> Iterator[Any]:
    """One signed-in browser page for the module."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium_browser() as browser:
        context = browser.new_context(base_url=served.base, viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto("/console/login")
        page.get_by_label("Operator key").fill(served.operator_key)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/console/fleet")
        yield page
        context.close()


def rows(page: Any) -> Any:
    return page.locator("ol.events li.event")


def agent_token(served: Served) -> dict[str, Any]:
    """A real agent token and its grant, issued by the CLI into the gateway's store."""
    out = subprocess.run(
        [sys.executable, "-m", "foldgate.app.cli", "token", "create", "--tenant", "default", "--json",
         "--label", "activity browser test", "--db", str(served.tmp / "store.sqlite3")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    issued: dict[str, Any] = json.loads(out)
    return issued


def until_listed(page: Any, locator: Any, timeout_s: float = 15.0) -> None:
    """Reload the page until ``locator`` finds something: the recorder writes its batches within a
    second or so (the Activity page refreshes itself; the Audit page does not)."""
    deadline = time.monotonic() + timeout_s
    while locator.count() == 0:
        assert time.monotonic() < deadline, f"nothing matched {locator} within {timeout_s} s"
        page.reload()


def test_activity_lists_this_tenants_events_newest_first_a_page_at_a_time(page: Any, served: Served) -> None:
    page.get_by_role("link", name="Activity").click()
    page.wait_for_url("**/console/activity?tenant=default")
    assert page.get_by_role("heading", level=1).inner_text() == "Activity"
    events = rows(page)
    assert events.count() == 50
    first = events.first.locator("summary").inner_text()
    assert "find_contact" in first
    assert "tok_browser" in first
    assert "intruder" not in page.content()
    page.screenshot(path=str(SHOTS / "activity.png"), full_page=True)
    assert accessibility_problems(page) == []
    page.get_by_role("link", name="Older").click()
    assert rows(page).count() == 10
    assert page.get_by_role("heading", name="Older events").count() == 1
    assert page.get_by_role("link", name="Older").count() == 0
    assert "intruder" not in page.content()


def test_filters_narrow_the_list_and_a_row_expands_to_every_field_with_hostile_values_as_text(
    page: Any,
) -> None:
    page.goto("/console/activity")
    page.get_by_label("Server").fill("tickets")
    page.get_by_label("Outcome").select_option("tool_error")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"/console/activity\?tenant=default&server=tickets&.*outcome=tool_error"))
    texts = rows(page).locator("summary").all_inner_texts()
    assert len(texts) == 8
    assert all("tickets" in t and "tool_error" in t and "create_ticket" in t for t in texts)
    # The form shows the filters it applied.
    assert page.get_by_label("Server").input_value() == "tickets"
    page.get_by_label("Server").fill("crm")
    page.get_by_label("Outcome").select_option("")
    page.get_by_label("Principal").fill("tok_browser")
    page.get_by_role("button", name="Filter").click()
    hostile = rows(page).filter(has_text="onerror")
    assert hostile.count() == 1
    fields = hostile.locator("dl.event-fields")
    assert not fields.is_visible()
    hostile.locator("summary").click()
    assert fields.is_visible()
    shown = dict(
        zip(fields.locator("dt").all_inner_texts(), fields.locator("dd").all_inner_texts(), strict=True)
    )
    assert shown["client_name"] == HOSTILE
    assert shown["detail"] == HOSTILE
    assert shown["request_id"] == "req-58"
    assert shown["upstream_ms"] == "66"
    assert {"tenant", "surface", "protocol", "trace_id", "event_id", "cut_to_read_cache"} <= set(shown)
    # Shown as text: no element was made of it and its handler never ran.
    assert page.locator("ol.events img").count() == 0
    assert page.title() != "1"
    page.screenshot(path=str(SHOTS / "activity-expanded.png"), full_page=True)
    # Since and until take a UTC time: the calls of 110 to 50 minutes ago (3, 4 and 5).
    page.goto("/console/activity")
    utc = "%Y-%m-%d %H:%M:%S"
    page.get_by_label("Since (UTC)").fill(time.strftime(utc, time.gmtime(NOW - 5.5 * 1200)))
    page.get_by_label("Until (UTC)").fill(time.strftime(utc, time.gmtime(NOW - 2.5 * 1200)))
    page.get_by_role("button", name="Filter").click()
    assert [t.split()[-2] for t in rows(page).locator("summary").all_inner_texts()] == ["13", "14", "15"]


def test_the_live_refresh_adds_an_event_that_arrives_while_the_page_is_open(
    page: Any, served: Served
) -> None:
    page.goto("/console/activity?tenant=default&server=crm")
    opened = rows(page).first
    opened.locator("summary").click()
    assert opened.locator("dl.event-fields").is_visible()
    before = rows(page).count()
    fresh = call(0, tool="live_tool_arrived", request_id="req-live")
    elsewhere = call(0, server="git", tool="not_this_filter")
    served.put(fresh, elsewhere, call(0, tenant="intruder", tool="intruder_live"))
    arrived = page.locator(f"#event-{fresh.event_id}")
    arrived.wait_for(timeout=15_000)
    # Added at the top, under the page's filter only, and the row opened before stays open.
    assert rows(page).first.get_attribute("id") == f"event-{fresh.event_id}"
    assert rows(page).count() == before + 1
    assert "not_this_filter" not in page.content()
    assert "intruder" not in page.content()
    assert page.locator("ol.events details[open]").count() == 1
    arrived.locator("summary").click()
    assert "req-live" in arrived.locator("dl.event-fields").inner_text()


def test_a_real_agent_call_through_the_gateway_appears_on_the_open_page_as_recorded(
    page: Any, served: Served
) -> None:
    issued = agent_token(served)
    page.goto(f"/console/activity?tenant=default&principal={issued['token_id']}")
    assert rows(page).count() == 0
    params = {"name": "crm__find_contact", "arguments": {"query": "a secret search term"}}
    call_ = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        "authorization": f"Bearer {issued['token']}",
    }
    answer = httpx2.post(f"{served.base}/mcp/all", json=call_, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    # No reload: the page's live refresh brings the event the gateway recorded.
    rows(page).first.wait_for(timeout=20_000)
    summary = rows(page).first.locator("summary").inner_text()
    assert "crm" in summary
    assert "find_contact" in summary
    assert "ok" in summary
    rows(page).first.locator("summary").click()
    fields = rows(page).first.locator("dl.event-fields")
    shown = dict(
        zip(fields.locator("dt").all_inner_texts(), fields.locator("dd").all_inner_texts(), strict=True)
    )
    assert shown["principal"] == issued["token_id"]
    assert shown["surface"].startswith("mcp")
    assert shown["method"] == "tools/call"
    # Neither the argument's value nor the token is recorded (or shown).
    assert "a secret search term" not in page.content()
    assert issued["token"] not in page.content()


def test_the_audit_page_lists_operator_events(page: Any) -> None:
    # An operator action of this session, recorded by the gateway as it happens.
    page.goto("/console/tokens")
    page.get_by_label("Label").fill("audited in the browser")
    page.get_by_role("button", name="Create token").click()
    token_id = page.get_by_role("heading", name=re.compile("New token")).inner_text().split()[-1]
    page.goto("/console/activity")
    page.get_by_role("link", name="Audit").click()
    page.wait_for_url("**/console/audit?tenant=default")
    assert page.get_by_role("heading", level=1).inner_text() == "Audit"
    body = page.locator("table.audit tbody")
    refused = body.locator("tr", has_text="console.sign_in_refused")
    assert "refused" in refused.inner_text()
    assert "wrong operator key" in refused.inner_text()
    seeded = body.locator("tr", has_text="tok_browser")  # the seeded event (this session adds its own)
    assert "console operator" in seeded.inner_text()
    assert "config.save" not in body.inner_text()
    page.screenshot(path=str(SHOTS / "audit.png"), full_page=True)
    assert accessibility_problems(page) == []
    until_listed(page, body.locator("tr", has_text=token_id))
    created = body.locator("tr", has_text=token_id).inner_text()
    assert "token.create" in created
    assert "console" in created
    page.get_by_label("Outcome").select_option("refused")
    page.get_by_role("button", name="Filter").click()
    assert body.locator("tr").count() == 1
    # The console's own sign-in (this module's) is of no one tenant: listed under the console.
    page.get_by_label("Outcome").select_option("")
    page.get_by_label("Events of").select_option("deployment")
    page.get_by_role("button", name="Filter").click()
    until_listed(page, body.locator("tr", has_text="console.sign_in"))
    assert "token.create" not in body.inner_text()
    page.screenshot(path=str(SHOTS / "audit-console.png"), full_page=True)


def test_fleet_shows_each_servers_day_with_sparklines(page: Any) -> None:
    page.goto("/console/fleet")
    usage = page.locator("table.usage")
    crm = usage.locator("tr", has_text="crm")
    tickets = usage.locator("tr", has_text="tickets")
    assert crm.locator("svg.spark").count() == 3
    figures = tickets.locator(".figure").all_inner_texts()
    # tickets: 10 calls, 9 of them failed.
    assert figures[:2] == ["10", "90.0%"]
    page.screenshot(path=str(SHOTS / "fleet-usage.png"), full_page=True)
    crm.get_by_role("link", name="crm").click()
    page.wait_for_url("**/console/activity?tenant=default&server=crm")


def test_an_agent_token_opens_none_of_these_pages(served: Served, page: Any) -> None:
    token = subprocess.run(
        [sys.executable, "-m", "foldgate.app.cli", "token", "create", "--tenant", "default", "--db",
         str(served.tmp / "store.sqlite3")],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # A context of the module's browser (one Playwright per thread) without the session, with the token.
    agent = page.context.browser.new_context(
        base_url=served.base, extra_http_headers={"authorization": f"Bearer {token}"}
    )
    other = agent.new_page()
    for path in ("/console/activity", "/console/activity/new?tenant=default", "/console/audit"):
        other.goto(path)
        assert other.url.endswith("/console/login"), path
        assert "find_contact" not in other.content()
    agent.close()
