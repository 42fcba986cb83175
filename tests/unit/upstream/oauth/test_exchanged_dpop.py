"""``dpop: true`` on the exchange kinds, as on every OAuth kind: the token exchange at the
authorization server carries a proof the server verifies, and the token it binds is presented with
the DPoP scheme and a proof on every MCP request (the loopback DPoP server checks each)."""

from __future__ import annotations

from pathlib import Path

from foldgate.config.tenant import parse_tenant_config
from foldgate.model.caller import calling_as
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.provider import TokenProvider
from tests.upstream_oauth import grant_store, oauth_context
from tests.upstreams.dpop_server import DPoPServer

EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


async def test_a_dpop_token_exchange_is_bound_and_presented_with_proofs(tmp_path: Path) -> None:
    with DPoPServer() as srv, grant_store(tmp_path) as store:
        ctx = oauth_context(store, {"svc-token": "service-identity-token"})
        block = {"kind": "token_exchange", "dpop": True, "token_url": srv.base + "/token",
                 "client_id": "foldgate", "subject_token": {"secret": "svc-token"}}  # fmt: skip
        up = parse_tenant_config({"servers": [{"name": "files", "url": srv.url, "auth": block}]}).servers[0]
        client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
        try:
            with calling_as("acme"):
                await client.list_tools(up)
                await client.call_tool(up, "echo", {})
        finally:
            await client.aclose()
    assert [r["form"]["grant_type"] for r in srv.token_requests] == [EXCHANGE]
    assert srv.failures == []
    assert {r["scheme"] for r in srv.mcp_requests if r["scheme"]} == {"DPoP"}
