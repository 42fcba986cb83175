"""End to end: a ``per_user`` OAuth upstream behind `foldgate serve` with agent tokens required. Each
agent token is its own end user; the operator's shared connection only lists the tools.

Pins: a user without a grant gets a tool error carrying a signed connect link (and the shared
connection is never used for their call); opening the link connects exactly that user; afterwards
each user's calls reach the upstream as themselves, on the direct surface and the code surface, and
user A's token is never used for user B (checked on the upstream's own record of who called).

The link is a capability a model (and anyone reading the conversation) sees, so: opening it shows a
confirmation page naming the server and the identity (a GET neither uses the link nor redirects);
only a POST from the browser that was shown the page proceeds; the link works once and lives ten
minutes; and the callback completes only in the browser that confirmed the link.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from foldgate.auth.secrets import load_secret
from foldgate.config.settings import Settings
from foldgate.upstream.oauth.connect_links import LINK_SECONDS, sign_connect_link
from tests.oauth_provider import consent
from tests.procs import foldgate_serve
from tests.upstream_oauth import LinkBrowser, Protected, protected_upstream

pytestmark = pytest.mark.e2e

LINK = re.compile(r"https?://\S+/oauth/connect\?\S+")


@dataclass
class Setup:
    base: str
    upstream: Protected
    tokens: dict[str, str]  # user -> agent token
    link_secret: bytes  # the gateway's token secret, which signs connect links


def _token(db: Path, label: str) -> str:
    cmd = [sys.executable, "-m", "foldgate.app.cli", "token", "create", "--tenant", "default",
           "--tier", "destructive", "--label", label, "--db", str(db)]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("per-user")
    db = tmp / "store.sqlite3"
    tokens = {user: _token(db, user) for user in ("a", "b", "c", "d", "e", "f", "g")}
    saved = os.environ.get("FOLDGATE_AUTH_REQUIRED")
    os.environ["FOLDGATE_AUTH_REQUIRED"] = "true"
    try:
        with ExitStack() as stack:
            upstream = stack.enter_context(protected_upstream(tmp))
            files = {"name": "files", "url": upstream.url, "auth": {"kind": "per_user"}}
            config = {"direct_tool_response_mode": "full", "servers": [files]}
            base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "600"))
            # The operator's shared connection lets the indexer list the tools.
            operator = {"authorization": f"Bearer {(tmp / 'operator.key').read_text().strip()}"}
            started = httpx2.post(f"{base}/api/v1/servers/files/connect", params={"tenant": "default"},
                                  headers=operator, timeout=30)  # fmt: skip
            assert started.status_code == 200, started.text
            _complete(started.json()["authorization_url"], base, "ops")
            httpx2.post(f"{base}/api/v1/reindex", json={"tenant": "default"}, headers=operator, timeout=60)
            yield Setup(base, upstream, tokens, load_secret(Settings(sqlite_path=str(db)), "token"))
    finally:
        if saved is None:
            os.environ.pop("FOLDGATE_AUTH_REQUIRED", None)
        else:
            os.environ["FOLDGATE_AUTH_REQUIRED"] = saved


def _complete(authorization_url: str, base: str, login: str) -> None:
    callback = base + "/oauth/callback"
    answer = asyncio.run(consent(authorization_url, callback, login))
    page = httpx2.get(callback, params=answer, timeout=30)
    assert page.status_code == 200, page.text


async def call(setup: Setup, user: str, path: str, name: str, arguments: dict[str, Any]) -> Any:
    http = create_mcp_http_client(headers={"authorization": f"Bearer {setup.tokens[user]}"})
    async with Client(streamable_http_client(setup.base + path, http_client=http)) as client:
        return await client.call_tool(name, arguments)


async def whoami(setup: Setup, user: str) -> Any:
    return await call(setup, user, "/mcp/all", "files__whoami", {})


async def fresh_link(setup: Setup, user: str) -> str:
    """The connect link in the tool error ``user`` gets while not connected."""
    refused = await whoami(setup, user)
    assert refused.is_error
    text = refused.content[0].text
    found = LINK.search(text)
    assert found is not None, text
    return found.group(0)


async def connect_with_link(setup: Setup, user: str, login: str) -> None:
    link = await fresh_link(setup, user)
    async with LinkBrowser(setup.base) as browser:
        done = await browser.connect(link, login)
    assert done.status_code == 200, done.text


def subjects(setup: Setup) -> list[str]:
    return [c["subject"] for c in setup.upstream.calls()]


async def test_each_user_reaches_the_upstream_as_themselves_and_never_as_another(setup: Setup) -> None:
    ran = len(setup.upstream.calls())
    first = await whoami(setup, "a")
    assert first.is_error
    assert "/oauth/connect?" in first.content[0].text
    assert len(setup.upstream.calls()) == ran  # the shared (operator) grant was not used for user a

    await connect_with_link(setup, "a", "alice")
    assert json.loads((await whoami(setup, "a")).content[0].text)["subject"] == "alice"

    # User b has no grant: refused with b's own link, never served with a's token.
    before_b = len(setup.upstream.calls())
    assert (await whoami(setup, "b")).is_error
    assert len(setup.upstream.calls()) == before_b

    await connect_with_link(setup, "b", "bob")
    assert json.loads((await whoami(setup, "b")).content[0].text)["subject"] == "bob"
    assert json.loads((await whoami(setup, "a")).content[0].text)["subject"] == "alice"
    assert "ops" not in subjects(setup)[ran:]  # the indexer's shared grant never served a user's call


async def test_the_code_surface_uses_the_callers_own_grant(setup: Setup) -> None:
    program = 'return await call_tool("files", "whoami", {});'
    for user, login in (("a", "alice"), ("b", "bob")):
        result = await call(setup, user, "/mcp/code", "code_execution", {"code": program})
        assert not result.is_error, result.content
        assert login in result.content[0].text


def test_a_forged_link_for_another_subject_is_refused(setup: Setup) -> None:
    response = httpx2.get(setup.base + "/oauth/connect",
                          params={"tenant": "default", "server": "files", "subject": "someone-else",
                                  "exp": "9999999999", "sig": "0" * 64}, timeout=10)  # fmt: skip
    assert response.status_code == 400
    assert "invalid or expired" in response.text


def link_params(link: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(link).query))


async def test_the_confirmation_page_names_server_and_identity_and_a_get_neither_uses_nor_redirects(
    setup: Setup,
) -> None:
    link = await fresh_link(setup, "c")
    subject = link_params(link)["subject"]
    async with LinkBrowser(setup.base) as browser:
        # A link previewer or chat unfurler fetches the link first: nothing may happen then.
        for _ in range(2):
            page, form = await browser.confirmation(link)
            assert page.status_code == 200, page.text
            assert "location" not in page.headers
        assert "files" in page.text
        assert "default" in page.text
        assert html.escape(subject) in page.text
        assert "works once" in page.text
        assert '<form method=post action="/oauth/connect">' in page.text
        assert "<script" not in page.text
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "frame-ancestors 'none'" in csp
        assert page.headers["cache-control"] == "no-store"
        assert page.headers["referrer-policy"] == "no-referrer"
        cookie = page.headers["set-cookie"].lower()
        assert "httponly" in cookie
        assert "samesite=lax" in cookie
        assert "path=/" in cookie
        assert "secure" not in cookie  # plain http on loopback: a browser would drop a Secure cookie
        assert set(form) >= {"tenant", "server", "subject", "exp", "nonce", "sig", "csrf"}
        # The GETs did not use the link: the person's confirmation still goes through.
        done = await browser.approve(await browser.confirm(form), "carol")
    assert done.status_code == 200, done.text
    assert json.loads((await whoami(setup, "c")).content[0].text)["subject"] == "carol"


async def test_a_link_works_once(setup: Setup) -> None:
    link = await fresh_link(setup, "d")
    async with LinkBrowser(setup.base) as browser:
        _, form = await browser.confirmation(link)
        started = await browser.confirm(form)
        assert started.status_code == 303, started.text
        again = await browser.confirm(form)  # the same browser, a second press (or a replay)
        assert again.status_code == 410
        assert "already used" in again.text
        assert (await browser.approve(started, "dave")).status_code == 200
    async with LinkBrowser(setup.base) as other:
        page, offered = await other.confirmation(link)  # another browser after the connect: a clear page
        replayed = await other.confirm(form)  # the first browser's form, without its cookie
    assert page.status_code == 410
    assert "already used" in page.text
    assert "call the tool again" in page.text.lower()
    assert offered == {}  # no form to confirm
    assert replayed.status_code == 403
    assert json.loads((await whoami(setup, "d")).content[0].text)["subject"] == "dave"


async def test_a_confirmation_from_a_browser_that_was_not_shown_the_page_is_refused(setup: Setup) -> None:
    """The form's token is bound to the page's cookie: a cross-site or copied POST does nothing, and
    does not use up the link."""
    link = await fresh_link(setup, "e")
    async with LinkBrowser(setup.base) as victim, LinkBrowser(setup.base) as attacker:
        _, form = await victim.confirmation(link)
        forged = await attacker.confirm(form)  # no cookie at all
        assert forged.status_code == 403
        _, own = await attacker.confirmation(link)
        swapped = await attacker.confirm({**form, "csrf": own["csrf"][::-1]})
        assert swapped.status_code == 403
        started = await victim.confirm(form)
        assert started.status_code == 303, started.text


async def test_a_callback_in_another_browser_is_refused_and_connects_nobody(setup: Setup) -> None:
    """Someone who got hold of the authorization response (or lured a victim into finishing their own
    flow) cannot complete it in a browser without the cookie of the one that confirmed the link."""
    link = await fresh_link(setup, "f")
    async with LinkBrowser(setup.base) as browser:
        _, form = await browser.confirmation(link)
        started = await browser.confirm(form)
        assert started.status_code == 303, started.text
        callback = setup.base + "/oauth/callback"
        answer = await consent(started.headers["location"], callback, "mallory")
    async with LinkBrowser(setup.base) as other:
        refused = await other.http.get(callback, params=answer)
    assert refused.status_code == 403
    assert "another browser" in refused.text
    assert (await whoami(setup, "f")).is_error  # nobody's account was connected for f
    async with LinkBrowser(setup.base) as late:  # and the flow is spent: a replay finds nothing
        assert (await late.http.get(callback, params=answer)).status_code in (400, 403)


async def test_an_expired_link_shows_a_clear_page(setup: Setup) -> None:
    subject = link_params(await fresh_link(setup, "g"))["subject"]
    stale = sign_connect_link(setup.link_secret, setup.base, "default", "files", subject,
                              now=time.time() - LINK_SECONDS - 5)  # fmt: skip
    fresh = sign_connect_link(setup.link_secret, setup.base, "default", "files", subject)
    async with LinkBrowser(setup.base) as browser:
        assert (await browser.confirmation(fresh))[0].status_code == 200  # the secret is the gateway's
        page, form = await browser.confirmation(stale)
        assert page.status_code == 400
        assert "invalid or expired" in page.text
        assert "call the tool again" in page.text
        assert form == {}
        posted = await browser.confirm(link_params(stale))
    assert posted.status_code == 400
    assert (await whoami(setup, "g")).is_error
