"""End to end: per-user connect links in a tenant whose agents sign in with OAuth (the tenant's issuer
is a real oidc-provider on loopback, which is also the upstream's authorization server).

Pins: before the upstream consent, the person signs in at the tenant's issuer with foldgate's sign-in
client (``oauth.login``); an ID token for anyone but the link's subject is refused with a clear page
and connects nobody; signing in as the subject goes on to the upstream consent and connects exactly
them; the sign-in, too, completes only in the browser that confirmed the link.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from foldgate.dev.procs import free_port
from tests.oauth_provider import Provider, consent
from tests.procs import foldgate_serve
from tests.upstream_oauth import LinkBrowser, Protected, connect_as_operator, protected_upstream

pytestmark = pytest.mark.e2e

LINK = re.compile(r"https?://\S+/oauth/connect\?\S+")
SIGNIN = "/oauth/signin/callback"


@dataclass
class Setup:
    base: str
    upstream: Protected

    @property
    def provider(self) -> Provider:
        return self.upstream.provider

    def token(self, sub: str) -> str:
        """An agent's access token for ``sub`` from the tenant's issuer (signed with its own key)."""
        claims = self.provider.claims(self.base + "/mcp/all", sub=sub, scope="foldgate:destructive")
        return self.provider.sign(claims)


def _register_login_client(provider: Provider, redirect_uri: str) -> str:
    """The operator's step: a public sign-in client at the tenant's issuer (RFC 7591 here)."""
    doc = {"redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none",
           "grant_types": ["authorization_code"], "response_types": ["code"]}  # fmt: skip
    answer = httpx2.post(provider.issuer + "/reg", json=doc, timeout=10)
    assert answer.status_code == 201, answer.text
    client_id: str = answer.json()["client_id"]
    return client_id


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("per-user-signin")
    saved = os.environ.get("FOLDGATE_AUTH_REQUIRED")
    os.environ["FOLDGATE_AUTH_REQUIRED"] = "true"
    try:
        with ExitStack() as stack:
            upstream = stack.enter_context(protected_upstream(tmp))
            port = free_port()
            login = _register_login_client(upstream.provider, f"http://127.0.0.1:{port}{SIGNIN}")
            files = {"name": "files", "url": upstream.url, "auth": {"kind": "per_user"}}
            inbound = {"issuer": upstream.provider.issuer, "login": {"client_id": login}}
            config = {"direct_tool_response_mode": "full", "servers": [files], "oauth": inbound}
            base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "600", port=port))
            connect_as_operator(base, tmp)
            yield Setup(base, upstream)
    finally:
        if saved is None:
            os.environ.pop("FOLDGATE_AUTH_REQUIRED", None)
        else:
            os.environ["FOLDGATE_AUTH_REQUIRED"] = saved


async def whoami(setup: Setup, sub: str) -> Any:
    http = create_mcp_http_client(headers={"authorization": f"Bearer {setup.token(sub)}"})
    async with Client(streamable_http_client(setup.base + "/mcp/all", http_client=http)) as client:
        return await client.call_tool("files__whoami", {})


async def fresh_link(setup: Setup, sub: str) -> str:
    refused = await whoami(setup, sub)
    assert refused.is_error
    found = LINK.search(refused.content[0].text)
    assert found is not None, refused.content[0].text
    return found.group(0)


async def test_signing_in_as_someone_else_is_refused_and_connects_nobody(setup: Setup) -> None:
    link = await fresh_link(setup, "alice")
    async with LinkBrowser(setup.base) as browser:
        page, form = await browser.confirmation(link)
        assert page.status_code == 200, page.text
        assert f"You will first sign in at {setup.provider.issuer}" in page.text
        started = await browser.confirm(form)
        assert started.status_code == 303, started.text
        location = started.headers["location"]
        assert location.startswith(setup.provider.issuer)
        assert "prompt=login" in location
        # Mallory opened Alice's link (it was in a shared transcript) and signs in as herself.
        answer = await consent(location, setup.base + SIGNIN, "mallory")
        refused = await browser.http.get(setup.base + SIGNIN, params=answer)
    assert refused.status_code == 403
    assert "someone other than the person this link was made for" in refused.text
    assert "location" not in refused.headers
    assert (await whoami(setup, "alice")).is_error  # nothing was connected for alice


async def test_a_sign_in_finished_in_another_browser_is_refused(setup: Setup) -> None:
    link = await fresh_link(setup, "bob")
    async with LinkBrowser(setup.base) as browser:
        _, form = await browser.confirmation(link)
        started = await browser.confirm(form)
        answer = await consent(started.headers["location"], setup.base + SIGNIN, "bob")
    async with LinkBrowser(setup.base) as other:
        refused = await other.http.get(setup.base + SIGNIN, params=answer)
    assert refused.status_code == 403
    assert "another browser" in refused.text
    assert (await whoami(setup, "bob")).is_error


async def test_signing_in_as_the_links_subject_connects_exactly_them(setup: Setup) -> None:
    link = await fresh_link(setup, "carol")
    async with LinkBrowser(setup.base) as browser:
        done = await browser.connect(link, "carol")
    assert done.status_code == 200, done.text
    result = await whoami(setup, "carol")
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text)["subject"] == "carol"
    assert (await whoami(setup, "dave")).is_error  # carol's grant is hers alone
