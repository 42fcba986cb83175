"""Fleet management in a real browser (Debian's headless chromium through Playwright) against `foldgate
serve` on a YAML config file over replay upstreams: add a server, edit it, disable/enable, untrust/trust,
quarantine/unquarantine and pin a tool's tier and loading, each landing in the file and followed by a
reindex the page shows; two pages open on one version (the second save refused with the current state);
an invalid edit refused naming the field; and an agent token that reaches none of the write routes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.browser import accessibility_problems, chromium_browser, need_chromium
from tests.procs import REPO, foldgate_serve, replay

pytestmark = pytest.mark.e2e

SHOTS = REPO / "test-output" / "console"


@dataclass
class Served:
    base: str
    tmp: Path
    key: str
    crm_url: str

    @property
    def config(self) -> Path:
        return self.tmp / "foldgate.yaml"

    def doc(self) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load(self.config.read_text())
        return loaded

    def server(self, name: str) -> dict[str, Any]:
        return next(s for s in self.doc()["servers"] if s["name"] == name)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    need_chromium()
    tmp = tmp_path_factory.mktemp("fleet")
    with ExitStack() as stack:
        rp = stack.enter_context(replay())
        config = {
            "routing_mode": "direct",
            "servers": [
                {"name": "crm", "url": rp.urls["crm"], "headers": {"X-Api-Key": "sk-literal-crm-0001"}},
                {"name": "tickets", "url": rp.urls["tickets"]},
            ],
        }
        # An hour between scheduled runs: every reindex here is the console's.
        base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "3600", timeout=60))
        yield Served(base, tmp, (tmp / "operator.key").read_text().strip(), rp.urls["crm"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium_browser() as chromium:
        yield chromium


def signed_in(browser: Any, served: Served) -> Any:
    """A new browser context signed in to the console; returns its first page."""
    context = browser.new_context(base_url=served.base, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto("/console/login")
    page.get_by_label("Operator key").fill(served.key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/fleet")
    return page


def reindexed(page: Any) -> None:
    page.wait_for_function(
        "() => /Reindex finished/.test(document.getElementById('reindex-status').textContent)"
    )


def saved(page: Any) -> None:
    assert page.locator("#save-status").inner_text().startswith("Saved to foldgate.yaml")
    reindexed(page)


def test_add_a_server_then_edit_it_from_the_fleet_page(browser: Any, served: Served) -> None:
    page = signed_in(browser, served)
    page.get_by_role("link", name="Add a server").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Add a server"
    assert "comments and layout are not kept" in page.content()
    page.get_by_label("Name", exact=True).fill("crm2")
    page.get_by_label("URL (streamable HTTP)").fill(served.crm_url)
    page.get_by_label("Tool loading").select_option("deferred")
    page.get_by_label("Enabled", exact=True).check()
    page.get_by_label("Trusted", exact=True).check()  # its first tools are approved as listed
    page.get_by_role("button", name="Add server").click()
    page.wait_for_url("**/console/fleet/server?*server=crm2*")
    saved(page)
    assert served.server("crm2") == {"name": "crm2", "url": served.crm_url, "tool_loading": "deferred"}
    # The reindex listed its tools: they are on its page to pin.
    page.reload()
    assert page.locator("table.pins tbody th", has_text="crm2__find_contact").count() == 1
    page.screenshot(path=str(SHOTS / "server.png"), full_page=True)
    assert accessibility_problems(page) == []
    page.get_by_label("Timeout (seconds)").fill("12.5")
    page.get_by_role("button", name="Save crm2").click()
    saved(page)
    assert served.server("crm2")["timeout_s"] == 12.5
    page.goto("/console/fleet")
    assert page.locator("table.servers tbody th", has_text="crm2").count() == 1
    page.context.close()


def test_a_server_added_with_a_name_and_a_url_only_is_saved_enabled(browser: Any, served: Served) -> None:
    page = signed_in(browser, served)
    page.get_by_role("link", name="Add a server").click()
    assert page.get_by_label("Enabled", exact=True).is_checked()
    assert not page.get_by_label("Trusted", exact=True).is_checked()
    page.get_by_label("Name", exact=True).fill("crm3")
    page.get_by_label("URL (streamable HTTP)").fill(served.crm_url)
    page.get_by_role("button", name="Add server").click()
    page.wait_for_url("**/console/fleet/server?*server=crm3*")
    saved(page)
    # Enabled (the default, so not written); left untrusted, as unticked.
    assert served.server("crm3") == {"name": "crm3", "url": served.crm_url, "trusted": False}
    page.context.close()


@pytest.mark.parametrize(
    ("flag", "first", "then", "after"),
    [
        ("enabled", "Disable", "Enable", False),
        ("trusted", "Untrust", "Trust", False),
        ("quarantined", "Quarantine", "Unquarantine", True),
    ],
)
def test_each_switch_flips_the_server_in_the_file_and_back(
    browser: Any, served: Served, flag: str, first: str, then: str, after: bool
) -> None:
    page = signed_in(browser, served)
    page.goto("/console/fleet/server?tenant=default&server=tickets")
    page.get_by_role("button", name=f"{first} tickets").click()
    saved(page)
    assert served.server("tickets")[flag] is after
    page.get_by_role("button", name=f"{then} tickets").click()
    saved(page)
    assert served.server("tickets").get(flag, not after) is (not after)
    page.context.close()


def test_pinning_a_tools_tier_and_loading_lands_in_the_file_and_shows_on_the_page(
    browser: Any, served: Served
) -> None:
    page = signed_in(browser, served)
    page.goto("/console/fleet/server?tenant=default&server=crm")
    page.get_by_label("Pinned tier of find_contact").select_option("destructive")
    page.get_by_label("Pinned loading of find_contact").select_option("true")
    page.get_by_role("button", name="Pin find_contact").click()
    saved(page)
    assert served.server("crm")["tools"] == {"find_contact": {"tier": "destructive", "defer_loading": True}}
    assert page.get_by_label("Pinned tier of find_contact").input_value() == "destructive"
    # The literal header stayed as written, and its value never reached the page.
    assert served.server("crm")["headers"] == {"X-Api-Key": "sk-literal-crm-0001"}
    assert "sk-literal" not in page.content()
    page.get_by_label("Pinned tier of find_contact").select_option("")
    page.get_by_label("Pinned loading of find_contact").select_option("")
    page.get_by_role("button", name="Pin find_contact").click()
    saved(page)
    assert "tools" not in served.server("crm")
    page.context.close()


def test_of_two_pages_shown_one_version_the_second_save_is_refused_with_the_current_state(
    browser: Any, served: Served
) -> None:
    first = signed_in(browser, served)
    second = first.context.new_page()
    for page in (first, second):
        page.goto("/console/fleet/server?tenant=default&server=crm")
    first.get_by_role("button", name="Disable crm").click()
    saved(first)
    written = served.config.read_text()
    second.get_by_role("button", name="Untrust crm").click()
    alert = second.get_by_role("alert")
    assert "changed since this page was shown" in alert.inner_text()
    assert served.config.read_text() == written
    # The refusal shows the current state: crm is disabled now (and still trusted).
    assert second.get_by_role("button", name="Enable crm").count() == 1
    assert second.get_by_role("button", name="Untrust crm").count() == 1
    second.screenshot(path=str(SHOTS / "server-stale.png"), full_page=True)
    second.get_by_role("button", name="Enable crm").click()
    saved(second)
    assert served.server("crm").get("enabled", True) is True
    first.context.close()


def test_an_invalid_edit_is_refused_naming_the_field_and_the_file_is_kept(
    browser: Any, served: Served
) -> None:
    page = signed_in(browser, served)
    page.goto("/console/fleet/server?tenant=default&server=tickets")
    before = served.config.read_text()
    page.get_by_label("URL (streamable HTTP)").fill("ftp://tickets.example")
    page.get_by_role("button", name="Save tickets").click()
    alert = page.get_by_role("alert").inner_text()
    assert "servers[tickets]" in alert
    assert "http(s) url" in alert
    assert served.config.read_text() == before
    page.context.close()


def test_an_agent_token_reaches_none_of_the_write_routes(browser: Any, served: Served) -> None:
    token = subprocess.run(
        [sys.executable, "-m", "foldgate.app.cli", "token", "create", "--tenant", "default", "--db",
         str(served.tmp / "store.sqlite3")],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    before = served.config.read_text()
    context = browser.new_context(base_url=served.base)
    page = context.new_page()
    # At the sign-in form the agent token is not the operator key.
    page.goto("/console/login")
    page.get_by_label("Operator key").fill(token)
    page.get_by_role("button", name="Sign in").click()
    assert page.get_by_role("alert").inner_text() == "That is not the operator key."
    # Sent as a bearer token to every write route, from the console's own origin: refused.
    form = {
        "tenant": "default",
        "server": "crm",
        "flag": "enabled",
        "value": "false",
        "name": "x",
        "tool": "t",
    }
    for route in ("switch", "edit", "add", "pin"):
        answer = context.request.post(
            f"/console/fleet/server/{route}",
            form=form,
            headers={"authorization": f"Bearer {token}", "origin": served.base},
        )
        assert answer.status == 403, route
    answer = context.request.post(
        "/console/budget/save",
        form={"tenant": "default"},
        headers={"authorization": f"Bearer {token}", "origin": served.base},
    )
    assert answer.status == 403
    assert served.config.read_text() == before
    context.close()
