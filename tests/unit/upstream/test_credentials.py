"""The one place an upstream request's headers are resolved: static servers keep exactly their headers
(no OAuth provider consulted), OAuth servers add the provider's Authorization for the current caller,
and an OAuth server in a process without a provider fails clearly instead of calling unauthenticated."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller, calling_as
from foldgate.upstream.credentials import credential_identity, resolve_headers, split_authorization


class Recording:
    """An UpstreamAuth that answers a token naming the caller and records who asked."""

    def __init__(self) -> None:
        self.asked: list[UpstreamCaller | None] = []

    async def authorization(self, server: ServerConfig, caller: UpstreamCaller | None) -> str | None:
        self.asked.append(caller)
        return f"Bearer for-{caller.subject if caller else 'nobody'}"

    async def refused(self, *args: Any) -> None:
        raise AssertionError("not used here")


def server(auth: dict[str, Any] | None = None) -> ServerConfig:
    entry: dict[str, Any] = {"name": "up", "url": "https://mcp.example.com/mcp", "headers": {"x-k": "v"}}
    if auth:
        entry["auth"] = auth
    return parse_tenant_config({"servers": [entry]}).servers[0]


async def test_static_servers_keep_their_headers_and_never_ask_the_provider() -> None:
    auth = Recording()
    static = server()
    assert await resolve_headers(static, static.headers, auth) == {"x-k": "v"}
    assert auth.asked == []


async def test_oauth_servers_get_the_current_callers_token() -> None:
    auth = Recording()
    oauth = server({"kind": "per_user"})
    with calling_as("acme", "user-7"):
        headers = await resolve_headers(oauth, oauth.headers, auth)
    assert headers == {"x-k": "v", "authorization": "Bearer for-user-7"}
    assert auth.asked == [UpstreamCaller("acme", "user-7")]


async def test_an_oauth_server_without_a_provider_is_refused() -> None:
    oauth = server({"kind": "oauth"})
    with pytest.raises(UpstreamError, match="not available in this process"):
        await resolve_headers(oauth, oauth.headers, None)


async def test_an_oauth_sessions_identity_is_whose_grant_it_uses_never_the_token() -> None:
    """Sessions are pooled by (auth kind, tenant, subject): a refreshed token keeps its session, a shared
    grant is one session for every agent of the tenant, a per-user grant one per person."""
    shared, per_user = server({"kind": "oauth"}), server({"kind": "per_user"})
    with calling_as("acme", "user-7"):
        assert credential_identity(shared) == ("oauth", "acme", SHARED_SUBJECT)
        assert credential_identity(per_user) == ("per_user", "acme", "user-7")
        assert credential_identity(server()) == ()
    with calling_as("acme", "user-8"):
        assert credential_identity(shared) == ("oauth", "acme", SHARED_SUBJECT)
        assert credential_identity(per_user) == ("per_user", "acme", "user-8")
    with calling_as("other", "user-7"):
        assert credential_identity(shared) == ("oauth", "other", SHARED_SUBJECT)
    headers = {"x-k": "v", "authorization": "Bearer abc"}
    assert split_authorization(shared, headers) == "Bearer abc"
    assert headers == {"x-k": "v"}
    # A static server's own Authorization header is one of its identifying headers: it stays.
    static = {"authorization": "Bearer static"}
    assert split_authorization(server(), static) is None
    assert static == {"authorization": "Bearer static"}


def test_exchange_kinds_pool_per_person_with_an_inbound_subject_and_per_tenant_otherwise() -> None:
    idp = {"token_url": "https://idp.example.com/token"}
    inbound = server({"kind": "id_jag", "idp": idp, "client_id": "c", "client_secret_secret": "/s"})
    configured = server({"kind": "token_exchange", "token_url": "https://as.example.com/token",
                         "subject_token": {"secret": "/fg/t"}})  # fmt: skip
    with calling_as("acme", "user-7"):
        assert credential_identity(inbound) == ("id_jag", "acme", "user-7")
        assert credential_identity(configured) == ("token_exchange", "acme", SHARED_SUBJECT)
