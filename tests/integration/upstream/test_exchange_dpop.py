"""``dpop: true`` on the exchange kinds (``token_exchange``, ``id_jag``), as on every OAuth kind.

Pins: both kinds take the option; the token request at the authorization server that issues the
upstream's access token carries a proof the server verifies (for ``id_jag`` the JWT-bearer step at the
upstream's AS, not the exchange at the enterprise IdP: the ID-JAG is never presented to the upstream,
so there is nothing for a proof there to bind); the DPoP-typed token is presented as ``Authorization:
DPoP`` with a fresh proof per request; a ``use_dpop_nonce`` is answered once, at the AS and at the
upstream alike. tests.upstreams.dpop_server verifies every proof as a real server would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.config.upstream_auth import IdJagAuth, TokenExchangeAuth
from foldgate.model.caller import calling_as
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.provider import TokenProvider
from tests.upstream_oauth import grant_store, oauth_context
from tests.upstreams.dpop_server import DPoPServer
from tests.upstreams.enterprise import EXCHANGE, JWT_BEARER, enterprise


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    with grant_store(tmp_path) as grants:
        yield grants


def config(url: str, block: dict[str, Any]) -> ServerConfig:
    return parse_tenant_config(
        {"servers": [{"name": "files", "url": url, "auth": block}]}, allow_loopback=True
    ).servers[0]


def test_both_exchange_kinds_take_the_dpop_option() -> None:
    exchange = config("https://mcp.example.com/mcp", {"kind": "token_exchange", "dpop": True,
        "token_url": "https://as.example.com/token", "subject_token": {"secret": "/fg/t"}})  # fmt: skip
    jag = config("https://mcp.example.com/mcp", {"kind": "id_jag", "dpop": True, "client_id": "c",
        "client_secret_secret": "/fg/c", "idp": {"token_url": "https://idp.example.com/token"}})  # fmt: skip
    assert isinstance(exchange.auth, TokenExchangeAuth)
    assert isinstance(jag.auth, IdJagAuth)
    assert exchange.auth.dpop
    assert jag.auth.dpop
    assert not TokenExchangeAuth(token_url="https://as.example.com/token").dpop


async def _use(store: SqliteGrantStore, secrets: dict[str, str], up: ServerConfig) -> None:
    client = UpstreamClient(allow_private=True, auth=TokenProvider(oauth_context(store, secrets)))
    try:
        with calling_as("acme"):
            await client.list_tools(up)
            await client.call_tool(up, "echo", {})
    finally:
        await client.aclose()


def _nonces_answered_once(srv: DPoPServer) -> None:
    assert srv.failures == []
    statuses = [r["status"] for r in srv.token_requests]
    assert statuses == [400, 200]  # use_dpop_nonce, then once more with it
    assert srv.token_requests[1]["claims"]["nonce"] == srv.as_nonce
    # Every request with a credential presents the bound token (discovery's probe carries none).
    presented = [r for r in srv.mcp_requests if r["scheme"]]
    assert {r["scheme"] for r in presented} == {"DPoP"}
    assert [r["status"] for r in presented][:2] == [401, 200]  # the upstream's nonce, answered once
    jtis = [p["jti"] for p in srv.proofs]
    assert len(jtis) == len(set(jtis)) >= 4


async def test_a_dpop_token_exchange_is_bound_and_presented_with_proofs(store: SqliteGrantStore) -> None:
    with DPoPServer() as srv:
        srv.as_nonce, srv.rs_nonce = "as-first", "rs-first"
        up = config(srv.url, {"kind": "token_exchange", "dpop": True, "token_url": srv.base + "/token",
                              "subject_token": {"secret": "/fg/subject"}})  # fmt: skip
        await _use(store, {"/fg/subject": "subject-token-of-the-tenant"}, up)
    assert srv.token_requests[1]["form"]["grant_type"] == EXCHANGE
    assert srv.token_requests[1]["form"]["subject_token"] == "subject-token-of-the-tenant"
    _nonces_answered_once(srv)


async def test_a_dpop_id_jag_proves_at_the_upstreams_authorization_server_not_at_the_idp(
    store: SqliteGrantStore,
) -> None:
    with enterprise() as ent, DPoPServer() as srv:
        ent.jag_client_id = "fg-client"
        srv.as_nonce, srv.rs_nonce = "as-first", "rs-first"
        up = config(srv.url, {"kind": "id_jag", "dpop": True, "client_id": "fg-client",
                              "client_secret_secret": "/fg/client", "subject_token": {"secret": "/fg/id"},
                              "idp": {"token_url": ent.base + "/idp/token"}})  # fmt: skip
        await _use(store, {"/fg/client": "s3cret", "/fg/id": ent.id_token("alice")}, up)
    assert [path for path, _form, _basic in ent.posts] == ["/idp/token"]
    assert ent.proofs == [None]  # the IdP issues the ID-JAG, which is never presented upstream
    assert [r["form"]["grant_type"] for r in srv.token_requests] == [JWT_BEARER, JWT_BEARER]
    _nonces_answered_once(srv)
