"""Connecting and disconnecting an OAuth upstream through the admin API against a real authorization
server (oidc-provider) and protected upstream: the operator's start and the disconnect are audit events
of the operator key, the browser's finished consent one of the browser; no token in any of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.admin import admin_router
from foldgate.edge.app import create_app
from foldgate.edge.connect import oauth_client_router
from foldgate.edge.operator_audit import operator_key_id
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream
from tests.oauth_provider import consent
from tests.recorders import ListRecorder
from tests.upstream_oauth import REDIRECT, Protected, grant_store, oauth_context, protected_upstream

OPERATOR = "operator-key-for-connect-audit"
OP = {"authorization": f"Bearer {OPERATOR}"}


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    with protected_upstream(tmp_path_factory.mktemp("protected")) as running:
        yield running


async def test_connect_callback_and_disconnect_are_audit_events(upstream: Protected, tmp_path: Path) -> None:
    doc = {"servers": [{"name": "files", "url": upstream.url, "auth": {"kind": "oauth"}}]}
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("acme", []), expected_current=None)
    recorder = ListRecorder()
    gateway = Gateway(
        store, StaticConfigSource({"acme": parse_tenant_config(doc)}), RecordingUpstream(), recorder=recorder
    )
    with grant_store(tmp_path) as grants:
        oauth = oauth_context(grants)
        app = create_app(gateway, admin=admin_router(gateway, operator_secret=OPERATOR.encode(), oauth=oauth))
        app.include_router(oauth_client_router(gateway, oauth))
        transport = httpx2.ASGITransport(app=app, client=("203.0.113.9", 5000))
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http:
            started = await http.post("/api/v1/servers/files/connect", params={"tenant": "acme"}, headers=OP)
            assert started.status_code == 200, started.text
            answer = await consent(started.json()["authorization_url"], REDIRECT, "alice")
            finished = await http.get(
                "/oauth/callback", params=answer, headers={"accept": "application/json"}
            )
            assert finished.status_code == 200, finished.text
            gone = await http.delete("/api/v1/servers/files/connect", params={"tenant": "acme"}, headers=OP)
            assert gone.status_code == 200, gone.text
            remaining = grants.list_grants("acme")
    start, done, disconnect = recorder.audits
    assert (start.action, start.target, start.detail) == ("upstream.connect", "files", "consent started")
    assert (start.actor.via, start.actor.who) == ("operator_key", operator_key_id(OPERATOR.encode()))
    assert (done.action, done.target, done.actor.via) == ("upstream.connect", "files", "browser")
    assert done.detail == "consent completed (shared connection)"
    assert (disconnect.action, disconnect.target, disconnect.actor.via) == (
        "upstream.disconnect",
        "files",
        "operator_key",
    )
    assert "disconnected: true" in disconnect.detail
    assert {e.tenant for e in recorder.audits} == {"acme"}
    assert {e.actor.source for e in recorder.audits} == {"203.0.113.9"}
    assert remaining == []  # disconnected
    assert answer["code"] not in recorder.text()
