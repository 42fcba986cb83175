"""The tool, Try it, prompt, resource and Connect pages in a real browser (Debian's headless chromium
through Playwright) against `foldgate serve` over real upstreams on loopback (npm server-everything and
replay upstreams): every page renders with the console's headers and passes the accessibility check;
the fleet links to a tool's page; Try it calls as a chosen token and shows the agent's exact answer
(a valid call, the self-healing error on bad arguments, a destructive tool's confirmation, a token
whose scope excludes the server refused as its agent is); the Connect page's copy button copies a
snippet whose Python (and TypeScript), with a real token in place of the placeholder, lists the token's
tools; a new
token's page shows its snippets once."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser import accessibility_problems, chromium_browser, need_chromium
from tests.node_clients import CONFORMANCE_DIR, need_node_clients
from tests.procs import REPO, Replay, foldgate_serve, replay

pytestmark = pytest.mark.e2e

SHOTS = REPO / "test-output" / "console"


@dataclass
class Served:
    base: str
    tmp: Path
    crm: Replay
    operator_key: str


@dataclass
class Ui:
    served: Served
    page: Any


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, everything_url: str) -> Iterator[Served]:
    need_chromium()
    tmp = tmp_path_factory.mktemp("tool-pages")
    with ExitStack() as stack:
        everything = everything_url
        crm = stack.enter_context(replay())
        config = {
            "routing_mode": "direct",
            "servers": [
                {"name": "everything", "url": everything, "timeout_s": 10, "trusted": True},
                {"name": "crm", "url": crm.urls["crm"], "trusted": True},
                {"name": "tickets", "url": crm.urls["tickets"], "trusted": True},
            ],
        }
        base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "3600", timeout=60))
        key = (tmp / "operator.key").read_text().strip()
        yield Served(base, tmp, crm, key)


@pytest.fixture(scope="module")
def ui(served: Served) -> Iterator[Ui]:
    """One browser for the module, signed in once, allowed to use the clipboard."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium_browser() as browser:
        context = browser.new_context(base_url=served.base, viewport={"width": 1280, "height": 900})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.base)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto("/console/login")
        page.get_by_label("Operator key").fill(served.operator_key)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/console/fleet")
        yield Ui(served, page)
        context.close()


