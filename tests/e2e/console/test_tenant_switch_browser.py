"""Switching tenant from the console's header, in a real browser (Debian's headless chromium through
Playwright) against a gateway of two tenants served on loopback from this process (uvicorn in a
thread; each tenant's catalog published into its SQLite store): the tenant chosen in the header stays
the session's for every page until another is chosen, a tenant the gateway does not have is refused on
every request (a console 404, never kept as the choice), a forged choice falls back to the first tenant,
and the choice ends with the session."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from foldgate.auth.authority import TokenAuthority
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.app import create_app
from foldgate.edge.console.routes import ConsoleDeps, console_router
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.agent_token import TokenHasher
from foldgate.serve.gateway import Gateway
from foldgate.store.approvals.sqlite import SqliteApprovalStore
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.browser import accessibility_problems, chromium_browser, need_chromium
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

pytestmark = pytest.mark.e2e

OPERATOR_KEY = "op-" + "s" * 40


def two_tenants(tmp: Path) -> tuple[Any, TokenAuthority]:
    """The console's app over tenants ``default`` (the demo's crm and tickets) and ``zeta`` (one
    server, billing, listing the demo's tickets tools), and its token authority."""
    store = SqliteStore(tmp / "catalog.sqlite3")
    tools = demo_tools()
    billing = [dataclasses.replace(t, server="billing") for t in tools if t.server == "tickets"]
    store.publish(catalog_from_tools("default", tools), expected_current=None)
    store.publish(catalog_from_tools("zeta", billing), expected_current=None)
    zeta = parse_tenant_config({"servers": [{"name": "billing", "url": "http://127.0.0.1:9/billing/mcp"}]})
    configs = StaticConfigSource({"default": demo_config(), "zeta": zeta})
    gateway = Gateway(store, configs, RecordingUpstream(), catalog_ttl=0.0)
    tokens = TokenAuthority(SqliteTokenStore(tmp / "tokens.sqlite3"), TokenHasher(b"t" * 32))
    deps = ConsoleDeps(
        gateway,
        OPERATOR_KEY.encode(),
        approvals=SqliteApprovalStore(tmp / "approvals.sqlite3"),
        tokens=tokens,
    )
    return create_app(gateway, console=console_router(deps)), tokens


@dataclass
class Served:
    base: str
    tokens: TokenAuthority


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The two-tenant gateway on a free loopback port, in a thread of this process."""
    need_chromium()
    app, tokens = two_tenants(tmp_path_factory.mktemp("tenants"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:  # uvicorn offers no event to wait on; bounded and checked
        assert thread.is_alive(), "the gateway died on startup"
        assert time.monotonic() < deadline, "the gateway did not start"
        time.sleep(0.02)
    try:
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}", tokens)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def base(served: Served) -> str:
    return served.base


@pytest.fixture(scope="module")
def browser(base: str) -> Iterator[Any]:
    with chromium_browser() as b:
        yield b


def signed_in(browser: Any, base: str) -> Any:
    page = browser.new_context(base_url=base).new_page()
    page.set_default_timeout(10_000)
    page.goto("/console/login")
    page.get_by_label("Operator key").fill(OPERATOR_KEY)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/fleet")
    return page


def servers(page: Any) -> list[str]:
    return [r.split()[0] for r in page.locator("table.servers tbody th[scope=row]").all_inner_texts()]


def chosen(page: Any) -> str:
    """The tenant the header's selector shows."""
    return str(page.get_by_label("Tenant").input_value())


def test_the_tenant_chosen_in_the_header_is_every_pages_tenant_until_another_is_chosen(
    browser: Any, base: str
) -> None:
    page = signed_in(browser, base)
    assert (chosen(page), servers(page)) == ("default", ["crm", "tickets"])
    page.get_by_label("Tenant").select_option("zeta")
    page.get_by_role("button", name="Switch").click()
    page.wait_for_url("**/console/fleet?tenant=zeta")
    assert servers(page) == ["billing"]
    assert accessibility_problems(page) == []
    # Pages opened afresh (a bookmark, a typed URL, a redirect after sign-in) are about zeta too.
    page.goto("/console/tokens")
    assert page.get_by_role("heading", name="Tokens of zeta").is_visible()
    assert page.get_by_role("checkbox", name="billing").is_visible()
    page.goto("/console/budget")
    assert chosen(page) == "zeta"
    assert set(page.locator("table.tools tbody th").all_inner_texts()) == {
        "billing__list_tickets",
        "billing__update_ticket",
    }
    page.goto("/console/fleet")
    assert servers(page) == ["billing"]
    # Back to the first tenant the same way.
    page.get_by_label("Tenant").select_option("default")
    page.get_by_role("button", name="Switch").click()
    page.wait_for_url("**/console/fleet?tenant=default")
    page.goto("/console/approvals")
    assert chosen(page) == "default"
    page.context.close()


def test_a_tenant_the_gateway_does_not_have_is_refused_and_never_becomes_the_choice(
    browser: Any, base: str
) -> None:
    page = signed_in(browser, base)
    page.goto("/console/fleet?tenant=zeta")
    response = page.goto("/console/fleet?tenant=nope")
    assert response is not None
    assert response.status == 404
    assert page.get_by_role("heading", level=1).inner_text() == "Page not found"
    page.goto("/console/fleet")
    assert servers(page) == ["billing"]
    # A forged choice (the cookie edited by hand) names no tenant of this gateway: the first is shown.
    page.context.add_cookies([{"name": "foldgate_console_tenant", "value": "nope", "url": base + "/console"}])
    page.goto("/console/fleet")
    assert (chosen(page), servers(page)) == ("default", ["crm", "tickets"])
    assert "nope" not in page.content()
    page.context.close()


def test_switching_from_a_forms_result_page_opens_that_page_for_the_other_tenant(
    browser: Any, served: Served
) -> None:
    _, grant = served.tokens.issue("default", expires_in=None, label="switch")
    page = signed_in(browser, served.base)
    page.goto("/console/tokens")
    # A revocation answers on the form's own URL (/console/tokens/revoke, POST only).
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=f"Revoke {grant.token_id}").click()
    page.wait_for_url("**/console/tokens/revoke")
    page.get_by_label("Tenant").select_option("zeta")
    page.get_by_role("button", name="Switch").click()
    page.wait_for_url("**/console/tokens?tenant=zeta")
    assert page.get_by_role("heading", name="Tokens of zeta").is_visible()
    page.context.close()


def test_the_choice_ends_with_the_session(browser: Any, base: str) -> None:
    page = signed_in(browser, base)
    page.goto("/console/fleet?tenant=zeta")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/console/login?signed_out=1")
    page.get_by_label("Operator key").fill(OPERATOR_KEY)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/fleet")
    assert chosen(page) == "default"
    page.context.close()
