"""DPoP through foldgate's upstream OAuth client, against a loopback authorization server and MCP server
that verify every proof with PyJWT (tests/upstreams/dpop_server.py).

Pins: the tenant's key is made once and shared by every provider over one store (two instances racing
to make it end with one key); the code exchange, the refresh and the client-credentials request carry
a proof and get a DPoP-bound token; every MCP request (initialize, notifications, list, call, the
closing DELETE) carries ``Authorization: DPoP`` and its own proof (the server refuses a replayed
``jti``, a wrong ``ath`` or a token bound to another key); ``use_dpop_nonce`` is answered once with
the nonce, at the authorization server and at the MCP server, and the nonce is then sent without a
new challenge; a server that keeps refusing nonces gets exactly one retry and no refresh; an
``invalid_token`` goes the refresh path; a ``DPoP`` challenge scheme is read by discovery.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, calling_as
from foldgate.store.grants.cipher import LocalKeyCipher
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.consent import finish_consent, start_consent
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import challenge_of
from foldgate.upstream.oauth.dpop import KEY_NAME
from foldgate.upstream.oauth.dpop_keys import DPoPAuthorization, DPoPKeys
from foldgate.upstream.oauth.provider import TokenProvider
from foldgate.upstream.oauth.tokens import TokenRefusedError
from tests.upstream_oauth import grant_store, oauth_context
from tests.upstreams.dpop_server import DPoPServer

TENANT = "acme"


@pytest.fixture
def srv() -> Iterator[DPoPServer]:
    with DPoPServer() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    with grant_store(tmp_path) as grants:
        yield grants


def _server(url: str, **auth: Any) -> ServerConfig:
    block = {"kind": "oauth", "dpop": True, "client_id": "fg", "registration": "preregistered", **auth}
    return parse_tenant_config({"servers": [{"name": "files", "url": url, "auth": block}]}).servers[0]


async def _connect(ctx: OAuthContext, server: ServerConfig) -> None:
    """The operator's connect: the consent's state, then the callback's code exchange."""
    authorize = await start_consent(ctx, TENANT, server, SHARED_SUBJECT)
    query = parse_qs(urlsplit(authorize).query)
    # RFC 9449 section 10: the authorization code is bound to the key that will redeem it.
    assert query["dpop_jkt"] == [ctx.prover(TENANT).thumbprint]
    state = query["state"][0]
    await finish_consent(ctx, state, "any-code", None, lambda t, n: server)


def _authenticated(srv: DPoPServer) -> list[dict[str, Any]]:
    """The MCP requests that presented a token (discovery's unauthenticated probe aside)."""
    return [r for r in srv.mcp_requests if r["scheme"]]


async def _list_and_call(provider: TokenProvider, server: ServerConfig) -> None:
    client = UpstreamClient(allow_private=True, auth=provider)
    try:
        with calling_as(TENANT):
            listing = await client.list_tools(server)
            assert [t["name"] for t in listing.tools] == ["echo"]
            result = await client.call_tool(server, "echo", {})
            assert not result.get("isError")
    finally:
        await client.aclose()


def test_the_key_is_made_once_and_shared_by_every_instance_over_one_store(store: SqliteGrantStore) -> None:
    first, second = DPoPKeys(store), DPoPKeys(store)
    assert store.get_key(TENANT, KEY_NAME) is None
    made = first.prover(TENANT)
    assert first.prover(TENANT) is made  # cached in memory
    assert second.prover(TENANT).thumbprint == made.thumbprint  # read back, not made again
    assert second.prover("other").thumbprint != made.thumbprint  # one key per tenant


