"""The per-user connect routes in process (no authorization server is reached in these tests): the
confirmation page escapes everything it shows, and a tenant whose people sign in with OAuth but that
configured no sign-in client refuses their connects without using the link. The flows through real
authorization servers are in tests/e2e/test_upstream_oauth_per_user*.py."""

from __future__ import annotations

import contextlib
import html
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2

from foldgate.auth.oauth.grant import oauth_subject
from foldgate.config.oauth import OAuthConfig
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.app import create_app
from foldgate.edge.connect import oauth_client_router
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.grants.base import PendingConsent
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.oauth.connect_links import sign_connect_link
from tests.gateway_fixture import RecordingUpstream
from tests.upstream_oauth import PUBLIC, LinkBrowser, grant_store, oauth_context

SECRET = b"s" * 32
ISSUER = "https://login.example.com"


@contextlib.asynccontextmanager
async def gateway(tmp: Path, **tenant: Any) -> AsyncIterator[tuple[LinkBrowser, SqliteGrantStore]]:
    """The public OAuth client routes over one tenant with a per_user server ``files``."""
    files = {"name": "files", "url": "https://files.example.com/mcp", "auth": {"kind": "per_user"}}
    config = parse_tenant_config({"servers": [files], **tenant})
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", []), expected_current=None)
    configs = StaticConfigSource({"default": config})
    gw = Gateway(store, configs, RecordingUpstream(), catalog_ttl=0.0)
    app = create_app(gw)

    def issuers(name: str) -> OAuthConfig | None:
        return configs.get(name).oauth

    with grant_store(tmp) as grants:
        app.include_router(oauth_client_router(gw, oauth_context(grants), SECRET, issuers))
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=PUBLIC)
        async with LinkBrowser(PUBLIC, http) as browser:
            yield browser, grants


async def test_the_confirmation_page_escapes_what_it_names(tmp_path: Path) -> None:
    hostile = '<script>alert("x")</script>'
    link = sign_connect_link(SECRET, PUBLIC, "default", "files", hostile)
    async with gateway(tmp_path) as (browser, _):
        page, form = await browser.confirmation(link)
    assert page.status_code == 200, page.text
    assert "<script" not in page.text
    assert html.escape(hostile) in page.text
    assert form["subject"] == hostile  # the hidden field carries it back intact


async def test_without_a_sign_in_client_an_oauth_tenants_connect_is_refused_and_the_link_kept(
    tmp_path: Path,
) -> None:
    """Nobody can prove they are the link's subject, so nothing starts; the link stays unused so it
    works once the operator configures ``oauth.login``."""
    subject = oauth_subject(ISSUER, "alice")
    link = sign_connect_link(SECRET, PUBLIC, "default", "files", subject)
    async with gateway(tmp_path, oauth={"issuer": ISSUER}) as (browser, grants):
        page, form = await browser.confirmation(link)
        assert page.status_code == 200, page.text
        assert f"You will first sign in at {ISSUER}" in page.text
        for _ in range(2):
            refused = await browser.confirm(form)
            assert refused.status_code == 409
            assert "oauth.login.client_id" in refused.text
        nonce = dict(parse_qsl(urlsplit(link).query))["nonce"]
        assert grants.use_link(nonce, 2_000_000_000.0)  # never marked used by the refusals


async def test_an_agent_tokens_link_needs_no_sign_in_even_in_an_oauth_tenant(tmp_path: Path) -> None:
    """An agent token's subject is nobody at the issuer: its link goes straight to the upstream."""
    link = sign_connect_link(SECRET, PUBLIC, "default", "files", "tok-123")
    async with gateway(tmp_path, oauth={"issuer": ISSUER}) as (browser, _):
        page, _ = await browser.confirmation(link)
    assert page.status_code == 200
    assert "sign in at" not in page.text
    assert "the agent token tok-123" in page.text


def _pending(state: str, browser: str | None, purpose: str = "consent") -> PendingConsent:
    return PendingConsent(
        state, "default", "files", "bob", "v" * 43, PUBLIC + "/oauth/callback", ISSUER, None, None,
        time.time() + 600, browser=browser, purpose=purpose,  # type: ignore[arg-type]
    )  # fmt: skip


async def test_a_refusal_ends_a_flow_only_in_the_browser_it_is_bound_to(tmp_path: Path) -> None:
    # Someone who learnt a flow's state must not end another person's consent or sign-in with ?error=.
    async with gateway(tmp_path) as (browser, grants):
        grants.put_pending(_pending("s-consent", "a" * 64))
        grants.put_pending(_pending("s-login", "b" * 64, purpose="login"))
        grants.put_pending(_pending("s-operator", None))
        for path, state in (("/oauth/callback", "s-consent"), ("/oauth/signin/callback", "s-login")):
            answer = await browser.http.get(path, params={"state": state, "error": "access_denied"})
            assert answer.status_code == 400
        # A consent's state sent to the sign-in callback is not a sign-in to end either.
        await browser.http.get("/oauth/signin/callback", params={"state": "s-operator", "error": "x"})
        assert grants.take_pending("s-consent") is not None
        assert grants.take_pending("s-login") is not None
        # An operator's connect is bound to no browser: the refusal ends it at its own callback.
        await browser.http.get("/oauth/callback", params={"state": "s-operator", "error": "access_denied"})
        assert grants.take_pending("s-operator") is None
