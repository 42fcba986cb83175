"""client_credentials (upstream/oauth/machine.py): a 401 drops the token once; each token obtained or
refused is recorded as for workload_jwt (status and an ``upstream.grant`` audit event), and a refusal
is the tool error ``upstream_needs_authorization`` naming the authorization server's code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import UpstreamAuthorizationError
from foldgate.model.caller import UpstreamCaller
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.provider import TokenProvider
from tests.recorders import ListRecorder
from tests.token_endpoint import issuing, refusing, token_endpoint
from tests.upstream_oauth import grant_store, oauth_context


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[OAuthContext]:
    with grant_store(tmp_path) as store:
        context = oauth_context(store, {"m2m": "machine-secret"})
        context.outcomes.recorder = ListRecorder()
        yield context


def machine(token_url: str, name: str = "crm") -> object:
    auth = {"kind": "client_credentials", "token_url": token_url, "client_id": "m2m",
            "client_secret_secret": "m2m", "scopes": ["read"]}  # fmt: skip
    url = "https://mcp.example.com/mcp"
    return parse_tenant_config({"servers": [{"name": name, "url": url, "auth": auth}]}).servers[0]


async def test_client_credentials_outcomes_are_recorded_and_a_refusal_named(ctx: OAuthContext) -> None:
    provider = TokenProvider(ctx)
    caller = UpstreamCaller("acme")
    with token_endpoint(issuing("tok", expires_in=900)) as endpoint:
        assert await provider.authorization(machine(endpoint.url), caller) == "Bearer tok"  # type: ignore[arg-type]
        endpoint.answer = refusing("unauthorized_client")
        with pytest.raises(UpstreamAuthorizationError, match="unauthorized_client") as info:
            await provider.authorization(machine(endpoint.url, "erp"), caller)  # type: ignore[arg-type]
    assert info.value.code == "upstream_needs_authorization"
    assert ctx.outcomes.last("acme", "crm").outcome == "obtained"  # type: ignore[union-attr]
    last = ctx.outcomes.last("acme", "erp")
    assert last is not None
    assert (last.kind, last.outcome, last.error) == ("client_credentials", "refused", "unauthorized_client")
    recorder = ctx.outcomes.recorder
    assert isinstance(recorder, ListRecorder)
    assert [(a.action, a.outcome) for a in recorder.audits] == [
        ("upstream.grant", "ok"),
        ("upstream.grant", "refused"),
    ]
    assert recorder.audits[0].detail == "client_credentials: obtained, expires in 900 s"
    assert "machine-secret" not in recorder.text()
    assert "tok" not in recorder.text().replace("token", "")


async def test_a_401_drops_the_machine_token_once(ctx: OAuthContext) -> None:
    provider = TokenProvider(ctx)
    caller = UpstreamCaller("acme")
    tokens = iter(["tok-1", "tok-2"])
    with token_endpoint(lambda form: issuing(next(tokens))(form)) as endpoint:
        server = machine(endpoint.url)
        sent = await provider.authorization(server, caller)  # type: ignore[arg-type]
        assert await provider.authorization(server, caller) == sent  # type: ignore[arg-type]
        await provider.refused(server, caller, sent, 401, None)  # type: ignore[arg-type]
        assert await provider.authorization(server, caller) == "Bearer tok-2"  # type: ignore[arg-type]
    assert [f["grant_type"] for f in endpoint.forms] == ["client_credentials", "client_credentials"]


async def test_a_refused_machine_grant_is_not_asked_again_until_the_config_changes(ctx: OAuthContext) -> None:
    provider = TokenProvider(ctx)
    caller = UpstreamCaller("acme")
    with token_endpoint(refusing("invalid_client")) as endpoint:
        for _ in range(3):
            with pytest.raises(UpstreamAuthorizationError, match="invalid_client"):
                await provider.authorization(machine(endpoint.url), caller)  # type: ignore[arg-type]
        assert len(endpoint.requests) == 1
        endpoint.answer = issuing("tok")
        provider.machine.backoff_s = 0.0  # the back-off passed: one new request
        assert await provider.authorization(machine(endpoint.url), caller) == "Bearer tok"  # type: ignore[arg-type]
    assert len(endpoint.requests) == 2