def test_instances_racing_to_make_the_first_key_end_with_one(tmp_path: Path) -> None:
    # Every instance reads "no key" before any writes one: all make one, one is stored, all use it.
    barrier = threading.Barrier(4)

    class Racing(SqliteGrantStore):
        def get_key(self, tenant: str, name: str) -> str | None:
            found = super().get_key(tenant, name)
            if threading.current_thread().name not in seen:
                seen.add(threading.current_thread().name)
                barrier.wait(timeout=10)
            return found

    seen: set[str] = set()
    cipher = LocalKeyCipher.from_file(tmp_path / "grants.key")
    stores = [Racing(tmp_path / "grants.sqlite3", cipher) for _ in range(4)]
    thumbprints: list[str] = []

    def run(i: int) -> None:
        thumbprints.append(DPoPKeys(stores[i]).prover(TENANT).thumbprint)

    threads = [threading.Thread(target=run, args=(i,), name=f"instance-{i}") for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(thumbprints) == 4
    assert len(set(thumbprints)) == 1
    for s in stores:
        s.close()


def test_code_exchange_and_every_mcp_request_prove_possession_with_nonces(
    srv: DPoPServer, store: SqliteGrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    srv.as_nonce, srv.rs_nonce = "as-n", "rs-n"
    ctx = oauth_context(store)
    server = _server(srv.url)
    asyncio.run(_connect(ctx, server))
    # The code exchange: challenged once for the nonce, then granted with it.
    assert [r["status"] for r in srv.token_requests] == [400, 200]
    assert srv.token_requests[1]["claims"]["nonce"] == "as-n"
    grant = store.get_grant(TENANT, "files", SHARED_SUBJECT)
    assert grant is not None
    assert grant.token_type == "DPoP"
    assert srv.token_requests[1]["claims"]["jkt"] == ctx.prover(TENANT).thumbprint

    provider = TokenProvider(ctx)
    asyncio.run(_list_and_call(provider, server))
    assert srv.failures == []
    sent = _authenticated(srv)
    statuses = [r["status"] for r in sent]
    assert statuses[:2] == [401, 200]  # initialize: challenged once for the nonce, then let in
    assert all(s in (200, 202) for s in statuses[2:])  # the nonce remembered: no more challenges
    assert len(sent) >= 6  # initialize (twice), initialized, list, call, the close
    assert {r["scheme"] for r in sent} == {"DPoP"}
    assert sent[-1]["method"] == "DELETE"  # the session's close proves possession too
    assert all(r["claims"]["nonce"] == "rs-n" for r in sent[1:])
    assert provider.refreshes == 0
    # Neither the token nor any proof (a JWT: "eyJ...") is in a log line.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert logged
    assert grant.access_token not in logged
    assert "eyJ" not in logged


def test_an_expired_token_is_refreshed_with_a_proof_and_the_remembered_nonce(
    srv: DPoPServer, store: SqliteGrantStore
) -> None:
    srv.as_nonce = "as-n"
    ctx = oauth_context(store)
    server = _server(srv.url)
    asyncio.run(_connect(ctx, server))
    srv.expire_next = True
    provider = TokenProvider(ctx)
    asyncio.run(_list_and_call(provider, server))
    assert provider.refreshes == 1
    refresh = srv.token_requests[-1]
    assert refresh["form"]["grant_type"] == "refresh_token"
    assert refresh["status"] == 200
    assert refresh["claims"]["nonce"] == "as-n"  # remembered from the exchange: no second challenge
    assert len(srv.token_requests) == 3  # challenge + exchange + one refresh
    assert srv.failures == []


def test_an_authorization_server_refusing_every_nonce_gets_one_retry(
    srv: DPoPServer, store: SqliteGrantStore
) -> None:
    srv.as_nonce, srv.stubborn_as = "as-n", True
    ctx = oauth_context(store)
    with pytest.raises(TokenRefusedError) as refused:
        asyncio.run(_connect(ctx, _server(srv.url)))
    assert refused.value.error == "use_dpop_nonce"
    assert len(srv.token_requests) == 2
    assert store.get_grant(TENANT, "files", SHARED_SUBJECT) is None


def test_a_resource_server_refusing_every_nonce_gets_one_retry_and_no_refresh(
    srv: DPoPServer, store: SqliteGrantStore
) -> None:
    ctx = oauth_context(store)
    server = _server(srv.url)
    asyncio.run(_connect(ctx, server))
    srv.rs_nonce, srv.stubborn_rs = "rs-n", True
    provider = TokenProvider(ctx)
    with pytest.raises(UpstreamError, match="nonce"):
        asyncio.run(_list_and_call(provider, server))
    assert [r["status"] for r in _authenticated(srv)] == [401, 401]  # the request and its one retry
    assert provider.refreshes == 0  # a nonce challenge is never taken for an expired token
    assert len(srv.token_requests) == 1


def test_client_credentials_with_dpop(srv: DPoPServer, store: SqliteGrantStore) -> None:
    ctx = oauth_context(store, {"m2m-secret": "s3cret"})
    block = {"kind": "client_credentials", "dpop": True, "token_url": srv.base + "/token",
             "client_id": "m2m", "client_secret_secret": "m2m-secret"}  # fmt: skip
    server = parse_tenant_config({"servers": [{"name": "files", "url": srv.url, "auth": block}]}).servers[0]
    provider = TokenProvider(ctx)
    asyncio.run(_list_and_call(provider, server))
    assert [r["form"]["grant_type"] for r in srv.token_requests] == ["client_credentials"]
    assert srv.failures == []
    assert {r["scheme"] for r in _authenticated(srv)} == {"DPoP"}


def test_the_authorization_value_is_the_header_and_hides_the_token(store: SqliteGrantStore) -> None:
    value = DPoPAuthorization("tok-123", DPoPKeys(store).prover(TENANT))
    assert value == "DPoP tok-123"
    assert "tok-123" not in repr(value)
    ctx = oauth_context(store)
    assert ctx.present(TENANT, "Bearer", "tok") == "Bearer tok"
    assert isinstance(ctx.present(TENANT, "dpop", "tok"), DPoPAuthorization)


def test_a_dpop_challenge_scheme_is_read_by_discovery() -> None:
    challenge = challenge_of('DPoP error="use_dpop_nonce", resource_metadata="https://mcp.example.com/prm"')
    assert challenge.resource_metadata == "https://mcp.example.com/prm"
    assert challenge.error == "use_dpop_nonce"
