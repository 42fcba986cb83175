"""The ``id_jag`` kind through the whole gateway: a person signs in to foldgate with OAuth, calls a tool
of an ``id_jag`` upstream (the MCP SDK's resource server), and the call runs upstream as that person.

Pins the wiring the unit tests cannot: the edge hands the verified inbound access token to the call
path (and only to that person's subject), the IdP exchanges it, the upstream sees the person; a person
the IdP denies gets one ``upstream_needs_authorization`` tool error; and the inbound token, the ID-JAG
and the upstream access token appear in no log line, no activity event and no page the gateway served.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest

from foldgate.auth.oauth.verifier import OAuthVerifier
from foldgate.config.oauth import OAuthConfig
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.access import Access
from foldgate.edge.app import create_app
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.activity import ActivityRecord
from foldgate.model.tool import Tool
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.provider import TokenProvider
from tests.unit.auth.oauth.issuer import ISSUER, RESOURCE, FakeIssuer
from tests.upstream_oauth import grant_store, oauth_context, protected_server
from tests.upstreams.enterprise import CLIENT_ID, CLIENT_SECRET, Enterprise, enterprise

H = {"accept": "application/json", "content-type": "application/json", "mcp-protocol-version": "2025-11-25"}


class Events:
    """The gateway's activity recorder, keeping every event."""

    def __init__(self) -> None:
        self.events: list[ActivityRecord] = []

    def record(self, event: ActivityRecord) -> None:
        self.events.append(event)


@contextlib.asynccontextmanager
async def gateway(
    tmp: Path, ent: Enterprise, signin: FakeIssuer, url: str, events: Events
) -> AsyncIterator[httpx2.AsyncClient]:
    """foldgate with inbound OAuth at ``signin`` and one ``id_jag`` upstream at ``url``."""
    auth = {"kind": "id_jag", "idp": {"token_url": ent.base + "/idp/token", "client_id": "foldgate"},
            "subject_token": {"inbound": True, "type": "access_token"},
            "client_id": CLIENT_ID, "client_secret_secret": "/fg/files"}  # fmt: skip
    config = parse_tenant_config({"servers": [{"name": "files", "url": url, "auth": auth}]})
    tool = Tool("files", "whoami", "Who the call runs as.", annotations={"readOnlyHint": True})
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", [tool]), expected_current=None)
    with grant_store(tmp) as grants:
        upstream = UpstreamClient(
            allow_private=True, auth=TokenProvider(oauth_context(grants, {"/fg/files": CLIENT_SECRET}))
        )
        configs = StaticConfigSource({"default": config})
        built = Gateway(store, configs, upstream, catalog_ttl=0.0, recorder=events)
        inbound = OAuthConfig(issuer=ISSUER)
        verifier = OAuthVerifier(lambda t: inbound if t == "default" else None, base_url=RESOURCE,
                                 allow_private=False, fetch=signin.fetch)  # fmt: skip
        app = create_app(built, access=Access(oauth=verifier))
        try:
            async with app.router.lifespan_context(app):
                transport = httpx2.ASGITransport(app=app)
                async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
                    yield client
        finally:
            await upstream.aclose()


async def call(client: httpx2.AsyncClient, token: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "files__whoami", "arguments": {}},
    }
    answer = await client.post("/mcp/all", json=body, headers={**H, "authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


async def test_a_signed_in_person_reaches_the_upstream_as_themselves_and_no_token_leaks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    signin = FakeIssuer()
    public = signin.keys["ES256"][1].public_key()
    with enterprise() as ent, protected_server(tmp_path, ent.issuer) as (url, calls):
        ent.signed = True
        ent.resources.add(url)
        ent.denied.add("mallory")
        # The IdP trusts the issuer people sign in to foldgate with: the inbound token is the subject.
        ent.subject_of = lambda token: str(  # type: ignore[method-assign]
            jwt.decode(token, public, algorithms=["ES256"], audience=RESOURCE)["sub"]
        )
        alice, mallory = signin.sign(sub="alice"), signin.sign(sub="mallory")
        pages: list[str] = []
        events = Events()
        async with gateway(tmp_path, ent, signin, url, events) as client:
            answered = await call(client, alice)
            pages.append(json.dumps(answered))
            assert not answered.get("isError"), answered
            assert json.loads(answered["content"][0]["text"])["subject"] == "alice"
            refused = await call(client, mallory)
            pages.append(json.dumps(refused))
            assert refused["isError"] is True
            error = json.loads(refused["content"][0]["text"])
            assert error["error_type"] == "upstream_needs_authorization"
            assert "the enterprise IdP refused the ID-JAG exchange (access_denied)" in error["error"]
        assert [json.loads(line)["subject"] for line in calls.read_text().splitlines()] == ["alice"]
        [idp_alice, idp_mallory] = ent.posted("/idp/token")
        assert (idp_alice["subject_token"], idp_mallory["subject_token"]) == (alice, mallory)
        [bearer] = ent.posted("/as/token")
        access = [p for p, _, _ in ent.posts]
        assert access == ["/idp/token", "/as/token", "/idp/token"]  # mallory: once, no retry
    canaries = {"inbound": alice, "other inbound": mallory, "ID-JAG": bearer["assertion"]}
    recorded = "\n".join(repr(event) for event in events.events)
    assert len(events.events) >= 2  # both calls were recorded
    for name, canary in canaries.items():
        assert canary not in caplog.text, name
        assert canary not in recorded, name
        assert all(canary not in page for page in pages), name
