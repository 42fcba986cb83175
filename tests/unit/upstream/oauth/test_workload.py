"""workload_jwt's JWT-bearer grant against a token endpoint on loopback: what is sent (RFC 7523's
grant type and assertion, resource, scope, client_id only when configured, a configured secret as
Basic), the token kept until its margin, a 401 dropping it once, and a refusal: surfaced as
``upstream_needs_authorization`` with the server's error code, then NO second token request until the
auth: block or the assertion changes or the back-off passes. Each outcome is recorded and audited."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamAuthorizationError
from foldgate.model.caller import UpstreamCaller
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.provider import TokenProvider
from foldgate.upstream.oauth.workload import JWT_BEARER
from tests.recorders import ListRecorder
from tests.token_endpoint import TokenEndpoint, issuing, refusing, token_endpoint
from tests.upstream_oauth import grant_store, oauth_context

JWT = "eyJhbGciOiJFUzM4NCJ9.eyJzdWIiOiJ3b3JrbG9hZC1hIn0.c2ln"
ROTATED = "eyJhbGciOiJFUzM4NCJ9.eyJzdWIiOiJ3b3JrbG9hZC1iIn0.c2lnMg"
URL = "https://mcp.example.com/mcp"
CALLER = UpstreamCaller("acme")


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[OAuthContext]:
    with grant_store(tmp_path) as store:
        context = oauth_context(store, {"wif/client": "s3cret"})
        context.outcomes.recorder = ListRecorder()
        yield context


@pytest.fixture
def jwt_file(tmp_path: Path) -> Path:
    path = tmp_path / "workload.jwt"
    path.write_text(JWT)
    return path


def server(endpoint: TokenEndpoint, jwt_file: Path, **auth: Any) -> ServerConfig:
    block = {"kind": "workload_jwt", "token_url": endpoint.url,
             "assertion": {"source": "file", "path": str(jwt_file)}, **auth}  # fmt: skip
    return parse_tenant_config({"servers": [{"name": "up", "url": URL, "auth": block}]}).servers[0]


async def test_the_grant_sends_the_assertion_and_keeps_the_token(ctx: OAuthContext, jwt_file: Path) -> None:
    provider = TokenProvider(ctx)
    with token_endpoint(issuing("tok-1")) as endpoint:
        up = server(endpoint, jwt_file, scopes=["files:read"], audience="https://api.example.com")
        assert await provider.authorization(up, CALLER) == "Bearer tok-1"
        assert await provider.authorization(up, CALLER) == "Bearer tok-1"
    assert endpoint.forms == [
        {"grant_type": JWT_BEARER, "assertion": JWT, "scope": "files:read", "resource": URL,
         "audience": "https://api.example.com"}
    ]  # fmt: skip
    assert "authorization" not in endpoint.requests[0][1]  # client auth none, no client_id configured


async def test_client_auth_none_sends_a_configured_client_id_and_a_secret_goes_basic(
    ctx: OAuthContext, jwt_file: Path
) -> None:
    with token_endpoint(issuing("tok")) as endpoint:
        await TokenProvider(ctx).authorization(server(endpoint, jwt_file, client_id="wl"), CALLER)
        up = server(endpoint, jwt_file, client_id="wl", client_secret_secret="wif/client")
        await TokenProvider(ctx).authorization(up, CALLER)
    assert endpoint.forms[0]["client_id"] == "wl"
    assert "client_id" not in endpoint.forms[1]
    assert endpoint.requests[1][1]["authorization"] == "Basic " + base64.b64encode(b"wl:s3cret").decode()


async def test_a_401_drops_the_token_once(ctx: OAuthContext, jwt_file: Path) -> None:
    provider = TokenProvider(ctx)
    tokens = iter(["tok-1", "tok-2"])
    with token_endpoint(lambda form: issuing(next(tokens))(form)) as endpoint:
        up = server(endpoint, jwt_file)
        sent = await provider.authorization(up, CALLER)
        await provider.refused(up, CALLER, sent, 401, None)
        assert await provider.authorization(up, CALLER) == "Bearer tok-2"
        assert await provider.authorization(up, CALLER) == "Bearer tok-2"
    assert len(endpoint.requests) == 2


@pytest.mark.parametrize("error", ["invalid_grant", "invalid_scope", "unauthorized_client"])
async def test_a_refusal_is_surfaced_and_never_retried(ctx: OAuthContext, jwt_file: Path, error: str) -> None:
    provider = TokenProvider(ctx)
    with token_endpoint(refusing(error)) as endpoint:
        up = server(endpoint, jwt_file)
        for _ in range(3):
            with pytest.raises(UpstreamAuthorizationError, match=error) as info:
                await provider.authorization(up, CALLER)
            assert info.value.code == "upstream_needs_authorization"
            assert "own words" not in info.value.message  # the server's free text never reaches an agent
    assert len(endpoint.requests) == 1
    last = ctx.outcomes.last("acme", "up")
    assert last is not None
    assert (last.kind, last.outcome, last.error) == ("workload_jwt", "refused", error)


async def test_after_a_refusal_a_change_or_the_back_off_allows_one_new_request(
    ctx: OAuthContext, jwt_file: Path
) -> None:
    provider = TokenProvider(ctx)
    with token_endpoint(refusing("invalid_grant")) as endpoint:
        up = server(endpoint, jwt_file)
        with pytest.raises(UpstreamAuthorizationError):
            await provider.authorization(up, CALLER)
        # The assertion rotated (a projected token rewritten): one new request, refused again.
        jwt_file.write_text(ROTATED)
        with pytest.raises(UpstreamAuthorizationError):
            await provider.authorization(up, CALLER)
        assert [f["assertion"] for f in endpoint.forms] == [JWT, ROTATED]
        # The auth: block changed: one new request.
        changed = server(endpoint, jwt_file, scopes=["files:read"])
        with pytest.raises(UpstreamAuthorizationError):
            await provider.authorization(changed, CALLER)
        assert len(endpoint.requests) == 3
        # The back-off passed: one new request, and only one.
        provider.workload.backoff_s = 0.0
        endpoint.answer = issuing("tok")
        assert await provider.authorization(changed, CALLER) == "Bearer tok"
        assert await provider.authorization(changed, CALLER) == "Bearer tok"
    assert len(endpoint.requests) == 4


async def test_every_outcome_is_audited_without_token_or_assertion(ctx: OAuthContext, jwt_file: Path) -> None:
    provider = TokenProvider(ctx)
    with token_endpoint(issuing("tok-secret-value", expires_in=600)) as endpoint:
        await provider.authorization(server(endpoint, jwt_file), CALLER)
        endpoint.answer = refusing("invalid_scope")
        with pytest.raises(UpstreamAuthorizationError):
            await provider.authorization(server(endpoint, jwt_file, scopes=["admin"]), CALLER)
    recorder = ctx.outcomes.recorder
    assert isinstance(recorder, ListRecorder)
    audits = recorder.audits
    assert [(a.action, a.target, a.outcome, a.actor.via, a.actor.who) for a in audits] == [
        ("upstream.grant", "up", "ok", "system", "workload_jwt"),
        ("upstream.grant", "up", "refused", "system", "workload_jwt"),
    ]
    assert "invalid_scope" in audits[1].detail
    assert "tok-secret-value" not in recorder.text()
    assert JWT not in recorder.text()


async def test_an_unreadable_assertion_fails_before_any_request(ctx: OAuthContext, tmp_path: Path) -> None:
    with token_endpoint(issuing("tok")) as endpoint:
        up = server(endpoint, tmp_path / "absent.jwt")
        with pytest.raises(Exception, match="no workload assertion"):
            await TokenProvider(ctx).authorization(up, CALLER)
    assert endpoint.requests == []
    last = ctx.outcomes.last("acme", "up")
    assert last is not None
    assert (last.outcome, last.error) == ("failed", "assertion_unavailable")


async def test_aws_sts_assertion_goes_to_the_token_endpoint(ctx: OAuthContext) -> None:
    """The cloud path: STS (botocore's Stubber, checking the request against the service model) mints
    the JWT for the configured audience; the grant presents it."""
    import datetime

    import boto3
    from botocore.stub import Stubber

    from foldgate.upstream.oauth.assertions import AssertionReader

    sts = boto3.client("sts", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    stub = Stubber(sts)
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=5)
    stub.add_response(
        "get_web_identity_token",
        {"WebIdentityToken": JWT, "Expiration": expires},
        {"Audience": ["https://login.example.com"], "SigningAlgorithm": "RS256", "DurationSeconds": 300},
    )
    provider = TokenProvider(ctx, assertions=AssertionReader(ctx.read_secret, sts=sts))
    with token_endpoint(issuing("tok")) as endpoint, stub:
        block = {"kind": "workload_jwt", "token_url": endpoint.url,
                 "assertion": {"source": "aws_sts", "audience": "https://login.example.com"}}  # fmt: skip
        up = parse_tenant_config({"servers": [{"name": "up", "url": URL, "auth": block}]}).servers[0]
        assert await provider.authorization(up, CALLER) == "Bearer tok"
    stub.assert_no_pending_responses()
    assert endpoint.forms[0]["assertion"] == JWT


async def test_a_dpop_workload_grant_is_bound_and_presented_with_proofs(
    ctx: OAuthContext, jwt_file: Path
) -> None:
    """``dpop: true`` on workload_jwt as on every OAuth kind: the JWT-bearer request carries a proof
    the server verifies, and every MCP request presents the bound token with the DPoP scheme."""
    from foldgate.model.caller import calling_as
    from foldgate.upstream.client import UpstreamClient
    from tests.upstreams.dpop_server import DPoPServer

    with DPoPServer() as srv:
        block = {"kind": "workload_jwt", "dpop": True, "token_url": srv.base + "/token",
                 "assertion": {"source": "file", "path": str(jwt_file)}}  # fmt: skip
        up = parse_tenant_config({"servers": [{"name": "files", "url": srv.url, "auth": block}]}).servers[0]
        client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
        try:
            with calling_as("acme"):
                await client.list_tools(up)
                await client.call_tool(up, "echo", {})
        finally:
            await client.aclose()
    assert [(r["form"]["grant_type"], r["form"]["assertion"]) for r in srv.token_requests] == [
        (JWT_BEARER, JWT)
    ]
    assert srv.failures == []
    assert {r["scheme"] for r in srv.mcp_requests if r["scheme"]} == {"DPoP"}


async def test_an_issuer_is_found_by_discovery(ctx: OAuthContext, jwt_file: Path) -> None:
    with token_endpoint(issuing("tok")) as endpoint:
        block = {"kind": "workload_jwt", "issuer": endpoint.issuer,
                 "assertion": {"source": "file", "path": str(jwt_file)}}  # fmt: skip
        up = parse_tenant_config({"servers": [{"name": "up", "url": URL, "auth": block}]}).servers[0]
        assert await TokenProvider(ctx).authorization(up, CALLER) == "Bearer tok"
    assert endpoint.forms[0]["grant_type"] == JWT_BEARER