def agent_token(served: Served, *args: str) -> dict[str, Any]:
    """A real agent token and its grant, issued by the CLI into the gateway's store."""
    out = subprocess.run(
        [sys.executable, "-m", "foldgate.app.cli", "token", "create", "--tenant", "default", "--json",
         "--db", str(served.tmp / "store.sqlite3"), *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found: dict[str, Any] = json.loads(out.stdout)
    return found


def token_id(grant: dict[str, Any]) -> str:
    return str(grant["token_id"])


def try_as(page: Any, tool: str, token: str, arguments: str) -> None:
    page.goto(f"/console/tools/{tool}")
    page.get_by_label("Call as").select_option(token)
    page.get_by_label("Arguments (JSON)").fill(arguments)
    page.get_by_role("button", name=f"Call {tool}").click()


def appears(page: Any, path: str, text: str) -> None:
    """Wait until the console page at ``path`` shows ``text`` (polled from the page, no reload)."""
    # A synchronous request: the predicate must answer true or false, not a promise (always truthy).
    page.wait_for_function(
        "([path, text]) => { const r = new XMLHttpRequest(); r.open('GET', path, false); r.send();"
        " return r.responseText.includes(text); }",
        arg=[path, text], polling=250, timeout=20_000,
    )  # fmt: skip


def result_of(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(page.locator("#try-result").inner_text())
    return found


@pytest.mark.parametrize(
    ("path", "heading"),
    [
        ("tools", "Tools"),
        ("tools/crm__find_contact", "crm__find_contact"),
        ("prompts", "Prompts"),
        ("resources", "Resources"),
        ("connect", "Connect a client"),
    ],
)
def test_every_new_page_renders_with_strict_headers_and_passes_the_accessibility_check(
    ui: Ui, path: str, heading: str
) -> None:
    response = ui.page.goto(f"/console/{path}")
    assert response is not None
    assert response.status == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert ui.page.get_by_role("heading", level=1).inner_text() == heading
    ui.page.screenshot(path=str(SHOTS / f"{path.replace('/', '-')}.png"), full_page=True)
    assert accessibility_problems(ui.page) == []


def test_the_fleet_links_to_a_servers_tools_and_each_tool_to_what_an_agent_gets(ui: Ui) -> None:
    page = ui.page
    page.goto("/console/fleet")
    row = page.locator("table.servers tbody tr", has_text="crm")
    # The row's tool count links to the server's tools (its name opens the server's settings).
    row.locator("td.num").first.get_by_role("link").click()
    page.wait_for_url("**/console/tools?**server=crm")
    page.get_by_role("link", name="crm__find_contact").click()
    page.wait_for_url("**/console/tools/crm__find_contact?**")
    facts = page.locator("dl.facts").inner_text()
    assert "read, from its annotations" in facts
    assert "find_contact(" in facts
    full = json.loads(page.locator("#entry-full").inner_text())
    assert full["name"] == "crm__find_contact"
    assert full["inputSchema"]["required"] == ["query"]


def test_try_it_as_a_token_shows_the_agents_answer_and_is_recorded(ui: Ui) -> None:
    page, crm = ui.page, ui.served.crm
    grant = agent_token(ui.served, "--servers", "crm", "--tier", "read", "--label", "try-it")
    crm.clear()
    try_as(page, "crm__find_contact", token_id(grant), '{"query": "ada"}')
    assert page.locator("#result-h").inner_text().endswith("ok")
    assert result_of(page)["isError"] is False
    assert [c["arguments"] for c in crm.calls()] == [{"query": "ada"}]
    # Recorded as the call it is (the token's, on the console) and as the operator's action, once the
    # activity log's buffered writer has flushed them.
    appears(page, "/console/tools/crm__find_contact", f"as {token_id(grant)}: ok")
    page.goto("/console/tools/crm__find_contact")
    history = page.get_by_role("table", name="Approvals and operator actions").inner_text()
    assert "tool.try" in history
    assert f"as {token_id(grant)}: ok" in history
    # The call itself is among the tool's recent calls, under the token's id and the console surface.
    recent = page.locator("table", has_text="calls of this tool").inner_text()
    assert token_id(grant) in recent
    assert "console" in recent


def test_bad_arguments_show_the_self_healing_error_and_reach_no_upstream(ui: Ui) -> None:
    page, crm = ui.page, ui.served.crm
    crm.clear()
    try_as(page, "crm__find_contact", "", '{"limit": "many"}')
    result = result_of(page)
    assert result["isError"] is True
    body = json.loads(result["content"][0]["text"])
    assert body["error_type"] == "invalid_params"
    assert "describe_tool" in body["hint"]
    assert body["input_schema"]["required"] == ["query"]
    assert crm.calls() == []


def test_a_destructive_tool_asks_for_confirmation_before_it_is_called(ui: Ui) -> None:
    page, crm = ui.page, ui.served.crm
    crm.clear()
    try_as(page, "crm__delete_contact", "", '{"id": "c-1"}')
    alert = page.get_by_role("alert")
    assert "crm__delete_contact is destructive" in alert.inner_text()
    assert crm.calls() == []
    page.get_by_role("button", name="Yes, call crm__delete_contact").click()
    assert result_of(page)["isError"] is False
    assert [c["arguments"] for c in crm.calls()] == [{"id": "c-1"}]


def test_a_token_whose_scope_excludes_the_server_is_refused_as_its_agent_is(ui: Ui) -> None:
    page, crm = ui.page, ui.served.crm
    grant = agent_token(ui.served, "--servers", "tickets", "--tier", "destructive")
    crm.clear()
    try_as(page, "crm__delete_contact", token_id(grant), '{"id": "c-1"}')
    # No confirmation: the token could not call it, so nothing would change upstream.
    assert page.get_by_role("button", name="Yes, call crm__delete_contact").count() == 0
    result = result_of(page)
    assert result["isError"] is True
    assert "crm__delete_contact" in result["content"][0]["text"]
    assert crm.calls() == []


def test_the_connect_pages_copied_python_snippet_lists_the_tokens_tools(ui: Ui) -> None:
    page = ui.page
    page.goto("/console/connect")
    python = page.locator(".snippet", has_text="Python SDK").first
    button = python.get_by_role("button", name="Copy")
    button.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('button.copy')].some(b => b.textContent === 'Copied')"
    )
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied == python.locator("pre").inner_text()
    assert "<YOUR_AGENT_TOKEN>" in copied
    token = agent_token(ui.served, "--servers", "crm", "--tier", "read")["token"]
    run = subprocess.run(
        [sys.executable, "-c", copied.replace("<YOUR_AGENT_TOKEN>", token)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "crm__find_contact" in run.stdout
    assert "crm__delete_contact" not in run.stdout  # the token's tier, as for any of its agents


def test_a_new_tokens_page_shows_its_snippets_once(ui: Ui) -> None:
    page = ui.page
    page.goto("/console/tokens")
    page.get_by_role("button", name="Create token").click()
    token = page.get_by_role("textbox", name="Token", exact=True).input_value()
    claude = page.locator(".snippet", has_text="Claude Code").first.locator("pre").inner_text()
    assert f"Authorization: Bearer {token}" in claude
    assert claude.startswith(f"claude mcp add --transport http foldgate {ui.served.base}/mcp/all")
    page.goto("/console/tokens")
    assert token not in page.content()


def test_the_connect_pages_typescript_snippet_lists_the_tokens_tools(ui: Ui) -> None:
    node = need_node_clients()
    page = ui.page
    page.goto("/console/connect")
    snippet = page.locator(".snippet", has_text="TypeScript SDK").first.locator("pre").inner_text()
    token = agent_token(ui.served, "--servers", "crm", "--tier", "read")["token"]
    # Beside the pinned TypeScript SDK (tests/conformance/node_modules), which the import resolves to.
    with tempfile.NamedTemporaryFile("w", suffix=".mjs", dir=CONFORMANCE_DIR) as script:
        script.write(snippet.replace("<YOUR_AGENT_TOKEN>", token))
        script.flush()
        run = subprocess.run([str(node), script.name], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "crm__find_contact" in run.stdout
    assert "crm__delete_contact" not in run.stdout
