"""End to end: URL-mode elicitation for a ``per_user`` OAuth upstream the caller has not connected,
with the official MCP client against `foldgate serve` (real oidc-provider, real protected upstream).

Pins, per protocol era:

* 2026-07-28 with an elicitation callback (the client declares ``elicitation.url`` in ``_meta``): the
  call answers ``input_required`` with one URL-mode ``elicitation/create``; the callback opens the link
  and consents, the client retries on its own and the retry runs as the user who just connected; a
  user who declines gets the tool error on the retry, not another round.
* 2025-11-25 with an elicitation callback (declared in ``initialize``): the call answers JSON-RPC
  ``-32042`` whose ``data.elicitations`` carries the mode, an ``elicitationId``, the link and a
  message; after consenting through that link the same call succeeds.
* Clients without URL elicitation keep the tool error with the link, in both eras.
* A per_user server nobody shared is listed from its declared tools (status: ``declared``), and its
  declared tool is callable once the user connects through the elicitation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.procs import foldgate_serve
from tests.upstream_oauth import LinkBrowser, Protected, connect_as_operator, protected_upstream

pytestmark = pytest.mark.e2e

USERS = ("modern", "declines", "legacy", "plain", "plain-legacy", "notes")
# A second per_user server on the same upstream that nobody shared: listed from its declaration.
NOTES = {
    "name": "whoami",
    "description": "Who the upstream thinks you are.",
    "inputSchema": {"type": "object"},
}


@dataclass
class Setup:
    base: str
    upstream: Protected
    tokens: dict[str, str]  # user -> agent token
    operator: dict[str, str]  # the operator's credential header


def _token(db: Path, label: str) -> str:
    cmd = [sys.executable, "-m", "foldgate.app.cli", "token", "create", "--tenant", "default",
           "--tier", "destructive", "--label", label, "--db", str(db)]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("elicit")
    db = tmp / "store.sqlite3"
    tokens = {user: _token(db, user) for user in USERS}
    saved = os.environ.get("FOLDGATE_AUTH_REQUIRED")
    os.environ["FOLDGATE_AUTH_REQUIRED"] = "true"
    try:
        with ExitStack() as stack:
            upstream = stack.enter_context(protected_upstream(tmp))
            files = {"name": "files", "url": upstream.url, "auth": {"kind": "per_user"}}
            notes = {"name": "notes", "url": upstream.url, "auth": {"kind": "per_user", "tools": [NOTES]}}
            config = {"direct_tool_response_mode": "full", "servers": [files, notes]}
            base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "600"))
            operator = connect_as_operator(base, tmp)
            yield Setup(base, upstream, tokens, operator)
    finally:
        if saved is None:
            os.environ.pop("FOLDGATE_AUTH_REQUIRED", None)
        else:
            os.environ["FOLDGATE_AUTH_REQUIRED"] = saved


async def open_link(setup: Setup, link: str, login: str) -> None:
    """What the user's browser does with a connect link: sign in and approve at the real provider."""
    async with LinkBrowser(setup.base) as browser:
        done = await browser.connect(link, login)
    assert done.status_code == 200, done.text


@dataclass
class Browser:
    """An elicitation callback that records each request and opens the link (or declines)."""

    setup: Setup
    login: str
    action: Literal["accept", "decline"] = "accept"
    seen: list[types.ElicitRequestParams] = field(default_factory=list)

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.seen.append(params)
        if self.action == "accept" and isinstance(params, types.ElicitRequestURLParams):
            await open_link(self.setup, params.url, self.login)
        return types.ElicitResult(action=self.action)


def client(setup: Setup, user: str, *, browser: Browser | None = None, legacy: bool = False) -> Client:
    http = create_mcp_http_client(headers={"authorization": f"Bearer {setup.tokens[user]}"})
    return Client(
        streamable_http_client(setup.base + "/mcp/all", http_client=http),
        elicitation_callback=browser,
        mode="legacy" if legacy else "auto",
    )


def subject_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result.content
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    subject: str = json.loads(text.text)["subject"]
    return subject


async def test_a_modern_client_is_asked_to_open_the_link_and_its_retry_runs_as_the_user(setup: Setup) -> None:
    browser = Browser(setup, "mona")
    async with client(setup, "modern", browser=browser) as agent:
        result = await agent.call_tool("files__whoami", {})
    assert subject_of(result) == "mona"  # one call: asked, connected, retried by the client
    assert len(browser.seen) == 1
    asked = browser.seen[0]
    assert isinstance(asked, types.ElicitRequestURLParams)
    assert "/oauth/connect?" in asked.url
    assert "files" in asked.message


async def test_a_declined_elicitation_ends_in_the_tool_error_not_another_round(setup: Setup) -> None:
    browser = Browser(setup, "dora", action="decline")
    async with client(setup, "declines", browser=browser) as agent:
        result = await agent.call_tool("files__whoami", {})
    assert result.is_error
    assert len(browser.seen) == 1
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert "/oauth/connect?" in text.text


async def test_a_2025_11_25_client_gets_32042_with_the_link(setup: Setup) -> None:
    browser = Browser(setup, "lee")
    async with client(setup, "legacy", browser=browser, legacy=True) as agent:
        with pytest.raises(MCPError) as refused:
            await agent.call_tool("files__whoami", {})
        error = refused.value.error
        assert error.code == -32042
        assert isinstance(error.data, dict)
        (elicitation,) = error.data["elicitations"]
        assert elicitation["mode"] == "url"
        assert elicitation["elicitationId"]
        assert "/oauth/connect?" in elicitation["url"]
        assert elicitation["message"]
        assert browser.seen == []  # -32042 is an answer for the client to act on, not a callback
        await open_link(setup, elicitation["url"], "lee")
        assert subject_of(await agent.call_tool("files__whoami", {})) == "lee"


@pytest.mark.parametrize("legacy", [False, True], ids=["2026-07-28", "2025-11-25"])
async def test_a_client_without_url_elicitation_keeps_the_tool_error(setup: Setup, legacy: bool) -> None:
    user = "plain-legacy" if legacy else "plain"
    async with client(setup, user, legacy=legacy) as agent:
        result = await agent.call_tool("files__whoami", {})
    assert result.is_error
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    body = json.loads(text.text)
    assert body["error_type"] == "upstream_needs_consent"
    assert body["server"] == "files"
    assert "/oauth/connect?" in body["connect_url"]


async def test_a_server_nobody_shared_is_listed_from_its_declaration_and_callable_after_consent(
    setup: Setup,
) -> None:
    status = httpx2.get(f"{setup.base}/api/v1/status", params={"tenant": "default"}, headers=setup.operator)
    servers = status.json()["servers"]
    assert servers["notes"]["listing"] == "declared"
    assert servers["files"]["listing"] == "fetched"
    browser = Browser(setup, "nora")
    async with client(setup, "notes", browser=browser) as agent:
        listed = {t.name for t in (await agent.list_tools()).tools}
        assert "notes__whoami" in listed
        result = await agent.call_tool("notes__whoami", {})
    assert subject_of(result) == "nora"
    assert len(browser.seen) == 1
