"""The HTTP edge with OAuth on: anonymous callers get the challenge that starts the MCP flow, an
fgt_-shaped credential is no way around it, the tenant never comes from a header, 403 carries the
scope to ask for, metadata is served per endpoint; and deployments without OAuth are unchanged."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from starlette.requests import Request

from foldgate.auth.authority import TokenAuthority
from foldgate.auth.oauth.verifier import OAuthVerifier
from foldgate.config.oauth import OAuthConfig
from foldgate.edge.access import Access
from foldgate.errors import AuthError
from foldgate.model.agent_token import TokenHasher
from foldgate.model.caller import calling_as, current_caller
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.gateway_fixture import gateway_client
from tests.unit.auth.oauth.issuer import ISSUER, RESOURCE, FakeIssuer

H = {"accept": "application/json", "content-type": "application/json", "mcp-protocol-version": "2025-11-25"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _access(issuer: FakeIssuer, authority: TokenAuthority | None = None) -> Access:
    config = OAuthConfig(issuer=ISSUER)
    verifier = OAuthVerifier(
        lambda t: config if t == "default" else None,
        base_url=RESOURCE,
        allow_private=False,
        fetch=issuer.fetch,
    )
    return Access(oauth=verifier, authority=authority)


async def _post(
    client: httpx2.AsyncClient, path: str, token: str | None = None, **headers: str
) -> httpx2.Response:
    auth = {"authorization": f"Bearer {token}"} if token else {}
    return await client.post(path, json=LIST, headers={**H, **auth, **headers})


async def test_anonymous_and_fgt_shaped_callers_get_the_challenge() -> None:
    async with gateway_client(access=_access(FakeIssuer())) as (client, *_):
        for token in (None, "fgt_" + "A" * 43):
            r = await _post(client, "/mcp/all", token)
            assert r.status_code == 401
            assert r.headers["www-authenticate"].startswith(
                f'Bearer resource_metadata="{RESOURCE}/.well-known/oauth-protected-resource/mcp/all"'
            )


async def test_a_read_token_sees_read_tools_only_and_the_tenant_header_is_ignored() -> None:
    issuer = FakeIssuer()
    async with gateway_client(access=_access(issuer)) as (client, *_):
        r = await _post(
            client, "/mcp/all", issuer.sign(aud=RESOURCE), **{"x-foldgate-tenant": "someone-else"}
        )
        assert r.status_code == 200, r.text
        tiers: dict[str, Any] = {t["name"]: t.get("annotations", {}) for t in r.json()["result"]["tools"]}
        assert "crm__find_contact" in tiers
        assert "crm__create_contact" not in tiers
        assert "crm__delete_contact" not in tiers


async def test_no_tier_is_403_with_the_scope_to_step_up_to() -> None:
    issuer = FakeIssuer()
    async with gateway_client(access=_access(issuer)) as (client, *_):
        r = await _post(client, "/mcp", issuer.sign(aud=RESOURCE, scope="openid"))
        assert r.status_code == 403
        assert 'scope="foldgate:read", error="insufficient_scope"' in r.headers["www-authenticate"]


async def test_metadata_is_served_per_endpoint() -> None:
    async with gateway_client(access=_access(FakeIssuer())) as (client, *_):
        for path in ("", "/mcp", "/mcp/all", "/mcp/call", "/mcp/code"):
            r = await client.get("/.well-known/oauth-protected-resource" + path)
            assert r.status_code == 200
            assert r.json()["resource"] == RESOURCE + path
            assert r.json()["authorization_servers"] == [ISSUER]
        assert (await client.get("/.well-known/oauth-protected-resource/admin")).status_code == 404


async def test_without_oauth_nothing_changes() -> None:
    async with gateway_client() as (client, *_):
        assert (await _post(client, "/mcp/all")).status_code == 200
        assert (await client.get("/.well-known/oauth-protected-resource/mcp")).status_code == 404


async def test_agent_tokens_keep_working_beside_oauth() -> None:
    issuer = FakeIssuer()
    authority = TokenAuthority(SqliteTokenStore(":memory:"), TokenHasher(b"edge-test-secret-0123456789"))
    token, _ = authority.issue("default", tier="destructive", expires_in=60)
    async with gateway_client(access=_access(issuer, authority)) as (client, *_):
        r = await _post(client, "/mcp/all", token)
        assert r.status_code == 200
        assert "crm__delete_contact" in {t["name"] for t in r.json()["result"]["tools"]}
        assert (await _post(client, "/mcp/all", "fgt_" + "B" * 43)).status_code == 401
        assert (await _post(client, "/mcp/all", issuer.sign(aud=RESOURCE))).status_code == 200


async def test_the_verified_access_token_is_the_inbound_identity_of_its_own_subject() -> None:
    """The token-exchange upstreams hand the person's verified token to their IdP: it reaches the
    caller of that person's subject, and a request with any other credential carries none."""
    issuer = FakeIssuer()
    access = _access(issuer)
    token = issuer.sign(aud=RESOURCE)

    def request(credential: str | None) -> Request:
        headers = [(b"authorization", f"Bearer {credential}".encode())] if credential else []
        return Request({"type": "http", "method": "POST", "path": "/mcp", "headers": headers,
                        "client": ("127.0.0.1", 1), "query_string": b""})  # fmt: skip

    principal = await access.resolve(request(token), "/mcp")
    with calling_as(principal.tenant, principal.upstream_subject):
        caller = current_caller()
    assert caller is not None
    assert (caller.subject, caller.inbound_token) == (principal.subject, token)
    with pytest.raises(AuthError):
        await access.resolve(request("fgt_" + "A" * 43), "/mcp")
    with calling_as(principal.tenant, principal.upstream_subject):
        after = current_caller()
    assert after is not None
    assert after.inbound_token is None
