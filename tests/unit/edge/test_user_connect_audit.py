"""A person confirming a per-user connect link is an audit event of their browser naming the identity
the grant will serve; a link used twice, or a confirmation from another browser, is a refused one."""

from __future__ import annotations

from pathlib import Path

import httpx2

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.app import create_app
from foldgate.edge.connect import oauth_client_router
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.oauth.connect_links import sign_connect_link
from tests.gateway_fixture import RecordingUpstream
from tests.recorders import ListRecorder
from tests.upstream_oauth import PUBLIC, LinkBrowser, grant_store, oauth_context

SECRET = b"s" * 32


async def test_confirming_a_connect_link_is_an_event_of_the_browser(tmp_path: Path) -> None:
    # Nothing listens on port 9: the consent cannot start, after the confirmation was recorded.
    files = {"name": "files", "url": "http://127.0.0.1:9/mcp", "auth": {"kind": "per_user"}}
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", []), expected_current=None)
    configs = StaticConfigSource({"default": parse_tenant_config({"servers": [files]})})
    recorder = ListRecorder()
    gateway = Gateway(store, configs, RecordingUpstream(), catalog_ttl=0.0)
    app = create_app(gateway, recorder=recorder)
    link = sign_connect_link(SECRET, PUBLIC, "default", "files", "tok-123")
    with grant_store(tmp_path) as grants:
        app.include_router(oauth_client_router(gateway, oauth_context(grants), SECRET))
        transport = httpx2.ASGITransport(app=app, client=("192.0.2.4", 4000))
        async with LinkBrowser(PUBLIC, httpx2.AsyncClient(transport=transport, base_url=PUBLIC)) as browser:
            _, form = await browser.confirmation(link)
            assert (await browser.confirm({**form, "csrf": "forged"})).status_code == 403
            assert (await browser.confirm(form)).status_code == 502
            assert (await browser.confirm(form)).status_code == 410
    events = recorder.audits
    assert [(e.action, e.outcome, e.detail) for e in events] == [
        ("upstream.connect", "refused", "not confirmed in the browser the link was opened in"),
        ("upstream.connect", "ok", "per-user link confirmed"),
        ("upstream.connect", "refused", "link already used"),
    ]
    assert {(e.tenant, e.target, e.actor.via, e.actor.who, e.actor.source) for e in events} == {
        ("default", "files", "browser", "tok-123", "192.0.2.4")
    }
    assert form["sig"] not in recorder.text()
